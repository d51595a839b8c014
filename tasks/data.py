"""Question sets of the QA tasks, read from a local data folder or from the hub.

Resolution order for every loader: a ``hub_id`` other than the data set's own (:data:`NQ_OPEN_HUB`,
:data:`WEBQ_HUB`) is the user's explicit choice and is read as given, never replaced by the data folder's copy
(:func:`explicit_hub_id`, as :func:`tasks.sources.local_copy` for the other families): a local copy in the hub's layout
it names, else that hub id (a mirror); otherwise an explicit ``data_dir`` argument (task metadata ``data_dir``, e.g.
``lm_eval --metadata '{"data_dir": "../shared/data"}'``), then ``$TOKRAG_DATA_DIR``, then the data set's own hub id.
A hub id is read from the hub (offline, ``HF_HUB_OFFLINE=1``: the ``datasets`` cache, else the split's files in the hub
cache's snapshot, read by :func:`tasks.sources.hub_rows` as for the other families). Relative folders are resolved against the working directory at call time
(:func:`retrieval.paths.data_dir`), never by lm-eval's ``data_files`` logic.

Each loader returns plain rows ``{"qid", "question", "answers", ...}`` in file order:

* NQ-open (``nq_open/NQ-open.dev.jsonl`` or hub ``google-research-datasets/nq_open``, split
  ``validation``, 3,610 questions): ``qid = "nq-dev-<line index>"``.
* NQ-open oracle (``nq_open_oracle/nq-open-oracle.jsonl.gz``, from GitHub nelson-liu/lost-in-the-middle;
  not on the hub, so a local folder or ``oracle_file`` is required): rows add ``gold`` (``{title,
  text}``) and ``gold_docids``; the qid is the question's NQ-open index when NQ-open is at hand
  (``nq-oracle-<row>`` otherwise; noise and counterfactual draws never depend on it: :mod:`tasks.rag`).
* WebQuestions (``webquestions/test.json`` or hub ``stanfordnlp/web_questions``, split ``test``,
  2,032 questions): ``qid = qId`` locally, ``"wqs<index>"`` from the hub (the same numbering).

Splits (:func:`qa_split_of`, :func:`load_qa_split`): every QA data set is cut into three disjoint
parts, ``test`` (what the tasks evaluate), ``dev`` (tuning and calibration: ``tokrag calibrate --split
dev``, task metadata ``split: dev``) and ``fewshot`` (the task's ``fewshot_split``: the examples of
``--num_fewshot``). dev and fewshot together are the *dev pool*.

* NQ-open and the NQ-open oracle subset: a question is in the pool iff
  ``H = int(sha256("tokrag-split:" + question.strip())[:8 bytes], big-endian)`` has ``H % 10 == 0``
  (about 10%: 360 of the 3,610 NQ-open questions, 265 of the 2,655 oracle ones); a pool question is
  a few-shot example iff ``(H // 10) % 4 == 0``, else ``dev``. The split depends only on the question
  text, so the oracle subset's pool is the NQ-open pool restricted to it and no test question of any
  ``nq_open_*`` / ``nq_oracle_*`` task is a dev or few-shot question of another.
* WebQuestions: the pool is the data set's training data when the data folder has it (the first of
  ``webquestions/train.json``, ``val.json``, ``devtest.json``, the last two being held-out parts of the
  original train split; the hub's ``train`` split) and then ``test`` is the whole test file; otherwise
  the same hash slice of the test file is held apart. Within the pool, dev and fewshot are cut by the
  same ``(H // 10) % 4`` rule on ``H`` of the question. Pool questions whose text is also a test
  question are dropped from the pool.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError, DataError, OfflineError
from retrieval.io import check_unicode, read_jsonl
from retrieval.paths import data_dir as _resolve_data_dir

log = logging.getLogger(__name__)

NQ_OPEN_HUB = "google-research-datasets/nq_open"
NQ_OPEN_HUB_CONFIG = "nq_open"
"""The only config of :data:`NQ_OPEN_HUB`; its files lie in the hub repository's ``nq_open/`` folder."""
WEBQ_HUB = "stanfordnlp/web_questions"
NQ_OPEN_FILE = "nq_open/NQ-open.dev.jsonl"
NQ_ORACLE_FILE = "nq_open_oracle/nq-open-oracle.jsonl.gz"
WEBQ_FILE = "webquestions/{split}.json"
WEBQ_POOL_FILES = ("train", "val", "devtest")
"""WebQuestions files drawn from the original train split, in order of preference, used as the dev pool."""

