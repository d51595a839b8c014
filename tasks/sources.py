"""Question sets of the Tok-RAG paper's task families, from the hub or a local folder with the hub's schema.

Every family is read the same way (:func:`hub_rows`): task metadata ``hub_id`` may be a hub id (the default
below, or another: a mirror) or a local folder/file. A ``hub_id`` other than the family's default is the user's
explicit choice and is read as given (:func:`local_copy`). The default reads a folder named like the hub dataset inside
the data folder (``--metadata '{"data_dir": ...}'`` or ``$TOKRAG_DATA_DIR``, e.g. ``<data>/trivia_qa``) when
there. A hub id with no such copy comes from the hub (offline
(``HF_HUB_OFFLINE=1``): the ``datasets`` cache, else the split's files in the hub cache's snapshot, where its
README.md's ``configs:`` metadata puts them, else in a local folder's layout). A local
folder holds the hub's files in the hub's layout, ``<folder>/<config>/<split>*.{parquet,jsonl,json,tsv,csv}`` or
``<folder>/<split>*.…`` (JSONL rows exactly as the hub's rows; ``.tsv``/``.csv`` as the hub reads them, e.g. PopQA's
only file ``test.tsv``), so a ``datasets`` export or a hand-written fixture of a few rows both work offline; a folder
whose README.md ``configs:`` metadata declares the config (``hf download <repo> --repo-type dataset --local-dir``) is
read where the card puts the split's files, as the hub cache's snapshot is. A data
set with several configs (:data:`SEVERAL_CONFIGS`: TriviaQA, KILT, WikiText) needs the ``<config>/`` folder: a flat
``<folder>/<split>*`` would be read as whichever config a task asks for.

The families (:data:`FAMILIES`), their hub split and what becomes a QA row ``{qid, question, answers}``:

========== =============================== ============== ===========================================================
family     hub id (config)                 split (size)   question / gold answers
========== =============================== ============== ===========================================================
triviaqa   mandarjoshi/trivia_qa           validation     ``question``; ``answer.value`` + every ``answer.aliases``
           (unfiltered.nocontext)          (11,313)       (the open-domain TriviaQA test set of DPR and Pyserini)
squad_open rajpurkar/squad (plain_text)    validation     ``question`` (no context: open-domain); distinct
                                           (10,570)       ``answers.text``
popqa      akariasai/PopQA                 test (14,267)  ``question``; ``possible_answers`` (a JSON list)
kilt_trex  facebook/kilt_tasks (trex)      validation     ``input`` = "subject [SEP] relation" rendered as "What is
                                           (5,000)        the <relation> of <subject>?"; distinct ``output[].answer``
kilt_zsre  facebook/kilt_tasks             validation     the first ``meta.template_questions`` (else as T-REx);
           (structured_zeroshot)           (3,724)        distinct ``output[].answer``
kilt_eli5  facebook/kilt_tasks (eli5)      validation     ``input`` (the question); references ``output[].answer``
                                           (1,507)
kilt_wow   facebook/kilt_tasks (wow)       validation     ``input`` (the dialogue so far, turns separated by newlines;
                                           (3,054)        retrieval query: its first and last two turns); references
                                                          ``output[].answer`` (the next turn)
========== =============================== ============== ===========================================================

Rows keep the hub's id as ``qid`` (whitespace replaced by ``_``) and add ``gold_docids: []`` (none of these
sets names passages of the DPR Wikipedia). Long-form rows (ELI5, WoW) carry ``answers`` = the references.
TriviaQA's ``rc.nocontext`` validation split (17,944 rows) is not used: it joins the web and Wikipedia dev files, which
share about 6.6k of their 11,313 questions, so a question_id repeats (refused as a duplicate id).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError, DataError, OfflineError

_WS = re.compile(r"\s+")
log = logging.getLogger(__name__)
_WARNED_HIDDEN: set[tuple[str, tuple[str, ...]]] = set()  # (split folder, hidden names): once per process (the
# pre-load check, the provenance record and the build each find a copy's files)


# ----------------------------------------------------------------------------------------------- reading
SEVERAL_CONFIGS = {"mandarjoshi/trivia_qa": "trivia_qa", "facebook/kilt_tasks": "kilt_tasks",
                   "EleutherAI/wikitext_document_level": "wikitext_document_level"}
"""Hub data sets with several configs (hub id -> the local folder name): a local copy of one needs
``<folder>/<config>/``; the flat ``<folder>/<split>*`` is refused (it would serve every config the same rows)."""

_EXTENSIONS = r"(parquet|jsonl|json|tsv|csv)(\.gz)?"


def _local_files(root: Path, config: str | None, split: str, *, config_folder: bool = False) -> list[Path]:
    """The files of ``split`` in a local copy of a hub dataset (module docstring), or [] when none; with
    ``config_folder`` (a data set of :data:`SEVERAL_CONFIGS`) only those under ``<root>/<config>/``. Without it, the
    hub's layout of a one-config data set, ``<root>/data/<split>-00000-of-00001.parquet`` (WebQuestions'
    ``stanfordnlp/web_questions``), is read too, after ``<root>/<config>/`` and ``<root>/``. A ``<split>/`` folder's
    hidden data files (a leading ``.``: ``.extra.jsonl``) are skipped, as a leaderboard's run key
    (:func:`retrieval.io.tree_fingerprint`) skips them, with one WARNING naming them (once per process), worded as
    :func:`retrieval.load_corpus`'s for a corpus folder."""
    if root.is_file():
        return [root]
    pattern = re.compile(rf"^{re.escape(split)}([-_.].*)?\.{_EXTENSIONS}$")
    for folder in ([root / config] if config else []) + ([] if config_folder and config else [root, root / "data"]):
        if (folder / split).is_dir():
            folder = folder / split
            data = sorted(f for f in folder.iterdir() if f.is_file() and re.search(rf"\.{_EXTENSIONS}$", f.name))
            files = [f for f in data if not f.name.startswith(".")]  # not hidden files: a leaderboard's run key skips them
            _warn_hidden(f"split folder {folder}", tuple(f.name for f in data if f.name.startswith(".")))
        else:
            files = sorted(f for f in folder.iterdir() if f.is_file() and pattern.match(f.name)) if folder.is_dir() else []
        if files:
            return files
    return []


def _warn_hidden(where: str, hidden: tuple[str, ...]) -> None:
    """The one WARNING (once per process) that the hidden data files ``hidden`` of ``where`` are skipped."""
    if hidden and (where, hidden) not in _WARNED_HIDDEN:
        _WARNED_HIDDEN.add((where, hidden))
        them = "them" if len(hidden) > 1 else "it"
        log.warning("%s: skipping hidden file%s %s (a leading '.'; neither read nor keyed by a leaderboard); rename %s "
                    "without the '.' to read %s", where, "s" * (len(hidden) > 1), ", ".join(hidden), them, them)


