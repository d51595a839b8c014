"""Where tokrag reads data and keeps its caches.

* Data folder (``TOKRAG_DATA_DIR``): a folder laid out like ``../shared/data`` in the repository
  (``nq_open/``, ``nq_open_oracle/``, ``wiki_vital_summaries/``, ``dpr_wiki_sample1k/``,
  ``webquestions/``). Tests and CI point it at ``../shared/data``.
* Cache folder (``TOKRAG_CACHE_DIR``, default ``~/.cache/tokrag``): indexes, TREC run cache, converted
  model weights. Everything in it is keyed by a fingerprint and can be deleted at any time.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

DATA_ENV = "TOKRAG_DATA_DIR"
CACHE_ENV = "TOKRAG_CACHE_DIR"


def data_dir(explicit: str | os.PathLike | None = None, *, required: bool = True) -> Path | None:
    """Resolve the data folder: ``explicit`` if given, else ``$TOKRAG_DATA_DIR``.

    Relative paths are resolved against the current working directory *now*, so a later ``chdir``
    cannot change their meaning.

    Raises:
        ConfigError: when the folder does not exist or is a file, or when none is set and ``required`` is true.
    """
    value = explicit if explicit not in (None, "") else os.environ.get(DATA_ENV)
    if value in (None, ""):
        if required:
            raise ConfigError(
                f"no data folder given: set {DATA_ENV}=/path/to/data (a folder laid out like the "
                "repository's ../shared/data), or pass --data-dir DIR (tokrag retrieve/index/analyze/calibrate) or data_dir=... (Python; "
                "lm-eval task metadata: --metadata '{\"data_dir\": ...}')"
            )
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        source = "data_dir argument" if explicit not in (None, "") else f"${DATA_ENV}"
        what = f"{path} is a file, not a folder" if path.exists() else f"folder {path} does not exist"
        raise ConfigError(
            f"{source} = {value!r}: {what}; point it at a folder laid out like the "
            "repository's ../shared/data (nq_open/, nq_open_oracle/, wiki_vital_summaries/, ...), or unset it "
            "to load the data sets from the hub"
        )
    return path


def cache_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Resolve (and create) the cache folder: ``explicit``, ``$TOKRAG_CACHE_DIR`` or ``~/.cache/tokrag``."""
    value = explicit if explicit not in (None, "") else os.environ.get(CACHE_ENV)
    path = Path(value).expanduser() if value else Path.home() / ".cache" / "tokrag"
    path = path.resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


HUB_TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})
"""The values of ``HF_HUB_OFFLINE`` that mean offline, as huggingface_hub reads it (``constants.ENV_VARS_TRUE_VALUES``,
any case); anything else (``0``, ``false``, ``no``, ``off``, unset) is online."""


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` says offline, read as huggingface_hub and datasets read it (:data:`HUB_TRUE_VALUES`):
    the one reading of the project (the run-cache and encoder lookups, the pre-load checks, the model loader)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in HUB_TRUE_VALUES