SPLITS = ("test", "dev", "fewshot")
"""The three disjoint parts of every QA data set (see the module docstring)."""
ALL_SPLIT = "all"
"""Task metadata ``split: all``: every question of a bring-your-own questions file (``dataset`` ``byo``), in file
order, the dev/few-shot pool included (:func:`load_qa_split`); refused for the other data sets, with
``--num_fewshot`` > 0 (the examples would be scored questions) and by ``tokrag calibrate`` (dev records only)."""
POOL_MOD = 10
"""One question in ``POOL_MOD`` (by hash) goes to the dev pool."""
FEWSHOT_MOD = 4
"""One pool question in ``FEWSHOT_MOD`` (by hash) is a few-shot example; the others are ``dev``."""


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local data folder (``data_dir`` or ``$TOKRAG_DATA_DIR``) or None when neither is set.

    Raises:
        ConfigError: a folder is named but does not exist.
    """
    return _resolve_data_dir(data_dir, required=False)


def explicit_hub_id(hub_id: Any, default: str | None) -> bool:
    """Whether ``hub_id`` is the user's explicit choice of data set: given, and another data set than the one of
    ``default``, the data set's own hub id (:data:`NQ_OPEN_HUB`, :data:`WEBQ_HUB`, a family's or WikiText-103's,
    :func:`tasks.sources.own_hub_id`; None: no default, so any given hub id is explicit). Hub ids are compared as the
    Hub resolves them, ignoring case (``Mandarjoshi/trivia_qa`` is ``mandarjoshi/trivia_qa``); a ``hub_id`` naming an
    existing path is a local copy, compared as written (never case-folded). Such a hub id is read as given, a local
    copy it names (in the hub's layout, relative to the working directory) or else that hub id (a mirror: the hub,
    offline its caches), never the data folder's copy (``data_dir`` / ``$TOKRAG_DATA_DIR``); the default hub id (or
    none) leaves the data folder first. The one rule for :func:`load_nq_open`, :func:`load_webq`,
    :func:`check_qa_source`, :func:`tasks.sources.local_copy` (the families, WikiText-103), the offline lines and the
    files the task declares and records (:func:`tasks.provenance.dataset_files`)."""
    if hub_id in (None, ""):
        return False
    if default is None:
        return True
    given = str(hub_id)
    if given == default:
        return False
    if Path(given).expanduser().exists():  # a local copy: a path is not case-folded
        return True
    return given.lower() != default.lower()


def _offline_fix(hub_id: str, default: str) -> str:
    """How to read a built-in QA data set without the hub, the last sentence of :func:`_hub_split`'s and
    :func:`check_qa_source`'s offline lines: a data folder for the data set's own hub id (:data:`_OFFLINE_FIX`), a
    local copy given as hub_id for another (:func:`explicit_hub_id`: the data folder is not read for it)."""
    if not explicit_hub_id(hub_id, default):
        return _OFFLINE_FIX
    return (f"Offline, give a local copy of {hub_id} in the hub's layout as hub_id: with lm_eval / tokrag eval, "
            "--metadata '{\"hub_id\": \"/path/to/copy\"}'; in a leaderboard (no --metadata), the task YAML's "
            f"metadata: {{hub_id: /path/to/copy}} (the data folder, $TOKRAG_DATA_DIR or metadata data_dir, is read "
            f"only for the hub id {default})")


def _hub_split(hub_id: str, split: str, name: str | None = None, *, default: str = NQ_OPEN_HUB) -> list[dict]:
    """The rows of a hub split (:func:`tasks.sources.hub_rows`: ``datasets.load_dataset``, and offline, where that
    fails, the split's files in the hub cache's snapshot; ``name``, the config, also names the snapshot's folder of
    the split's files, e.g. ``nq_open/``; ``default``: the data set's own hub id, :func:`_offline_fix`).

    Raises:
        OfflineError: neither the hub nor a cached copy can be read (how to use a local data folder, or for an
            explicit hub id a local copy given as hub_id, instead).
    """
    from .sources import hub_rows

    try:
        return hub_rows(hub_id, name, split)[0]
    except OfflineError as exc:  # the loader's reason; the fix is a data folder laid out like ../shared/data
        cause = exc.__cause__ or exc
        raise OfflineError(f"cannot load the hub dataset {hub_id!r} (split {split!r}): {type(cause).__name__}: "
                           f"{cause}. {_offline_fix(hub_id, default)}") from exc


_OFFLINE_FIX = ("Offline, point the task at a local folder laid out like ../shared/data: set "
                "TOKRAG_DATA_DIR=/path/to/data or pass --metadata '{\"data_dir\": \"/path/to/data\"}'")
"""How to read a built-in QA data set without the hub: the last sentence of :func:`_hub_split`'s and
:func:`check_qa_source`'s offline lines."""