def _configs_problem(configs: Any) -> str | None:
    """What a card's ``configs:`` gets wrong that ``datasets`` takes for granted without checking (its
    ``MetadataConfigs`` and ``data_files`` then fail with a bare TypeError or AttributeError): a config that is not a
    mapping, a ``config_name`` that is a list or mapping, a ``split`` that is not a string, a ``path`` list with an item
    that is not a string, a ``data_dir`` that is not a string. None when there is none of these (what ``datasets``
    checks, e.g. ``configs:`` not a list, it refuses with its own message)."""
    for c in configs if isinstance(configs, list) else []:
        if not isinstance(c, dict):
            return f"a config is {c!r}, not a mapping with a config_name"
        where = f"config {c.get('config_name')!r}"
        if isinstance(c.get("config_name"), (list, dict)):
            return f"{where}: config_name is a {type(c['config_name']).__name__}, not a name"
        if c.get("data_dir") is not None and not isinstance(c["data_dir"], str):
            return f"{where}: data_dir is {c['data_dir']!r}, not a folder"
        for item in c["data_files"] if isinstance(c.get("data_files"), list) else []:
            if isinstance(item, dict) and "split" in item and not isinstance(item["split"], str):
                return f"{where}: a data_files split is {item['split']!r}, not a name"
            path = item.get("path") if isinstance(item, dict) else None
            if isinstance(path, list) and not all(isinstance(q, str) for q in path):
                return (f"{where}: the path of data_files split {item.get('split')!r} is {path!r}, not a list of "
                        "patterns")
    return None


_CARD_ERRORS = (ValueError, TypeError, AttributeError, KeyError, UnicodeDecodeError)
"""What ``datasets``' and ``huggingface_hub``'s card parsers raise on a malformed card (ValueError: their refusals; the
others: a form they do not check, e.g. ``features:``); with the YAML parser's own error, :func:`_card_error`."""


def _card_error(readme: Path, exc: Exception) -> ConfigError:
    """The one line refusing ``readme``'s metadata for ``exc``: its message without ``datasets``' examples, cut
    between words."""
    import yaml

    text = " ".join(str(exc).split()).partition(" Examples of data_files in YAML:")[0]  # not its many examples
    text = text if isinstance(exc, (ValueError, yaml.YAMLError)) else f"{type(exc).__name__}: {text}"
    text = text if len(text) <= 300 else text[:300].rsplit(" ", 1)[0] + " ..."
    return ConfigError(f"{readme}: cannot read its configs metadata ({text})")


def _card_metadata(folder: Path) -> Any:
    """The ``configs:`` metadata of ``folder``'s README.md (a hub cache snapshot or a local copy) as ``datasets``
    reads it (``huggingface_hub.repocard.metadata_load``, ``datasets``' ``MetadataConfigs``: config name -> its
    parameters); None without a README.md, an empty one without ``configs:``. The one reader of a card's configs
    (:func:`_card_config`, :func:`card_configs`).

    Raises:
        ConfigError: the metadata cannot be parsed or is malformed (not YAML, ``configs:`` not a list of configs,
        :func:`_configs_problem`): :func:`_card_error`'s line.
    """
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    import yaml
    from datasets.utils.metadata import MetadataConfigs

    try:
        card = _card_yaml(str(readme), hashlib.sha256(readme.read_bytes()).hexdigest())
        problem = _configs_problem(card.get("configs"))
        if problem:
            raise ValueError(problem)
        return MetadataConfigs.from_dataset_card_data(card)
    except (*_CARD_ERRORS, yaml.YAMLError) as exc:
        raise _card_error(readme, exc) from None


@functools.lru_cache(maxsize=64)
def _card_yaml(readme: str, digest: str) -> dict:
    """The YAML metadata of the card ``readme`` (``huggingface_hub.repocard.metadata_load``; {} without any), parsed
    once per content (``digest``: the SHA-256 of its bytes) however often one read asks (:func:`card_configs`,
    :func:`_card_config`, :func:`_card_reason`); not to be changed by callers (``datasets``' ``MetadataConfigs``
    copies each config)."""
    from huggingface_hub.repocard import metadata_load

    return metadata_load(readme) or {}


def _card_config(snap: Path, config: str | None, *, local: bool = False,
                 offline_fix: str | None = None) -> tuple[str, Path, dict[str, list[str]]] | None:
    """The config of the hub cache snapshot's (``local``: a local copy's) ``README.md`` YAML ``configs:`` metadata
    (:func:`_card_metadata`) that ``datasets.load_dataset`` reads the data set with, parsed by its own parsers
    (``datasets``' ``MetadataConfigs``, ``sanitize_patterns``): the config ``config`` when the card declares it;
    without a config, the default one (named ``default``, marked ``default: true``, or the only one).
    ``(name, folder, patterns)``: the folder its patterns are relative to (the snapshot, or the config's ``data_dir``)
    and its ``data_files`` patterns per split (for a config with only a ``data_dir``, those ``datasets`` infers there;
    none when it holds no data file). None when the card declares no files for that config (no card, no ``configs:``,
    a config it does not declare, no default config among several when ``config`` is given, or one with neither
    ``data_files`` nor ``data_dir``).

    Raises:
        ConfigError: the card's metadata cannot be parsed or is malformed (not YAML, ``configs:`` not a list of
        configs, a ``data_files`` of another form, several default configs, :func:`_configs_problem`): one line,
        ``datasets``' or the YAML parser's own message without ``datasets``' examples, cut between words; without
        ``config``, a card declaring several configs, none of them the default (``datasets``: "Config name is
        missing"): a local copy is told to mark the config to read ``default: true``, a snapshot (a file of the hub
        cache, not to be edited) to choose one and ``offline_fix`` (default :data:`SNAPSHOT_FIX`).
    """
    configs = _card_metadata(snap)
    if configs is None:
        return None
    from datasets.data_files import EmptyDatasetError, get_data_patterns, sanitize_patterns

    readme = snap / "README.md"
    try:
        name = config if config in configs else None if config else configs.get_default_config_name()
        several = not config and name is None and len(configs) > 1  # datasets: "Config name is missing"
        params = configs.get(name, {}) if name else {}
        declared = params.get("data_files")
        patterns = sanitize_patterns(declared) if declared is not None else None
    except _CARD_ERRORS as exc:
        raise _card_error(readme, exc) from None
    if several:
        fix = ("mark the config to read default: true" if local else  # a snapshot's card is the hub cache's: not edited
               f"choose the config to read, then {offline_fix or SNAPSHOT_FIX}")
        raise ConfigError(f"{readme}: its configs metadata declares the configs {', '.join(map(repr, configs))} and none "
                          "is the default (named default or marked default: true), and the task names no config; as "
                          f"datasets.load_dataset refuses such a data set without a config name, {fix}")
    if patterns is None and not params.get("data_dir"):
        return None
    base = snap / params["data_dir"] if params.get("data_dir") else snap
    if patterns is None:
        try:
            patterns = {str(k): v for k, v in get_data_patterns(str(base)).items()}
        except EmptyDatasetError:  # no data files in data_dir
            patterns = {}
    return name, base, patterns


def card_configs(folder: Path) -> list[str]:
    """The configs ``folder``'s README.md YAML ``configs:`` metadata declares (:func:`_card_metadata`); [] without a
    card, without ``configs:``, or when the metadata cannot be read (reading the folder refuses that in its own line,
    :func:`_card_config`)."""
    try:
        configs = _card_metadata(Path(folder))
    except ConfigError:
        return []
    return [str(n) for n in configs or []]