def _answers(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise DataError(f"{where}: expected a non-empty list of answer strings, got {value!r}")
    return list(value)


def _hub_fields(row: dict, keys: tuple[str, ...], where: str, local: str | None = None) -> None:
    """Refuse a hub row (or a local copy's, given as ``hub_id``) without the hub's fields ``keys``; ``local``: the
    data folder file that holds the data set's original format, named in the line.

    Raises:
        DataError: one line naming the row, the missing fields and the fields it has.
    """
    missing = [k for k in keys if k not in row]
    if missing:
        raise DataError(f"{where}: missing the hub's field{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))} "
                        f"(row has {sorted(row)}); a copy given as hub_id holds the hub's rows"
                        + (f"; the data set's original files ({local}) are read from a data folder: set "
                           f"TOKRAG_DATA_DIR (or --metadata data_dir) to the folder holding {local.split('/')[0]}/ "
                           "instead" if local else ""))


def _nq_open_path(root: Path) -> Path:
    """:data:`NQ_OPEN_FILE` of data folder ``root``, as :func:`load_nq_open` reads it.

    Raises:
        ConfigError: ``root`` has no such file.
    """
    path = root / NQ_OPEN_FILE
    if not path.is_file():
        raise ConfigError(f"data folder {root} has no {NQ_OPEN_FILE}; lay it out like ../shared/data")
    return path


def _mirror_configs(hub_id: str) -> list[str]:
    """The configs a mirror hub id's card declares, from where its rows are read: online (``HF_HUB_OFFLINE`` unset)
    the hub's current card (``datasets.get_dataset_config_names``, as ``load_dataset`` reads the hub then), offline
    the hub cache snapshot's card (:func:`tasks.sources.card_configs`), as also where the hub cannot be asked (its
    rows then come from the cache); [] where neither answers (the read itself then says why). So the config does not depend on whether an
    ``hf download`` left a snapshot in the cache: online, the hub decides, as it decides the rows."""
    from retrieval.paths import hub_offline

    from .sources import _hub_snapshot, card_configs

    if not hub_offline():
        import datasets

        try:
            return list(datasets.get_dataset_config_names(hub_id))
        except Exception:  # noqa: BLE001 - the hub unreachable (then the rows come from the cache too), private, a typo
            pass
    snap = _hub_snapshot(hub_id)
    return card_configs(snap) if snap is not None else []


def _nq_open_config(hub_id: str) -> str | None:
    """The config :func:`load_nq_open` reads NQ-open's hub data set ``hub_id`` with: :data:`NQ_OPEN_HUB_CONFIG` for
    :data:`NQ_OPEN_HUB`, for a local copy without a README.md ``configs:`` card (its ``nq_open/`` folder, else its
    flat split files), for one whose card declares ``nq_open`` (NQ-open's own card; beside other configs too) and
    for one whose card declares no files for its default config (read in the layout, ``nq_open/`` first); for a mirror
    (another hub id) whose card declares ``nq_open`` (beside others, or another marked default: the config a local copy
    of the same files is read with; online the hub's card, offline the hub cache snapshot's: :func:`_mirror_configs`); None (the default config) for any other mirror and for a
    local copy whose card declares other configs, read as ``datasets.load_dataset(<folder>)`` reads it (the card's
    default config: a card declaring only ``default`` is read, where ``load_dataset(<folder>, "nq_open")`` would refuse;
    several, none the default, are refused naming them)."""
    from .sources import _card_config, card_configs

    path = Path(str(hub_id)).expanduser()
    if not explicit_hub_id(hub_id, NQ_OPEN_HUB):  # the data set's own hub id, in any case
        return NQ_OPEN_HUB_CONFIG
    if not path.exists():  # a mirror: nq_open where its card declares it, else its default config
        return NQ_OPEN_HUB_CONFIG if NQ_OPEN_HUB_CONFIG in _mirror_configs(str(hub_id)) else None
    configs = card_configs(path)
    if not configs or NQ_OPEN_HUB_CONFIG in configs:
        return NQ_OPEN_HUB_CONFIG
    try:
        files = _card_config(path, None, local=True) is not None  # the default config declares files
    except ConfigError:  # several configs, none the default (or a malformed card): refused when read, in its line
        return None
    return None if files else NQ_OPEN_HUB_CONFIG


def load_nq_open(data_dir: str | os.PathLike | None = None, hub_id: str = NQ_OPEN_HUB) -> list[dict]:
    """NQ-open dev ("test" of DPR/RAG papers): rows ``{qid, question, answers}``.

    ``hub_id`` is the hub data set (config ``nq_open``) or a local copy of it (:mod:`tasks.sources`' layout): the split's
    files under ``<copy>/nq_open/`` (the hub's layout), else ``<copy>/validation*`` or ``<copy>/data/validation*``; a
    copy with a README.md ``configs:`` card is read as a mirror is. Another hub id (a mirror) is read with config
    ``nq_open`` where its card declares it, else with its default config (:func:`_nq_open_config`). A ``hub_id``
    other than :data:`NQ_OPEN_HUB` (a local copy or a mirror) is read instead of the data folder
    (:func:`explicit_hub_id`); the data folder's file is read for the default.

    Raises:
        ConfigError: a data folder without :data:`NQ_OPEN_FILE`, or a local copy without validation files.
        DataError: a malformed line (file:line named). OfflineError: no local folder and no hub.
    """
    root = None if explicit_hub_id(hub_id, NQ_OPEN_HUB) else resolve_data_dir(data_dir)
    rows: list[dict] = []
    if root is not None:
        path = _nq_open_path(root)
        for i, (lineno, obj) in enumerate(read_jsonl(path)):
            if "question" not in obj or "answer" not in obj:
                raise DataError(f"{path}:{lineno}: expected keys 'question' and 'answer'")
            check_unicode({"question": obj["question"], "answer": obj["answer"]}, f"{path}:{lineno}")
            rows.append({"qid": f"nq-dev-{i:04d}", "question": obj["question"],
                         "answers": _answers(obj["answer"], f"{path}:{lineno}")})
        if not rows:  # an empty file (a copy that did not finish) gave 0 questions, and the oracle questions' qids
            raise DataError(f"{path}: holds no questions (an empty file: a download or copy that did not finish?); "
                            f"copy {NQ_OPEN_FILE} of the data folder (../shared/data) again")
        return rows
    ds = _hub_split(hub_id, "validation", _nq_open_config(hub_id))
    for i, obj in enumerate(ds):
        _hub_fields(obj, ("question", "answer"), f"{hub_id}[{i}]")
        rows.append({"qid": f"nq-dev-{i:04d}", "question": obj["question"],
                     "answers": _answers(obj["answer"], f"{hub_id}[{i}]")})
    return rows


def nq_oracle_path(data_dir: str | os.PathLike | None = None,
                   oracle_file: str | os.PathLike | None = None) -> tuple[Path, Path | None]:
    """Where :func:`load_nq_oracle` reads the NQ-open oracle file, found without reading it: ``(the file, the data
    folder or None)``; ``oracle_file`` when given, else :data:`NQ_ORACLE_FILE` of the data folder (``data_dir``, else
    ``$TOKRAG_DATA_DIR``).

    Raises:
        ConfigError: no data folder and no ``oracle_file`` (the file is not on the hub), or the file does not exist
            (one line saying what to set).
    """
    if oracle_file not in (None, ""):
        path = Path(oracle_file).expanduser().resolve()
        root = resolve_data_dir(data_dir)
    else:
        root = resolve_data_dir(data_dir)
        if root is None:
            raise ConfigError(
                "the NQ-open oracle file (nq-open-oracle.jsonl.gz from GitHub nelson-liu/lost-in-the-middle) "
                "is not on the hub: set TOKRAG_DATA_DIR to a folder laid out like ../shared/data (or, for the "
                "lm-eval tasks, pass --metadata '{\"data_dir\": \"/path/to/data\"}' or "
                "'{\"oracle_file\": \"/path/nq-open-oracle.jsonl.gz\"}'; for tokrag analyze, --data-dir)"
            )
        path = root / NQ_ORACLE_FILE
    if not path.is_file():
        if oracle_file not in (None, ""):
            raise ConfigError(f"NQ oracle file {path} (oracle_file) does not exist")
        raise ConfigError(f"NQ oracle file {path} does not exist: point TOKRAG_DATA_DIR (or --metadata data_dir; for "
                          f"tokrag analyze, --data-dir) at a folder laid out like ../shared/data ({NQ_ORACLE_FILE})")
    return path, root


def load_nq_oracle(data_dir: str | os.PathLike | None = None, oracle_file: str | os.PathLike | None = None) -> list[dict]:
    """NQ-open questions with their gold passage: rows ``{qid, question, answers, gold, gold_docids}``.

    ``gold`` is ``{"title", "text"}``. ``gold_docids[0] == retrieval.nq_gold_docid(title, text)``, the id the
    passage has in the ``nq-wiki-12k`` / ``nq-dpr-1k`` corpora, followed (file order) by the ids of the other
    gold passages of the file with the same title and text up to whitespace
    (:func:`retrieval.corpus.nq_gold_docids_with_twins`, as ``tokrag retrieve eval``'s nq-oracle topics). The qid is the
    question's NQ-open index (``nq-dev-<i>``) when the data folder has ``nq_open/NQ-open.dev.jsonl``, else
    ``nq-oracle-<row>``.

    Raises:
        ConfigError: no local folder / ``oracle_file`` (the file is not on the hub).
        DataError: a malformed line (file:line named).
    """
    path, root = nq_oracle_path(data_dir, oracle_file)
    qid_of: dict[str, str] = {}
    if root is not None and (root / NQ_OPEN_FILE).is_file():
        for row in load_nq_open(root):
            qid_of.setdefault(row["question"], row["qid"])
    return _oracle_rows(path, qid_of, given=oracle_file not in (None, ""))


def _oracle_rows(path: Path, qid_of: dict[str, str], *, given: bool = False) -> list[dict]:
    """:func:`load_nq_oracle`'s rows of the oracle file ``path``, ``qid_of`` giving a question its NQ-open qid;
    ``given``: ``path`` is the user's ``oracle_file``, not the data folder's (what an empty file is told to do).

    Raises:
        DataError: one line naming ``file:line``: invalid UTF-8, malformed JSON or a row without its question or first
        passage, a key given twice in one JSON object (JSON would keep its last value, silently), an empty file."""
    from retrieval.corpus import nq_gold_docids_with_twins

    from retrieval.corpus import EMPTY_ORACLE
    from retrieval.io import UNIQUE_KEYS_DECODER, DuplicateKeyError, duplicate_key_message, json_limit_error, open_data

    rows: list[dict] = []
    with open_data(path) as f:  # a truncated .gz was an EOFError traceback; a gzipped .jsonl a UnicodeDecodeError one
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{lineno}: invalid UTF-8 at byte {exc.start} of the line; re-encode the file "
                                "as UTF-8") from None
            if not line.strip():
                continue
            try:
                # a key twice: JSON keeps its last value, silently (json.loads: its 'Unexpected UTF-8 BOM' refusal)
                obj = json.loads(line) if line.startswith("\ufeff") else UNIQUE_KEYS_DECODER.decode(line)
                ctx = obj["ctxs"][0]
                gold = {"title": str(ctx["title"]), "text": str(ctx["text"])}
                question = obj["question"]
            except DuplicateKeyError as exc:
                raise DataError(duplicate_key_message(f"{path}:{lineno}", exc.key)) from None
            except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
                raise DataError(f"{path}:{lineno}: expected {{question, answers, ctxs:[{{title, text}}]}} ({exc})") from None
            except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit
                raise json_limit_error(exc, f"{path}:{lineno}") from None
            check_unicode({"question": question, "answers": obj.get("answers"), "ctxs": [gold]}, f"{path}:{lineno}")
            rows.append({
                "qid": qid_of.get(question, f"nq-oracle-{len(rows):04d}"),
                "question": question,
                "answers": _answers(obj.get("answers"), f"{path}:{lineno}"),
                "gold": gold,
            })
    if not rows:  # a 0-byte .gz reads as empty: the task had no questions and the corpus no gold passages
        if given:  # the user's own file: copying the data folder's one again is not the fix
            raise DataError(f"{path}: holds no questions (an empty file?); point oracle_file at a file of one "
                            f"{{question, answers, ctxs}} per line, or leave it out for the data folder's {NQ_ORACLE_FILE}")
        raise DataError(f"{path}: {EMPTY_ORACLE}")
    for r, ids in zip(rows, nq_gold_docids_with_twins([[(r["gold"]["title"], r["gold"]["text"])] for r in rows])):
        r["gold_docids"] = ids
    return rows


def nq_gold_ids_by_question(data_dir: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """Question text -> gold passage ids, from the oracle file when a local folder has it, else ``{}`` (the oracle
    file alone: the NQ-open qids :func:`load_nq_oracle` gives its rows are not needed here)."""
    root = resolve_data_dir(data_dir)
    if root is None or not (root / NQ_ORACLE_FILE).is_file():
        return {}
    out: dict[str, list[str]] = {}
    for row in _oracle_rows(root / NQ_ORACLE_FILE, {}):
        out.setdefault(row["question"], [])
        for d in row["gold_docids"]:
            if d not in out[row["question"]]:
                out[row["question"]].append(d)
    return out


def _webq_path(root: Path, split: str) -> Path:
    """WebQuestions' ``split`` file of data folder ``root`` (:data:`WEBQ_FILE`), as :func:`load_webq` reads it.

    Raises:
        ConfigError: ``root`` has no such file.
    """
    path = root / WEBQ_FILE.format(split=split)
    if not path.is_file():
        raise ConfigError(f"data folder {root} has no {WEBQ_FILE.format(split=split)}")
    return path


def load_webq(data_dir: str | os.PathLike | None = None, split: str = "test", hub_id: str = WEBQ_HUB) -> list[dict]:
    """WebQuestions: rows ``{qid, question, answers}`` (answers are Freebase entity names).

    ``split`` names the file ``webquestions/<split>.json`` (hub: the split; ids ``wq<split><index>``
    for splits other than test). A ``hub_id`` other than :data:`WEBQ_HUB` (a local copy or a mirror) is read instead
    of the data folder (:func:`explicit_hub_id`).

    Raises:
        DataError: a malformed file, or a key given twice in one JSON object (``file:line`` and the key: JSON would
        keep its last value, silently). OfflineError: no local folder and no hub.
    """
    root = None if explicit_hub_id(hub_id, WEBQ_HUB) else resolve_data_dir(data_dir)
    rows: list[dict] = []
    if root is not None:
        path = _webq_path(root, split)
        from retrieval.io import loads_unique, open_data

        with open_data(path) as f:  # a gzip file decompressed, whatever its name
            raw = f.read()
        try:
            items = loads_unique(raw.decode("utf-8"), str(path))  # a key twice (qText): one line naming it
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"{path}: not a JSON array of {{qId, qText, answers}} ({exc})") from None
        for i, obj in enumerate(items):
            if not isinstance(obj, dict) or "qText" not in obj:
                raise DataError(f"{path}: item {i} lacks 'qText'")
            check_unicode({k: obj.get(k) for k in ("qId", "qText", "answers")}, f"{path} item {i}")
            rows.append({"qid": str(obj.get("qId", f"wqs{i:06d}")), "question": obj["qText"],
                         "answers": _answers(obj.get("answers"), f"{path} item {i}")})
        return rows
    ds = _hub_split(hub_id, split, default=WEBQ_HUB)
    prefix = "wqs" if split == "test" else f"wq{split}"  # distinct ids for the train split (the dev pool)
    for i, obj in enumerate(ds):
        _hub_fields(obj, ("question", "answers"), f"{hub_id}[{i}]", local=WEBQ_FILE.format(split=split))
        rows.append({"qid": f"{prefix}{i:06d}", "question": obj["question"],
                     "answers": _answers(obj["answers"], f"{hub_id}[{i}]")})
    return rows