def _card_files(snap: Path, config: str | None, split: str, *, local: bool = False, data_folder: str = "",
                offline_fix: str | None = None, hub_key: str = "hub_id") -> list[Path] | None:
    """The split's files as the ``README.md`` of a hub cache snapshot (``local``: of a local copy, e.g. a folder of
    ``hf download <repo> --repo-type dataset --local-dir <folder>``; ``data_folder``: the data folder's copy, ``found``
    there or ``named`` by its path, :func:`_remote_pattern`) declares them in its YAML ``configs:`` metadata (e.g.
    NQ-open's ``nq_open/validation-*``), read as ``datasets.load_dataset`` reads a hub data set or a data set folder:
    the config of :func:`_card_config` (``config`` when the card declares it; without one, the default config); its
    patterns of ``split``, resolved by ``datasets.data_files.resolve_pattern`` in the folder (or the config's
    ``data_dir``). Only files this module reads (``.parquet``, ``.jsonl``, ...); hidden ones (a leading ``.``, or in a
    hidden folder) that a pattern matches without naming them (``*.jsonl``) are skipped, as ``datasets`` skips them,
    with one WARNING naming them, as in a ``<split>/`` folder (:func:`_local_files`); one a pattern names
    (``.hidden/test.jsonl``, ``_x/.*.jsonl``) is read from a snapshot, as ``datasets`` reads it, and refused in a local
    copy. None when the card declares no files for that config (:func:`_card_config`): the folder is read in a local
    copy's layout. [] when the config declares no file of the split that is there (:func:`_card_reason` says why).

    Raises:
        ConfigError: the card's metadata cannot be parsed or is malformed, or declares several configs, none the
        default, and no ``config`` is asked for (:func:`_card_config`; for a snapshot the line advises
        ``offline_fix``); a pattern of the split is a URL (``hf://datasets/...``, ``https://...``): offline,
        ``datasets`` would refuse it with a bare ``OfflineModeIsEnabled``, and a local copy is read from its own files
        only (:func:`_remote_pattern`, its advice for a snapshot ``offline_fix`` when the caller reads a local copy
        otherwise than as hub_id); a file of the split outside the folder (``../``, an absolute path, a ``data_dir``
        outside it; not a symlink in it), which a leaderboard's run key, fingerprinting a local copy's folder, would
        not cover, and which is none of a snapshot's files; in a local copy, a hidden file a pattern of the split names
        (``datasets`` reads it, but a leaderboard's run key of the folder, :func:`retrieval.io.tree_fingerprint`,
        skips hidden files, so an edit of it would not give a new run).
    """
    card = _card_config(snap, config, local=local, offline_fix=offline_fix)
    if card is None:
        return None
    import fsspec
    from datasets.data_files import resolve_pattern
    from fsspec.core import split_protocol

    name, base, patterns = card
    remote = next((p for p in patterns.get(split, []) if split_protocol(p)[0] not in (None, "file", "local")), None)
    if remote is not None:
        raise ConfigError(_remote_pattern(snap, name, split, remote, local=local, data_folder=data_folder,
                                          offline_fix=offline_fix, hub_key=hub_key))
    readable = re.compile(rf"\.{_EXTENSIONS}$")

    def hidden(f: str) -> bool:  # a hidden file, or one in a hidden folder (datasets' rule)
        return any(part.startswith(".") and set(part) != {"."} for part in Path(os.path.relpath(f, base)).parts)

    files: dict[Path, None] = {}
    skipped: dict[str, None] = {}
    for pattern in patterns.get(split, []):
        try:
            found = resolve_pattern(pattern, str(base))  # datasets' own match (it drops unrequested hidden files)
        except FileNotFoundError:
            found = []
        away = next((f for f in found if readable.search(f) and not _inside(f, snap)), None)
        if away is not None:  # '../x' or an absolute path: read, but no run key covers it
            why = ("a local copy is read from its own files only (a leaderboard's run key fingerprints the folder, not "
                   "that file)" if local else "a snapshot is read from its own files only (that file is none of the "
                   "data set's files at the snapshot's commit)")
            raise ConfigError(f"{snap / 'README.md'}: config {name!r} declares split {split!r} as {pattern}"
                              f"{'' if base == snap else f' in its data_dir {os.path.relpath(base, snap)}'}, which "
                              f"reaches {os.path.normpath(away)}, outside {snap}; {why}: move the file into the folder "
                              "(a symlink there will do) and make the card's path relative to it")
        named = next((f for f in found if hidden(f) and readable.search(f)), None)  # the pattern asks for it
        if named is not None and local:  # datasets reads it; a leaderboard's run key of a copy skips it
            raise ConfigError(f"{snap / 'README.md'}: config {name!r} declares split {split!r} as {pattern}, which "
                              f"names the hidden file {os.path.relpath(named, base)} (a leading '.'); datasets reads "
                              "it, but a leaderboard's run key, fingerprinting the folder, skips hidden files: rename "
                              "it without the '.', and the card's path with it")
        files.update((Path(f), None) for f in found if readable.search(f))
        every = fsspec.filesystem("file").glob(str(base / pattern))  # the same glob, hidden files kept: to name them
        skipped.update((os.path.relpath(f, base), None) for f in every
                       if hidden(f) and readable.search(f) and os.path.isfile(f) and f not in found)
    _warn_hidden(f"split {split!r} of {snap / 'README.md'}'s config {name!r}", tuple(skipped))
    return list(files)


_FORMATS = {"parquet": "Parquet", "jsonl": "JSON", "json": "JSON", "csv": "CSV", "tsv": "TSV"}
"""The builder ``datasets`` reads a data file with, by extension (``datasets.packaged_modules``' table: ``.json`` and
``.jsonl`` are one, ``.tsv`` is csv with another separator)."""


def _one_format(folder: Path, split: str, files: list[Path]) -> None:
    """Refuse a split whose files are of several formats (:data:`_FORMATS`), e.g. ``test.csv`` beside
    ``test-1.jsonl``: ``datasets`` reads a data set's files with one builder and its settings, so it fails on such a
    split (a README.md card's files) or reads only its most common format (a folder's layout; a ``.tsv`` beside as many
    ``.csv`` files is read as CSV), where this module would read every file in its own format.

    Raises:
        ConfigError: one line naming the folder, the split, two of its formats and a file of each.
    """
    first: dict[str, Path] = {}
    for f in files:
        ext = re.search(rf"\.{_EXTENSIONS}$", f.name)
        first.setdefault(_FORMATS[ext.group(1)] if ext else f.suffix, f)
    if len(first) > 1:
        (a, fa), (b, fb) = list(first.items())[:2]
        raise ConfigError(f"{folder}: split {split!r} mixes {a} and {b} files ({os.path.relpath(fa, folder)}, "
                          f"{os.path.relpath(fb, folder)}); datasets.load_dataset reads all of a data set's files as "
                          "one format, so it fails on such a split or reads it otherwise (only its most common format, "
                          "or a .tsv as a .csv): keep the split in one format")


def _inside(path: str, folder: Path) -> bool:
    """Whether ``path``, as globbed (``..`` resolved, symlinks not), lies in ``folder``."""
    top = os.path.abspath(folder)
    return os.path.commonpath([top, os.path.abspath(os.path.join(top, path))]) == top


SNAPSHOT_FIX = "download the split's files into a folder and give its path as hub_id"
"""How a hub data set's split is given without the hub, for a task that reads a local copy as ``hub_id`` (the end of
:func:`_remote_pattern`'s line for a snapshot); a caller that reads its data otherwise passes its own
(``offline_fix``), e.g. :mod:`tasks.byo`'s ``questions`` file."""


def _remote_pattern(folder: Path, name: str, split: str, pattern: str, *, local: bool, data_folder: str = "",
                    offline_fix: str | None = None, hub_key: str = "hub_id") -> str:
    """The one line refusing a ``configs:`` pattern of ``split`` that is a URL (:func:`_card_files`): the card, the
    pattern and what to do instead, for a hub cache snapshot (read offline only: run once online, or ``offline_fix``,
    default :data:`SNAPSHOT_FIX`) or a local copy (``local``: download the file into it, or read the hub instead: a
    copy given as hub_id by giving the hub id (as ``hub_key``: ``questions`` for :mod:`tasks.byo`'s folder); the data
    folder's copy (``data_folder``: ``found`` there, or ``named`` by its path as hub_id), which the hub id finds again,
    by moving it out of the data folder)."""
    head = f"{folder / 'README.md'}: config {name!r} declares split {split!r} as {pattern}, a remote file, "
    if local:
        other = (f"give the data set's hub id as {hub_key}" if not data_folder else
                 "move the folder out of the data folder, or rename it, to read the hub (offline: its cache) instead"
                 + (", with the data set's hub id as hub_id" if data_folder == "named" else ""))
        return (head + f"which a local copy is not read from; download it into {folder} and make the card's path "
                f"relative to the folder, or {other}")
    return (head + f"which is not read offline (HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')}); run once online "
            f"(HF_HUB_OFFLINE unset: datasets reads and caches the data set), or {offline_fix or SNAPSHOT_FIX}")


def _read_table(f: Path, text_columns: tuple[str, ...] = ()) -> list[dict]:
    """The rows of a ``.tsv``/``.csv`` file as the hub's ``datasets`` csv builder reads it (pandas with that builder's
    settings; a ``.tsv`` is tab-separated, as ``datasets`` infers from the name): columns typed by pandas, but
    ``text_columns`` (those the file has) read as written (an id ``007`` stays ``"007"``, where pandas made it the
    integer 7, or the float 7.0 in a column with an empty cell), an empty cell None. With ``text_columns`` only an
    empty cell is None, in every column: pandas also reads ``NA``, ``N/A``, ``null``, ``None``, ``nan`` (and more) as
    missing, so an id ``NA`` silently got the automatic id and a question ``None`` was "null".

    Raises:
        DataError: a file pandas cannot read (the file named); a first row with more fields than the header, which
        pandas reads as a row index, so that every column was read one place off (``q1,who,["a"],["b"]`` under
        ``id,question,answers`` gave the id ``who`` and the question ``["a"]``) and the index was dropped; a header
        naming a column twice (:func:`_check_header_names`).
    """
    import pandas as pd
    import pyarrow as pa
    from datasets.packaged_modules.csv.csv import CsvConfig

    from retrieval.io import open_data

    tsv = f.name.removesuffix(".gz").endswith(".tsv")
    with open_data(f) as fh:  # a gzip file decompressed, whatever its name; a truncated one is one DataError line
        try:
            kwargs = {k: v for k, v in CsvConfig(sep="\t" if tsv else ",").pd_read_csv_kwargs.items() if k != "chunksize"}
            if text_columns:  # pandas ignores the names the file lacks; only an empty cell is missing, not "NA"
                kwargs.update(dtype={c: str for c in text_columns}, keep_default_na=False, na_values=[""])
            df = pd.read_csv(fh, **kwargs)  # the builder reads chunks of this size with these settings: one frame here
        except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError and EmptyDataError are ValueErrors
            raise DataError(f"{f}: not a readable {'TSV' if tsv else 'CSV'} file ({' '.join(str(exc).split())})") from None
    _check_header_names(f, df.columns, kwargs)
    if not isinstance(df.index, pd.RangeIndex):  # pandas took the first column(s) as the rows' index
        raise DataError(f"{f}: its first row has more fields than its header ({len(df.columns)}: "
                        f"{', '.join(map(str, df.columns))}), so every column would be read one place off (the first "
                        f"field as no column, the second as {df.columns[0]!r}); give the header a name for each field, or "
                        f"remove the extra field{' (a tab inside a field?)' if tsv else ' (a comma in an unquoted field?)'}")
    return pa.Table.from_pandas(df, preserve_index=False).to_pylist()


def _check_header_names(f: Path, columns: Any, kwargs: dict) -> None:
    """Refuse a ``.csv``/``.tsv`` file ``f`` whose header names a column twice: pandas (and so ``datasets``) reads the
    second as ``name.1``, a column no reader asks for, so ``id,question,answers,answers`` silently kept the first
    ``answers`` cell only, where a JSON row giving a key twice is refused (:func:`retrieval.io.unique_keys`). ``columns``:
    the names pandas gave (``df.columns``); the header is read again, as written, only when one of them looks renamed
    (``name.N`` beside ``name``), so the check costs nothing otherwise. ``kwargs``: the ``read_csv`` settings used.

    Raises:
        DataError: one line naming the file, the column and its two positions (1-based).
    """
    names = {str(c) for c in columns}
    if not any(m and m.group(1) in names for m in (re.fullmatch(r"(.*)\.\d+", n) for n in names)):
        return
    import pandas as pd

    from retrieval.io import open_data

    with open_data(f) as fh:  # the header row as written (no renaming: it is read as a row, not as the header)
        head = pd.read_csv(fh, **{**kwargs, "header": None, "nrows": 1, "dtype": str, "keep_default_na": False,
                                  "na_values": [""]})
    written = ["" if v is None or v != v else str(v) for v in head.iloc[0].tolist()] if len(head) else []
    first: dict[str, int] = {}
    for i, n in enumerate(written, start=1):
        if n in first:
            raise DataError(f"{f}: column {n!r} is given twice in its header (columns {first[n]} and {i}; pandas and "
                            f"datasets read the second as {n + '.1'!r}, which no reader asks for, so its cells would be "
                            "ignored, silently); keep the one you mean and remove the other")
        first[n] = i