BUILTIN_DATASETS = ("nq_open", "nq_oracle", "webq")
"""The QA data sets read by this module's loaders (the others: :data:`tasks.sources.FAMILIES` and ``byo``)."""


def check_qa_source(dataset: str, data_dir: str | os.PathLike | None = None,
                    oracle_file: str | os.PathLike | None = None, hub_id: str | None = None) -> None:
    """Before the model loads: refuse a built-in QA data set (:data:`BUILTIN_DATASETS`) whose questions
    :func:`load_qa_split` could not find, reading none of them, with its loader's line. With a data folder
    (``data_dir``, else ``$TOKRAG_DATA_DIR``) its file must be there (NQ-open: :data:`NQ_OPEN_FILE`; WebQuestions:
    ``webquestions/test.json``; not for a ``hub_id`` other than the data set's own, :func:`explicit_hub_id`); the
    NQ-open oracle file is never on the hub (:func:`nq_oracle_path`); without a folder, or with such a ``hub_id``,
    NQ-open (split ``validation``) and WebQuestions (``test``, and ``train``, its dev pool) come from ``hub_id``
    (default :data:`NQ_OPEN_HUB`, :data:`WEBQ_HUB`), checked by :func:`tasks.sources.check_hub_source`: a local copy
    given as ``hub_id``, offline (``HF_HUB_OFFLINE=1``) a copy in the hub or ``datasets`` cache; online the hub is
    left to the task build. Any other ``dataset``: nothing checked.

    Raises:
        ConfigError: a data folder (or a local copy given as ``hub_id``) without the data set's file, no oracle file.
        OfflineError: offline and no cached copy: :func:`tasks.sources.check_hub_source`'s line, then
            :func:`_hub_split`'s fix (:func:`_offline_fix`: a data folder, or a local copy given as hub_id).
    """
    from .sources import check_hub_source

    if dataset == "nq_oracle":
        nq_oracle_path(data_dir, oracle_file)
        return
    if dataset not in ("nq_open", "webq"):
        return
    default = NQ_OPEN_HUB if dataset == "nq_open" else WEBQ_HUB
    hub = hub_id or default
    root = None if explicit_hub_id(hub, default) else resolve_data_dir(data_dir)
    if root is not None:
        _nq_open_path(root) if dataset == "nq_open" else _webq_path(root, "test")
        return
    for split, config in ([("validation", _nq_open_config(hub))] if dataset == "nq_open"
                          else [("test", None), ("train", None)]):  # WebQuestions' dev pool: the train split
        try:
            check_hub_source(hub, config, split)
        except OfflineError as exc:  # the hub check's line, then the loader's fix
            raise OfflineError(f"{str(exc).rstrip('.')}. {_offline_fix(hub, default)}") from None