def _read_local(files: list[Path]) -> list[dict]:
    """The rows of a local copy's files, each read as ``datasets`` reads it; a gzip file is decompressed (``.json.gz``
    too: it was read undecompressed, so a sound one was refused as "not valid JSON"; also under a plain name, told by its
    content, as ``datasets`` tells it: :func:`retrieval.io.open_data`), and a truncated or corrupt one is one
    :class:`DataError` line naming it (:func:`retrieval.io.gzip_errors`), as a Parquet file that cannot be read is
    (``datasets`` does not decompress a ``.parquet.gz`` either).

    Raises:
        DataError: a file that cannot be read as its format (the file named); a JSON or JSONL row holding a lone
        surrogate (a JSON escape ``\\udfff`` without its pair, which ``datasets`` cannot store either:
        :func:`retrieval.io.check_unicode`; ``file:line`` / ``file row i`` named); a key given twice in one JSON
        object (``file:line`` and the key: JSON would keep its last value, silently)."""
    from retrieval.io import check_unicode, loads_unique, open_data, read_jsonl

    rows: list[dict] = []
    for f in files:
        name = f.name.removesuffix(".gz")
        if name.endswith(".parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            try:
                rows.extend(pq.read_table(f).to_pylist())
            except (pa.ArrowException, OSError) as exc:
                fix = ("datasets does not read a gzipped Parquet file either: decompress it (gunzip)" if name != f.name
                       else "download or write it again")
                raise DataError(f"{f}: not a readable Parquet file ({' '.join(str(exc).split())}); {fix}") from None
        elif name.endswith((".tsv", ".csv")):
            rows.extend(_read_table(f))
        elif name.endswith(".json") and not _is_jsonl(f):
            try:
                with open_data(f) as fh:
                    text = fh.read()
                data = loads_unique(text.decode("utf-8"), str(f))  # a key twice: one line, not its last value
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise DataError(f"{f}: not valid JSON ({exc})") from None
            if not isinstance(data, list):
                raise DataError(f"{f}: expected a JSON array of rows (or JSON lines)")
            for i, row in enumerate(data):  # a JSON "\udfff" escape without its pair: pyarrow refused it later
                check_unicode(row, f"{f} row {i}")
            rows.extend(data)
        else:
            for lineno, obj in read_jsonl(f):
                check_unicode(obj, f"{f}:{lineno}")
                rows.append(obj)
    return rows


def _is_jsonl(path: Path) -> bool:
    """Whether a ``.json`` (gzip: decompressed, :func:`retrieval.io.open_data`) file's first byte starts an object:
    JSON Lines."""
    from retrieval.io import open_data

    with open_data(path) as fh:
        head = fh.read(1).strip()
    return head == b"{"


def _several_configs(hub_id: str, local_name: str | None) -> bool:
    """Whether the data set (its hub id, else the folder name its family gives) has several configs."""
    return str(hub_id) in SEVERAL_CONFIGS or (local_name is not None and local_name in SEVERAL_CONFIGS.values())


def own_hub_id(local_name: str | None) -> str | None:
    """The hub id whose copy the data folder holds as ``<data folder>/<local_name>``: the default hub id of the tasks
    that read it (a family's of :data:`FAMILIES`, WikiText-103's :data:`tasks.wikitext.HUB_ID`); None for another
    name. Whether a given hub id is that one is :func:`tasks.data.explicit_hub_id`'s rule."""
    from .wikitext import HUB_ID, LOCAL_NAME

    return {**{f["local"]: f["hub_id"] for f in FAMILIES.values()}, LOCAL_NAME: HUB_ID}.get(str(local_name))


def local_copy(hub_id: str, config: str | None, split: str, *, data_dir: Any = None,
               local_name: str | None = None, hub_key: str = "hub_id") -> tuple[Path, list[Path]] | None:
    """The local copy :func:`hub_rows` reads a split from, ``(folder, files)``: when ``hub_id`` is the data set's own
    (:func:`own_hub_id` of ``local_name``: the task's default, in any case, as the Hub resolves it),
    ``<data folder>/<local_name>`` when there (also over a folder of the default's name in the working directory, as
    :func:`tasks.data.load_nq_open` reads its data folder first); else ``hub_id`` when it names an existing path; None
    when the split comes from the hub.
    Another hub id (a mirror) is the user's explicit choice: read from the hub (offline its caches), never replaced by
    the data folder's copy of the default one (the one rule: :func:`tasks.data.explicit_hub_id`). A folder whose
    README.md's ``configs:`` metadata declares the config (a folder of ``hf download <repo> --repo-type dataset
    --local-dir <folder>``; without a config, the card's default one) is read where the card puts the split's files, as
    a hub cache snapshot is (:func:`_card_files`); any other folder in the hub's layout (:func:`_local_files`), a folder
    copy of a data set with several configs (:data:`SEVERAL_CONFIGS`) only from its ``<config>/`` folder. ``hub_key``:
    the task argument its line tells to give the hub id as instead of the copy (a URL pattern, :func:`_remote_pattern`;
    ``questions`` for :mod:`tasks.byo`'s folder).

    Raises:
        ConfigError: the copy has no files for the split (for a card's config: the splits it declares, or the split's
        patterns that match no file, :func:`_card_reason`; for a data set with several configs: none under
        ``<config>/``, the flat layout named when it is what the folder holds; for a config a README.md card does not
        declare, the configs it declares, :func:`card_configs`); the folder's README.md metadata cannot
        be parsed or is malformed (:func:`_card_config`), or declares the split as a URL or names a hidden file
        (:func:`_card_files`); the split's files are of several formats (:func:`_one_format`).
    """
    from .data import explicit_hub_id, resolve_data_dir

    def own() -> Path | None:  # the data folder's copy
        root = resolve_data_dir(data_dir)
        return root / local_name if root is not None and local_name and (root / local_name).exists() else None

    c: Path | None = None
    in_data = ""  # the data folder's copy (found there, or named by its path), which the hub id finds again
    default = own_hub_id(local_name)
    if default is not None and not explicit_hub_id(hub_id, default) and (c := own()) is not None:
        in_data = "found"  # the default hub id (in any case): the data folder's copy first, over a folder of its name
    elif Path(str(hub_id)).expanduser().exists():
        c = Path(str(hub_id)).expanduser().resolve()
        try:
            in_data = "named" if (own() or Path()).resolve() == c else ""  # the hub id finds it too (advice)
        except ConfigError:  # a data_dir that is no folder: not read for a copy named by its path
            in_data = ""
    if c is None:
        return None
    several = bool(config) and _several_configs(hub_id, local_name)
    files = (None if c.is_file() else  # a card's configs: as datasets reads it
             _card_files(c, config, split, local=True, data_folder=in_data, hub_key=hub_key))
    if files == []:  # the card declares the config, not the split's files
        raise ConfigError(f"{c}: no files for split {split!r}{f' of config {config!r}' if config else ''} "
                          f"({_card_reason(c, config, split, local=True)}); add the split's files to the card's configs:")
    files = files or _local_files(c, config, split, config_folder=several)
    _one_format(c, split, files)
    if not files:
        flat = several and bool(_local_files(c, None, split))
        old = config == "unfiltered.nocontext" and (c / "rc.nocontext").is_dir()  # a copy of triviaqa tasks < 4.0
        declared = [] if c.is_file() or not config else card_configs(c)  # a card without the task's config
        card = (f"; its README.md configs: metadata declares only the config{'s' * (len(declared) > 1)} "
                f"{', '.join(map(repr, declared))}, so it is read in the hub's layout (datasets.load_dataset would "
                f"refuse config {config!r})" if declared and config not in declared else "")
        raise ConfigError(
            f"{c}: no files for split {split!r}{f' (config {config!r}{card})' if config else ''}"
            + (f"; its {split!r} files lie directly in {c}, but this data set has several configs, each in its own "
               f"folder: put this config's files in {c}/{config}/ (e.g. {c}/{config}/{split}.jsonl)" if flat else
               f"; it holds rc.nocontext/: TriviaQA tasks 4.0 read unfiltered.nocontext (rc.nocontext repeats "
               f"questions): download that config into {c}/{config}/" if old else
               f"; {f'declare config {config!r} in the card, or ' if card else ''}lay it out like the hub: "
               f"{c}/{config + '/' if config else ''}{split}.jsonl (or -*.parquet, .tsv, .csv)")
        )
    return c, files


def offline_message(hub_id: str, config: str | None, split: str, reason: str, local_name: str | None = None) -> str:
    """The one line that says a hub split cannot be read (``reason``) and how to give a local copy instead: the
    error of :func:`hub_rows` and of the pre-run check :func:`check_hub_source`. The data folder's ``local_name``
    folder is offered for the data set's own hub id only (:func:`own_hub_id`); for another (a mirror, which
    :func:`local_copy` never replaces by it; :func:`tasks.data.explicit_hub_id`) the line says the folder is read only
    for the default hub id."""
    from .data import explicit_hub_id

    own = own_hub_id(local_name) if local_name else None
    mirror = own is not None and explicit_hub_id(hub_id, own)
    return (
        f"cannot load the hub dataset {hub_id!r}{f' ({config})' if config else ''}, split {split!r}: {reason}. "
        "Offline, give a local copy in the hub's layout: "
        + (f"a {local_name!r} folder in the data folder ($TOKRAG_DATA_DIR or metadata data_dir), or "
           if local_name and not mirror else "")
        + f"its path as hub_id: with lm_eval / tokrag eval, --metadata '{{\"hub_id\": \"/path/to/{local_name or 'folder'}\"}}'; "
        f"in a leaderboard (no --metadata), the task YAML's metadata: {{hub_id: /path/to/{local_name or 'folder'}}}"
        + (f" (the data folder's {local_name!r} folder is read only for the hub id {own})" if mirror else "")
    )


def hub_cache_folders(hub_id: str) -> list[Path]:
    """Where a hub data set read before lies on this machine: the hub cache's ``datasets--<owner>--<name>`` and the
    ``datasets`` cache's ``<owner>___<name in snake case>`` (as ``datasets.load`` names it)."""
    import datasets.config
    import huggingface_hub.constants
    from datasets.naming import camelcase_to_snakecase

    name = hub_id.rpartition("/")[2]
    return [Path(huggingface_hub.constants.HF_HUB_CACHE) / f"datasets--{hub_id.replace('/', '--')}",
            Path(datasets.config.HF_DATASETS_CACHE) / "___".join([*hub_id.split("/")[:-1], camelcase_to_snakecase(name)])]


def _cached_configs(folder: Path, *, snapshots: bool) -> set[str]:
    """The config folders of a cached data set: ``<datasets cache>/<owner>___<name>/<config>/`` (``snapshots``
    False), or the folders in the hub cache's ``snapshots/<revision>/`` (True)."""
    parents = sorted((folder / "snapshots").glob("*")) if snapshots else [folder]
    return {d.name for p in parents if p.is_dir() for d in p.iterdir() if d.is_dir()}


def _hub_snapshot(hub_id: str) -> Path | None:
    """The hub cache's snapshot of the data set ``huggingface_hub.snapshot_download(..., local_files_only=True)``
    gives (``refs/main``); None when there is none or ``hub_id`` is not a hub id."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(str(hub_id), repo_type="dataset", local_files_only=True))
    except (LocalEntryNotFoundError, OSError, ValueError):  # no snapshot of refs/main, or not a hub id
        return None


def hub_snapshot_files(hub_id: str, config: str | None, split: str, *, local_name: str | None = None,
                       offline_fix: str | None = None) -> tuple[Path, list[Path]] | None:
    """The split's files in the hub cache's snapshot of the data set (:func:`_hub_snapshot`), ``(snapshot, files)``.
    When its README.md's ``configs:`` metadata declares the config (:func:`_card_files`: the config asked for when the
    card declares it; without a config, the card's default one), only the files that config declares for the split;
    else (no card, no ``configs:``, a config the card does not declare, no default config) in a local copy's layout
    (:func:`_local_files`; a data set of :data:`SEVERAL_CONFIGS` only from ``<config>/``). None when there is no
    snapshot or it holds no file of the split so read (:func:`_card_refusal` says why when the card is the reason).
    Offline, ``datasets.load_dataset`` reads only the ``datasets`` cache, never these files (datasets 5.2), so
    :func:`hub_rows` reads them itself.

    Raises:
        ConfigError: the snapshot's README.md metadata cannot be parsed or is malformed (:func:`_card_config`),
        declares several configs, none the default, without a ``config`` (its line advises ``offline_fix``), or
        declares the split as a URL (:func:`_card_files`; ``offline_fix``: what its line advises besides running
        online, default :data:`SNAPSHOT_FIX`); the split's files are of several formats (:func:`_one_format`).
    """
    snap = _hub_snapshot(hub_id)
    if snap is None:
        return None
    files = _card_files(snap, config, split, offline_fix=offline_fix)
    if files is None:  # the card declares no files for the config: the layout of a local copy
        files = _local_files(snap, config, split, config_folder=bool(config) and _several_configs(hub_id, local_name))
    _one_format(snap, split, files or [])
    return (snap, files) if files else None


def _card_refusal(hub_id: str, config: str | None, split: str) -> str | None:
    """Why the hub cache snapshot's README.md gives no file of ``split`` (:func:`_card_files` is []), for the refusal's
    line: a ``config`` the card does not declare (nor the snapshot's layout holds), with the configs it declares, as
    ``datasets`` refuses it ("BuilderConfig ... not found. Available: ..."), else :func:`_card_reason`. None when the
    card declares no files for the config (the snapshot is read in a local copy's layout) or there is no snapshot."""
    snap = _hub_snapshot(hub_id)
    if snap is None:
        return None
    declared = card_configs(snap)
    if config and declared and config not in declared:
        return (f"the snapshot's README.md configs: metadata declares only the config{'s' * (len(declared) > 1)} "
                f"{', '.join(map(repr, declared))}; datasets.load_dataset refuses config {config!r}")
    return _card_reason(snap, config, split)


def _card_reason(snap: Path, config: str | None, split: str, *, local: bool = False) -> str | None:
    """Why the README.md of the hub cache snapshot ``snap`` (``local``: of a local copy) gives no file of ``split``
    (:func:`_card_files` is []): the splits its ``configs:`` metadata declares for the config when ``split`` is not one
    of them, else the split's patterns, which match no data file there. None when the card declares no files for the
    config."""
    card = _card_config(snap, config, local=local)
    if card is None:
        return None
    name, base, patterns = card
    of = f"config {name!r}" + (f" (data_dir {os.path.relpath(base, snap)})" if base != snap else "")
    if split in patterns:
        shown = patterns[split][:3]
        what = (f"declares split {split!r} of {of} as {', '.join(map(str, shown))}"
                + (f" and {len(patterns[split]) - 3} more patterns" if len(patterns[split]) > 3 else "")
                + f", which match{'es' * (len(patterns[split]) == 1)} no .parquet, .jsonl, .json, .tsv or .csv file "
                "there")
    else:
        what = (f"declares for {of} only the split{'s' * (len(patterns) > 1)} {', '.join(patterns)}" if patterns else
                f"declares {of}, which holds no data file")
    whose, read = ("its", "a data set folder") if local else ("the snapshot's", "a hub data set")
    return (f"{whose} README.md configs: metadata {what}; as datasets reads {read}, files outside the card's patterns "
            "are not read")


def check_hub_source(hub_id: str, config: str | None, split: str, *, data_dir: Any = None,
                     local_name: str | None = None) -> None:
    """Before the model loads: refuse a split :func:`hub_rows` could not read, without reading it. Passes when a local
    copy has the split's files (:func:`local_copy`), when the hub may be asked (``HF_HUB_OFFLINE`` unset,
    :func:`retrieval.paths.hub_offline`), when the hub cache's snapshot holds the split's files
    (:func:`hub_snapshot_files`) or when the ``datasets`` cache holds the data set (:func:`hub_cache_folders`; its
    files are left to ``datasets``) and, for a ``config``, its ``<config>/`` folder (a cached ``rc.nocontext`` does
    not serve ``unfiltered.nocontext``). A hub cache folder without the split's files does not pass: offline,
    ``datasets`` does not read the hub cache.

    Raises:
        ConfigError: a local copy without the split's files (:func:`local_copy`'s line), a local copy or hub cache
        snapshot whose README.md metadata cannot be parsed, is malformed or declares the split as a URL
        (:func:`_card_files`). OfflineError: offline and
        neither a local copy nor a cached one of the config: :func:`offline_message`, as :func:`hub_rows` says it;
        where the snapshot's README.md declares the config but no file of the split, with the splits it declares
        (or the split's patterns that match no file), or declares other configs only, with them (:func:`_card_refusal`).
    """
    from retrieval.paths import hub_offline

    if local_copy(hub_id, config, split, data_dir=data_dir, local_name=local_name) is not None or not hub_offline():
        return
    hub, ds = hub_cache_folders(hub_id)
    offline = f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')}"
    if not hub.is_dir() and not ds.is_dir():
        raise OfflineError(offline_message(
            hub_id, config, split, f"{offline} and it is neither in the hub cache ({hub}) nor in the datasets cache "
            f"({ds})", local_name))
    if (ds.is_dir() and (not config or (ds / config).is_dir())) or hub_snapshot_files(
            hub_id, config, split, local_name=local_name) is not None:
        return
    in_hub = _cached_configs(hub, snapshots=True) if hub.is_dir() else set()
    cached = sorted(in_hub | (_cached_configs(ds, snapshots=False) if ds.is_dir() else set()))
    card = _card_refusal(hub_id, config, split)  # the snapshot's card declares the config, not the split's files
    holds = (f"split {split!r}{f' of config {config!r}' if config else ''} ({card})" if card
             else f"config {config!r}" + (f" (cached: {', '.join(cached)})" if cached else "") if config
             else f"split {split!r}")
    raise OfflineError(offline_message(
        hub_id, config, split, f"{offline} and neither the hub cache ({hub}) nor the datasets cache ({ds}) holds {holds}",
        local_name))


def hub_rows(hub_id: str, config: str | None, split: str, *, data_dir: Any = None, local_name: str | None = None,
             offline_fix: str | None = None) -> tuple[list[dict], str]:
    """The raw rows of a hub dataset split, from a local copy when there is one (module docstring); else
    ``datasets.load_dataset``, and offline, where that fails (it reads only the ``datasets`` cache), the split's files
    of the hub cache's snapshot (:func:`hub_snapshot_files`, read like a local copy; ``source`` is the snapshot).

    Returns:
        ``(rows, source)``; ``source`` names the folder/files or the hub id (for error messages and task cards).

    Raises:
        ConfigError: a local path without files for the split; a local copy's or, offline, a hub cache snapshot's
        README.md whose metadata cannot be parsed, is malformed, declares several configs, none the default, without a
        ``config``, or declares the split as a URL (:func:`_card_files`; for a snapshot, the line advises
        ``offline_fix`` (for a URL, running online too), default :data:`SNAPSHOT_FIX`: a caller that reads no folder
        as hub_id, e.g. :mod:`tasks.byo`, names its own way).
        DataError: a malformed local file.
        OfflineError: no local copy and the hub cannot be reached (the message says how to use a folder; offline,
        why the hub cache snapshot's card gives no file, :func:`_card_refusal`).
    """
    local = local_copy(hub_id, config, split, data_dir=data_dir, local_name=local_name)
    if local is not None:
        c, files = local
        return _read_local(files), str(c)
    import datasets

    try:
        ds = datasets.load_dataset(hub_id, config, split=split)
    except Exception as exc:  # datasets raises many types offline (ConnectionError, FileNotFoundError, ...)
        from retrieval.paths import hub_offline

        offline = hub_offline()
        snapshot = (hub_snapshot_files(hub_id, config, split, local_name=local_name, offline_fix=offline_fix)
                    if offline else None)
        if snapshot is not None:  # offline, datasets reads only its own cache: the hub cache's files, read here
            return _read_local(snapshot[1]), str(snapshot[0])
        card = _card_refusal(hub_id, config, split) if offline else None  # why the snapshot's card gives no file
        reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}" + (f"; {card}" if card else "")
        raise OfflineError(offline_message(hub_id, config, split, reason, local_name)) from exc
    return [dict(r) for r in ds], f"{hub_id}{f' ({config})' if config else ''} {split}"


# ----------------------------------------------------------------------------------------------- fields
def _qid(value: Any, where: str) -> str:
    qid = _WS.sub("_", str(value).strip())
    if not qid:
        raise DataError(f"{where}: empty id")
    return qid


def _distinct(values: list[Any], where: str = "", field: str = "answer") -> list[str]:
    """The distinct non-blank answers of ``values`` in order; a null or blank one is skipped (a KILT output without an
    answer, an empty alias).

    Raises:
        DataError: an answer that is not text (a number, a bool, a list: ``where``, ``field`` and the value named);
        it was dropped without a word, so the question was scored against fewer answers than its data set gives.
    """
    out: list[str] = []
    for v in values:
        if v is not None and not isinstance(v, str):
            fix = f"; write it as text, {json.dumps(json.dumps(v))}" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            raise DataError(f"{where}: {field} {v!r} is not text{fix}")
        if isinstance(v, str) and v.strip() and v not in out:
            out.append(v)
    return out


def _question(row: dict, key: str, where: str) -> str:
    """``row[key]``, the question, as text (a number is its text, as before).

    Raises:
        DataError: missing or null (:func:`_need`), blank (a question of no words was asked of the model), or a
        list, a mapping or a bool (``str()`` made ``['who']`` of a list).
    """
    value = _need(row, key, where)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(f"{where}: {key!r} must be text, got {value!r}")
    if not str(value).strip():
        raise DataError(f"{where}: {key!r} is empty; every row needs a question")
    return str(value)


def _need(row: dict, key: str, where: str) -> Any:
    if key not in row or row[key] is None:
        raise DataError(f"{where}: missing field {key!r} (row has {sorted(row)})")
    return row[key]


def _answers_or_error(answers: list[str], where: str) -> list[str]:
    if not answers:
        raise DataError(f"{where}: no gold answer (every row needs at least one non-empty answer)")
    return answers


def triviaqa_row(r: dict, where: str) -> dict:
    ans = _need(r, "answer", where)
    if not isinstance(ans, dict):
        raise DataError(f"{where}: 'answer' must be an object with 'value' and 'aliases'")
    aliases = ans.get("aliases")
    if aliases is not None and not isinstance(aliases, list):  # list("Paris") made the answers P, a, r, i, s
        raise DataError(f"{where}: 'answer.aliases' must be a list of answers, got {aliases!r}"
                        + (f"; write [{json.dumps(aliases)}]" if isinstance(aliases, str) else ""))
    golds = _distinct([ans.get("value")] + list(aliases or []), where, "'answer' value or alias")
    return {"qid": _qid(_need(r, "question_id", where), where), "question": _question(r, "question", where),
            "answers": _answers_or_error(golds, where)}


def squad_row(r: dict, where: str) -> dict:
    ans = _need(r, "answers", where)
    texts = ans.get("text") if isinstance(ans, dict) else None
    if not isinstance(texts, list):
        raise DataError(f"{where}: 'answers' must be an object with a 'text' list")
    return {"qid": _qid(_need(r, "id", where), where), "question": _question(r, "question", where).strip(),
            "answers": _answers_or_error(_distinct(texts, where, "'answers.text' entry"), where)}


def popqa_row(r: dict, where: str) -> dict:
    raw = _need(r, "possible_answers", where)
    try:
        answers = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        raise DataError(f"{where}: 'possible_answers' is not a JSON list: {raw!r}") from None
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit
        from retrieval.io import json_limit_error

        raise json_limit_error(exc, f"{where}: 'possible_answers'", whole_file=True) from None
    if not isinstance(answers, list):
        raise DataError(f"{where}: 'possible_answers' must be a list")
    return {"qid": "popqa-" + _qid(_need(r, "id", where), where), "question": _question(r, "question", where),
            "answers": _answers_or_error(_distinct(answers, where, "'possible_answers' entry"), where)}


def slot_question(kilt_input: str) -> str:
    """KILT slot-filling input ``"subject [SEP] relation"`` -> ``"What is the relation of subject?"``."""
    subject, sep, relation = kilt_input.partition("[SEP]")
    if not sep:
        return kilt_input.strip()
    return f"What is the {relation.strip()} of {subject.strip()}?"


def _kilt_outputs(r: dict, where: str) -> list[str]:
    out = _need(r, "output", where)
    if not isinstance(out, list):
        raise DataError(f"{where}: 'output' must be a list of {{answer, provenance}}")
    return _distinct([o.get("answer") for o in out if isinstance(o, dict)], where, "'output' answer")


def kilt_slot_row(r: dict, where: str, *, templates: bool = False) -> dict:
    question = slot_question(_question(r, "input", where))
    if templates:
        tq = ((r.get("meta") or {}).get("template_questions")) or []
        if tq and isinstance(tq[0], str) and tq[0].strip():
            question = tq[0].strip()
    return {"qid": _qid(_need(r, "id", where), where), "question": question,
            "answers": _answers_or_error(_kilt_outputs(r, where), where)}


def kilt_gen_row(r: dict, where: str) -> dict:
    return {"qid": _qid(_need(r, "id", where), where), "question": _question(r, "input", where).strip(),
            "answers": _answers_or_error(_kilt_outputs(r, where), where)}


DIALOGUE_QUERY_TURNS = 2
"""WoW retrieval query: the dialogue's first turn (it usually names the topic) and its last two turns (a
long history would exceed what the DPR question encoder reads); the prompt still shows the whole dialogue."""


def kilt_dialogue_row(r: dict, where: str) -> dict:
    row = kilt_gen_row(r, where)
    turns = [t.strip() for t in row["question"].split("\n") if t.strip()]
    picked = turns[:1] + [t for t in turns[1:][-DIALOGUE_QUERY_TURNS:]]
    row["query"] = " ".join(picked)
    return row


FAMILIES: dict[str, dict[str, Any]] = {
    "triviaqa": {"hub_id": "mandarjoshi/trivia_qa", "config": "unfiltered.nocontext", "split": "validation", "local": "trivia_qa",
                 "row": triviaqa_row},
    "squad_open": {"hub_id": "rajpurkar/squad", "config": "plain_text", "split": "validation", "local": "squad", "row": squad_row},
    "popqa": {"hub_id": "akariasai/PopQA", "config": None, "split": "test", "local": "PopQA", "row": popqa_row},
    "kilt_trex": {"hub_id": "facebook/kilt_tasks", "config": "trex", "split": "validation", "local": "kilt_tasks",
                  "row": kilt_slot_row},
    "kilt_zsre": {"hub_id": "facebook/kilt_tasks", "config": "structured_zeroshot", "split": "validation", "local": "kilt_tasks",
                  "row": lambda r, w: kilt_slot_row(r, w, templates=True)},
    "kilt_eli5": {"hub_id": "facebook/kilt_tasks", "config": "eli5", "split": "validation", "local": "kilt_tasks", "row": kilt_gen_row},
    "kilt_wow": {"hub_id": "facebook/kilt_tasks", "config": "wow", "split": "validation", "local": "kilt_tasks",
                 "row": kilt_dialogue_row},
}
"""Family name -> hub id, config, split, local folder name and row converter (module docstring)."""


def load_family(family: str, *, data_dir: Any = None, hub_id: str | None = None, hub_split: str | None = None) -> list[dict]:
    """QA rows ``{qid, question, answers, gold_docids: []}`` of a family (:data:`FAMILIES`), in the hub's order.

    Raises:
        ConfigError: an unknown family. DataError: a row without the family's fields or gold answers, a blank
        question or one that is not text (:func:`_question`), an answer that is not text (:func:`_distinct`), TriviaQA
        ``answer.aliases`` that are not a list, or duplicate ids (row named). OfflineError: see :func:`hub_rows`.
    """
    if family not in FAMILIES:
        raise ConfigError(f"unknown dataset {family!r}; families: {', '.join(FAMILIES)}")
    f = FAMILIES[family]
    rows, source = hub_rows(hub_id or f["hub_id"], f["config"], hub_split or f["split"], data_dir=data_dir, local_name=f["local"])
    convert: Callable[[dict, str], dict] = f["row"]
    out: list[dict] = []
    seen: dict[str, int] = {}
    for i, r in enumerate(rows):
        where = f"{source} row {i}"
        row = convert(r, where)
        if row["qid"] in seen:
            raise DataError(f"{where}: duplicate id {row['qid']!r} (also row {seen[row['qid']]})")
        seen[row["qid"]] = i
        row["gold_docids"] = []
        out.append(row)
    if not out:
        raise DataError(f"{source}: no rows")
    return out


__all__ = ["FAMILIES", "SEVERAL_CONFIGS", "card_configs", "check_hub_source", "hub_cache_folders", "hub_rows", "load_family",
           "local_copy", "offline_message", "own_hub_id", "slot_question"]