def _split_hash(question: str) -> int:
    digest = hashlib.sha256(f"tokrag-split:{question.strip()}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def qa_split_of(question: str, in_pool: bool | None = None) -> str:
    """``"test"``, ``"dev"`` or ``"fewshot"``: the fixed split of a question (module docstring).

    Args:
        question: the question text (leading/trailing whitespace ignored).
        in_pool: None (default) decides pool membership by ``H % POOL_MOD == 0``; True/False force it
            (WebQuestions rows from a training file are in the pool, test-file rows are not).
    """
    h = _split_hash(question)
    pool = h % POOL_MOD == 0 if in_pool is None else in_pool
    if not pool:
        return "test"
    return "fewshot" if (h // POOL_MOD) % FEWSHOT_MOD == 0 else "dev"


def _webq_pool(data_dir: str | os.PathLike | None, hub_id: str) -> list[dict] | None:
    """WebQuestions rows from the training data (first present of :data:`WEBQ_POOL_FILES`; the hub's
    ``train`` split when no local folder is set or ``hub_id`` is another than :data:`WEBQ_HUB`:
    :func:`explicit_hub_id`), or None when the local folder has none of them."""
    root = None if explicit_hub_id(hub_id, WEBQ_HUB) else resolve_data_dir(data_dir)
    if root is None:
        return load_webq(None, split="train", hub_id=hub_id)
    for name in WEBQ_POOL_FILES:
        if (root / WEBQ_FILE.format(split=name)).is_file():
            return load_webq(root, split=name)
    return None


def load_qa_split(dataset: str, split: str = "test", data_dir: str | os.PathLike | None = None,
                  oracle_file: str | os.PathLike | None = None, hub_id: str | None = None, *,
                  hub_split: str | None = None, questions: Any = None) -> list[dict]:
    """The rows of one split (``test`` | ``dev`` | ``fewshot``; ``all`` for ``byo``: :data:`ALL_SPLIT`) of a QA data
    set, in file order.

    ``dataset``: ``nq_open`` | ``nq_oracle`` | ``webq``, a family of :data:`tasks.sources.FAMILIES`
    (``hub_split`` names its hub split) or ``byo`` (``questions``: :mod:`tasks.byo`). Rows are those of
    :func:`load_nq_open`, :func:`load_nq_oracle`, :func:`load_webq`, :func:`tasks.sources.load_family` and
    :func:`tasks.byo.load_questions`, filtered by :func:`qa_split_of` (module docstring; the families and
    ``byo`` are cut like NQ-open: one question in ten, by hash of its text, goes to the dev pool).
    The three splits of a data set are disjoint by qid and by question text.

    Raises:
        ConfigError: an unknown dataset or split, ``all`` for a data set other than ``byo``; the loaders' errors
            (missing folder, offline hub).
    """
    if split == ALL_SPLIT and dataset != "byo":
        raise ConfigError(f"split='all': only a bring-your-own questions file (dataset 'byo') is scored whole; dataset "
                          f"{dataset!r} keeps its dev/few-shot pool out of the scored questions: use split 'test'")
    if split not in SPLITS + (ALL_SPLIT,):
        raise ConfigError(f"split={split!r}: expected one of {', '.join(SPLITS + (ALL_SPLIT,))} (task metadata 'split')")
    if dataset == "nq_open":
        rows = load_nq_open(data_dir, hub_id or NQ_OPEN_HUB)
    elif dataset == "nq_oracle":
        rows = load_nq_oracle(data_dir, oracle_file)
    elif dataset == "webq":
        test = load_webq(data_dir, split="test", hub_id=hub_id or WEBQ_HUB)
        pool = _webq_pool(data_dir, hub_id or WEBQ_HUB)
        if pool is None:
            log.info("WebQuestions: no training file (%s) in the data folder: the dev pool is a 10%% hash slice "
                     "of test.json", ", ".join(f"{n}.json" for n in WEBQ_POOL_FILES))
            return [r for r in test if qa_split_of(r["question"]) == split]
        if split == "test":
            return test
        seen = {r["question"].strip() for r in test} | {r["qid"] for r in test}
        out = []
        for r in pool:
            q = r["question"].strip()
            if q in seen or r["qid"] in seen:
                continue
            seen.add(q)
            if qa_split_of(r["question"], in_pool=True) == split:
                out.append(r)
        return out
    elif dataset == "byo":
        from .byo import load_questions

        rows = load_questions(questions, split=hub_split)
        if split == ALL_SPLIT:  # every question, in file order (the pool's too)
            return rows
    else:
        from .sources import FAMILIES, load_family

        if dataset not in FAMILIES:
            raise ConfigError(f"dataset={dataset!r}: expected one of nq_open, nq_oracle, webq, {', '.join(FAMILIES)}, byo")
        rows = load_family(dataset, data_dir=data_dir, hub_id=hub_id, hub_split=hub_split)
    return [r for r in rows if qa_split_of(r["question"]) == split]
