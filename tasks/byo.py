"""Bring your own QA data: the questions of the ``rag_qa_{bm25,dense,hybrid}`` tasks.

``--metadata '{"questions": PATH_OR_HUB_ID, "corpus": NAME_OR_PATH}'``:

* ``questions``: a JSONL file (``.jsonl`` or ``.jsonl.gz``), one question per line::

      {"id": "q1", "question": "who wrote hamlet", "answers": ["William Shakespeare", "Shakespeare"], "gold_docids": ["p7"]}

  ``question`` (non-empty text) and ``answers`` (a non-empty list of gold answer strings) are required; ``id``
  (a single token; default ``q<index of the question, from 0>``: the first question is ``q0``, while errors name
  lines from 1, ``q.jsonl:1``) and ``gold_docids`` (ids of passages of the corpus that answer
  it; they give the ``gold_at_k`` metric) are optional. Ids are strings or integers (``7`` is ``"7"``), as
  everywhere in tokrag (:func:`retrieval.io.json_id`): a float ``7.0``, a bool or an empty ``""`` is refused.
  The id is read as ``tokrag retrieve --topics`` reads a topics record's (:func:`retrieval.corpus.qid_field`): the
  first not null of ``qid``, ``id``, ``qId``, ``_id`` (:data:`retrieval.corpus.QID_FIELDS`), so the same file gets
  the same ids in both tools (one WARNING when a line's ``id`` is not the one read: ``qid`` before it, different).
  Other fields are ignored; an id kept in another field (:data:`ID_FIELDS`, e.g. ``query_id``, or an id field in other
  case, ``ID``, ``QID``) is not read as the id (one WARNING says so), and a field one edit from ``gold_docids`` is
  refused. A ``.csv``, ``.tsv`` or ``.parquet`` file (gzipped too, but ``.parquet``) is read as a folder's file of that
  format (below), each row named ``file row i`` (from 0). A hub id is read with ``datasets.load_dataset(id, split=hub_split)`` (default split ``test``; offline, where
  that fails, the split's files in the hub cache's snapshot: :func:`tasks.sources.hub_rows`) and checked the same way.
  A folder (``hf download <repo> --repo-type dataset --local-dir myqa``) is read as
  ``datasets.load_dataset(folder, split=hub_split)`` reads it, same rows in the same order (:func:`_folder_files`):
  the files its README.md ``configs:`` card declares for the split, else those ``datasets`` infers from the file
  names (``test.jsonl``, ``data/test-00000-of-00001.parquet``, ``test/*.jsonl``, ``nq-test.jsonl``); ``.parquet``,
  ``.jsonl``, ``.json``, ``.csv`` and ``.tsv`` files (gzipped too), each row checked as a file's line and named by its
  file (``file:line`` for ``.jsonl``, ``file row i`` for the others). A CSV or TSV cell holds text, so there
  ``answers`` and ``gold_docids`` are JSON lists written in their cells (``["Paris"]``; in a CSV file
  ``"[""Paris""]"``: :func:`_cell_lists`). A folder without the split is refused, naming
  the splits it has. A leaderboard's run key and the results' provenance fingerprint the whole folder by its files'
  content (:func:`retrieval.io.tree_fingerprint`; hidden files such as ``.cache/`` skipped, as ``datasets`` skips them).
* ``corpus``: anything :func:`retrieval.load_corpus` reads (Pyserini JsonCollection, ``{id, title, text}``
  JSONL, DPR TSV, a folder of them), a named corpus (``nq-wiki-12k``), or ``prebuilt:wikipedia-dpr-100w``.

Each bad input is one line that names the file and line: a missing field, an empty answer list, a
duplicate id, and gold ids that the corpus does not hold (checked once the corpus is loaded; not for
prebuilt corpora, whose ids cannot be listed cheaply).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from retrieval.corpus import OTHER_QID_FIELDS, QID_FIELDS, other_qid_field, qid_field
from retrieval.errors import ConfigError, DataError, OfflineError
from retrieval.io import check_unicode, json_id

log = logging.getLogger(__name__)
_WS = re.compile(r"\s")
FIELDS = ("id", "question", "answers", "gold_docids")
"""The fields of a question that are read, with the id's other names (``qid``, ``qId``, ``_id``:
:data:`retrieval.corpus.QID_FIELDS`, the first not null is the id); any other field is ignored."""

SHOWN_FIELDS = 20
"""The most fields of a line that :func:`_missing` names."""

ID_FIELDS = OTHER_QID_FIELDS
"""Fields other data sets keep a question's id in that are not read as the id (a WARNING says so): the topics
reader's (:data:`retrieval.corpus.OTHER_QID_FIELDS`); the id is read from :data:`retrieval.corpus.QID_FIELDS`."""
_WARNED: set[tuple[str, str]] = set()  # (questions spec, field): the id WARNING once per process (the precheck and the build read the file)
EXAMPLE = '--metadata \'{"questions": "my_questions.jsonl", "corpus": "my_passages.jsonl"}\''
OFFLINE_FIX = ("write the split's rows to a JSONL file, one {question, answers} object per line, and give that file as "
               "questions (--metadata '{\"questions\": \"/path/to/questions.jsonl\"}'; in a leaderboard, the task YAML's "
               "metadata: {questions: /path/to/questions.jsonl})")
"""How a hub id's questions are given without the hub, in :func:`tasks.sources.hub_rows`' line refusing a hub cache
snapshot whose card declares the split as a URL (the rag_qa_* tasks read ``questions`` only; ``hub_id`` is not theirs)."""
DATA_FILE_ENDING = re.compile(r"\.(jsonl|json|csv|tsv|parquet)(\.gz)?$")
"""The endings of a questions file (a folder's data files, :data:`tasks.sources._EXTENSIONS`): a ``questions`` value
ending so is a path, never a hub id (:func:`is_hub_id`)."""
TABLE_ENDING = re.compile(r"\.(csv|tsv)(\.gz)?$")
"""The endings of a CSV or TSV questions file, whose cells hold text: ``answers`` and ``gold_docids`` are read from a
cell holding a JSON list (:func:`_cell_lists`)."""


def is_hub_id(spec: Any) -> bool:
    """Whether ``questions`` names a hub data set: nothing path-like (no data file ending, :data:`DATA_FILE_ENDING`:
    ``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet``, gzipped too; no leading ``.``, ``/`` or ``~``; no
    whitespace, which no hub id holds) and not an existing path. A missing ``q.csv``, or ``q.jsonl `` with a space
    copied after it, was read as a hub id, so the pre-load check skipped it and the task build said it could not be
    loaded from the hub.

    Raises:
        ConfigError: a path the operating system refuses (:func:`retrieval.corpus.user_path`).
    """
    from retrieval.corpus import user_path

    text = str(spec)
    if DATA_FILE_ENDING.search(text.strip()) or text.startswith((".", "/", "~")) or _WS.search(text):
        return False  # a hub id holds no whitespace: "q.jsonl " (a space copied with it) is a file name
    return not user_path(text, "questions")[1]


def _rows(spec: str, split: str) -> list[tuple[str, dict]]:
    """``[(where, row)]`` of a JSONL file (``path:line``), a CSV, TSV or Parquet file (``path row i``:
    :func:`_table_rows`), a folder (:func:`_folder_rows`) or a hub data set (``id[split][i]``)."""
    from retrieval.corpus import user_path

    p = user_path(str(spec), "questions")[0]
    if p.is_file():
        if re.search(r"\.(csv|tsv|parquet)(\.gz)?$", p.name):  # as a folder's file; read as JSONL: "malformed JSON"
            return _table_rows(p)
        from retrieval.cache import _head
        from retrieval.io import read_jsonl

        if _head(p).startswith(b"["):  # read_jsonl would call its first line "malformed JSON", as for a corpus or a run
            from retrieval.io import jsonl_conversion_command

            raise DataError(f"questions {p}: one JSON array, not JSON Lines; write one {{question, answers}} object per "
                            f"line ({jsonl_conversion_command(p)})")
        return [(f"{p}:{lineno}", obj) for lineno, obj in read_jsonl(p)]
    if p.is_dir():
        return _folder_rows(p, split)
    if not is_hub_id(spec):
        from retrieval.corpus import relative_note

        bare = str(spec).strip()
        spaces = ""
        if bare != str(spec) and bare:  # a space copied with a file name or a hub id: name what the bare value is
            spaces = (f"; without the spaces around it, {bare!r} exists: remove them"
                      if user_path(bare, "questions")[0].exists() else
                      f"; without the spaces around it, {bare!r} is read as a hub id: remove them" if is_hub_id(bare)
                      else "")
        raise ConfigError(f"questions {spec!r}: no such file{relative_note(p)}{spaces} (give a JSONL file with question "
                          "and answers per line, or a hub id)")
    from .sources import hub_rows

    try:  # datasets.load_dataset; offline, where it fails, the split's files in the hub cache's snapshot
        ds, _ = hub_rows(str(spec), None, split, offline_fix=OFFLINE_FIX)
    except OfflineError as exc:  # offline, a typo, a private set
        raise OfflineError(
            f"questions {spec!r} is not a file and cannot be loaded from the hub (split {split!r}): "
            f"{type(exc.__cause__ or exc).__name__}; give a local JSONL file instead"
        ) from exc
    return [(f"{spec}[{split}][{i}]", r) for i, r in enumerate(ds)]


def _folder_files(folder: Path, split: str) -> list[Path]:
    """The files of ``split`` in a questions folder, as ``datasets.load_dataset(folder, split=split)`` finds them: where
    its README.md ``configs:`` card declares them, by :func:`tasks.sources.local_copy` (the card logic that reads a
    ``hf download --local-dir`` copy of a hub data set); without such a card, by ``datasets``' own inference of the
    splits from the file names (``get_data_patterns``: ``test.jsonl``, ``data/test-00000-of-00001.parquet``,
    ``test/``, ``nq-test.jsonl``; ``dev*`` and ``valid*`` are split ``validation``; no split name at all is ``train``),
    hidden files skipped as ``datasets`` and a leaderboard's run key skip them. Its data files are those
    :mod:`tasks.sources` reads in a local copy (``.parquet``, ``.jsonl``, ``.json``, ``.csv``, ``.tsv``, gzipped too;
    lower-case extensions, as ``datasets`` reads them), in one format (:func:`tasks.sources._one_format`).

    Raises:
        ConfigError: the card cannot be read, or declares no file of the split (:func:`tasks.sources.local_copy`'s
        line, which names the splits it declares; a URL pattern, told to give the hub id as ``questions``); a folder
        without data files; a split the file names do not give (naming the splits they give); a split of several
        formats (:func:`tasks.sources._one_format`'s line: ``datasets`` would read them all as the most common one).
    """
    from datasets.data_files import DataFilesDict, EmptyDatasetError, get_data_patterns

    from .sources import _EXTENSIONS, _FORMATS, _card_config, _one_format, local_copy

    if _card_config(folder, None, local=True) is not None:  # the card declares the files (or refuses in one line)
        return local_copy(str(folder), None, split, hub_key="questions")[1]
    try:
        patterns = get_data_patterns(str(folder))
    except EmptyDatasetError:
        raise ConfigError(f"questions folder {folder}: no data file (give a folder with "
                          f"{split}.jsonl or data/{split}-00000-of-00001.parquet, as `hf download <repo> --repo-type "
                          "dataset --local-dir` leaves it, or a JSONL file)") from None
    found = {s: [Path(f) for f in fs if re.search(rf"\.{_EXTENSIONS}$", os.path.basename(f))]  # sources' files
             for s, fs in DataFilesDict.from_patterns(patterns, base_path=str(folder)).items()}
    if not found.get(split):
        have = {s: fs for s, fs in found.items() if fs}
        splits = "; ".join(f"{s}: {', '.join(os.path.relpath(f, folder) for f in fs[:2])}{' ...' * (len(fs) > 2)}"
                           for s, fs in have.items())
        choose = next(iter(have), None)
        raise ConfigError(
            f"questions folder {folder}: no split {split!r}; "
            + (f"its file names give {'only the split' if len(have) == 1 else 'the splits'} ({splits})" if have else
               f"it holds no {', '.join('.' + e for e in _FORMATS)} file of a split")
            + ", as datasets.load_dataset reads a folder without a README.md configs: card; "
            + (f"choose one with --metadata '{{\"hub_split\": \"{choose}\"}}' (in a leaderboard, the task YAML's "
               f"metadata: {{hub_split: {choose}}}), or " if choose else "")
            + f"name the question files {split}.jsonl or data/{split}-00000-of-00001.parquet")
    _one_format(folder, split, found[split])
    return found[split]


def _folder_rows(folder: Path, split: str) -> list[tuple[str, dict]]:
    """``[(where, row)]`` of a questions folder's split (:func:`_folder_files`), file after file, each row as
    ``datasets`` reads it: a ``.jsonl`` file as a questions file (``where`` = ``file:line``), any other by
    :func:`tasks.sources.hub_rows` (``where`` = ``file row i``, from 0)."""
    from .sources import hub_rows

    out: list[tuple[str, dict]] = []
    for f in _folder_files(folder, split):
        if f.name.removesuffix(".gz").endswith(".jsonl"):
            out.extend(_rows(str(f), split))
        elif TABLE_ENDING.search(f.name):
            out.extend(_table_rows(f))
        else:
            out.extend((f"{f} row {i}", r) for i, r in enumerate(hub_rows(str(f), None, split)[0]))
    return out


def _table_rows(f: Path) -> list[tuple[str, dict]]:
    """``[(where, row)]`` of one ``.csv``, ``.tsv`` or ``.parquet`` file (gzipped too, but ``.parquet``), as a folder's
    file of that format is read (:func:`tasks.sources._read_local`, as ``datasets`` reads it; ``where`` = ``file row
    i``, from 0), a CSV or TSV row's list fields read from their cells (:func:`_cell_lists`) and its id, question,
    answers and gold id cells read as written, not typed by pandas (:func:`tasks.sources._read_table`'s
    ``text_columns``: an id ``007`` was the id ``7``; ``datasets`` types them, but the rows are the same). A
    questions file of these formats given as ``questions`` itself was read as JSON Lines: its first line was
    "malformed JSON".

    Raises:
        DataError: a file that cannot be read as its format (:func:`tasks.sources._read_local`), a CSV/TSV file whose
        first row has more fields than its header or whose header names a column twice
        (:func:`tasks.sources._read_table`), a CSV/TSV cell of ``answers``
        or ``gold_docids`` that holds no JSON list (:func:`_cell_lists`).
    """
    from .sources import _read_local, _read_table

    if not TABLE_ENDING.search(f.name):
        return [(f"{f} row {i}", r) for i, r in enumerate(_read_local([f]))]
    # the fields read as written: pandas made an id 007 the integer 7 (silently another id) or, in a column with an
    # empty cell, the float 7.0 (refused as a float the file does not hold)
    text = (*QID_FIELDS, *OTHER_QID_FIELDS, "question", "answers", "gold_docids")
    rows = [(f"{f} row {i}", r) for i, r in enumerate(_read_table(f, text))]
    return [(where, _cell_lists(where, r, f)) for where, r in rows]


def _cell_lists(where: str, row: dict, f: Path) -> dict:
    """``row`` of a CSV or TSV file ``f`` with its ``answers`` and ``gold_docids`` cells read as the JSON lists they
    hold (a cell ``["Paris", "City of Light"]``; in a CSV file written ``"[""Paris"", ""City of Light""]"``): a CSV or
    TSV cell holds text or a number, never a list, so such a file's questions were all refused, and the fix shown,
    ``write ["Paris"]``, gave a cell that was again text. An empty cell (None) is left to :func:`load_questions`.

    Raises:
        DataError: a cell that holds no JSON list (``Paris``, ``1788``): ``where``, the field, the cell and the cell to
        write, quoted as the format needs it; a cell of valid JSON past Python's digit or recursion limit
        (:func:`retrieval.io.json_limit_error`, naming ``where`` and the field, not the cell).
    """
    import json

    csv = not f.name.removesuffix(".gz").endswith(".tsv")
    out = dict(row)
    for field in ("answers", "gold_docids"):
        cell = row.get(field)
        if cell is None or isinstance(cell, list):
            continue
        try:
            value = json.loads(cell) if isinstance(cell, str) else None
        except json.JSONDecodeError:
            value = None
        except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit: was a
            from retrieval.io import json_limit_error  # traceback, or 'not valid JSON' with the whole cell

            raise json_limit_error(exc, f"{where}: {field!r}", whole_file=True) from None
        if not isinstance(value, list):
            text = cell.strip() if isinstance(cell, str) else json.dumps(cell)
            meant_list = text.startswith("[")  # a JSON list that does not parse: not to be wrapped as one answer
            fixed = json.dumps(["Paris", "City of Light"] if meant_list or not text else [text], ensure_ascii=False)
            write = '"' + fixed.replace('"', '""') + '"' if csv else fixed
            raise DataError(f"{where}: {field!r} is {cell!r}, " + ("which is not valid JSON" if meant_list else
                                                                   "not a list")
                            + f": a {'CSV' if csv else 'TSV'} cell holds text, so write the list as JSON in the cell, "
                            + ("e.g. " if meant_list or not text else "") + write  # a blank cell: an example
                            + (" (as CSV quotes a cell with quotes)" if csv else "") + ", or give the questions as a "
                            "JSONL file")
        out[field] = value
    return out


def _missing(where: str, row: dict, field: str, hint: str) -> str:
    """The one-line error for a required ``field`` that ``row`` lacks (or holds as null): ``where``, the field and
    ``hint``, then the fields the line has and, for a field of another name that is close to it (``answer``,
    ``Answers``, ``questions``), a did-you-mean, as the corpus reader names a record's fields. A line of more than
    :data:`SHOWN_FIELDS` fields shows that many (sorted) and ``… (N more)``, the did-you-mean before them, so that
    neither the message runs to thousands of characters nor the hint comes after them."""
    from retrieval.errors import closest

    msg = f"{where}: missing field {field!r} ({hint})"
    if field in row:
        return f"{msg}: it is null"
    keys = [str(k) for k in row]
    others = [k for k in keys if k not in FIELDS]
    near = [k for k in others if k.strip().lower() == field] or [
        k for k in others if closest(k.strip().lower(), [field], n=1, cutoff=0.75)]
    did_you_mean = f" ({near[0]!r} is not read: did you mean {field!r}?)" if near else ""
    if len(keys) > SHOWN_FIELDS:
        shown = sorted(keys)[:SHOWN_FIELDS]
        return f"{msg}{did_you_mean}; the line has {shown} … ({len(keys) - SHOWN_FIELDS} more)"
    msg += f"; the line has {sorted(keys)}" if keys else "; the line is an empty object {}"
    return msg + did_you_mean


def _case_id_field(row: dict) -> str | None:
    """The first field of ``row``, not null, whose name is one of :data:`retrieval.corpus.QID_FIELDS` in other case or
    with spaces around it (``ID``, ``Id``, ``QID``, ``" id"``: a spreadsheet's or a CSV file's header): such a field is
    not read as the id (field names are read as written), so the questions got the automatic ids without a word;
    None when there is none."""
    names = {f.lower() for f in QID_FIELDS}
    return next((k for k, v in row.items() if isinstance(k, str) and k not in QID_FIELDS and v is not None
                 and k.strip().lower() in names), None)


def _answers_fix(answers: Any) -> str:
    """The fix an ``'answers' must be a list of strings`` error shows, JSON-quoted as the file needs it: ``; write
    ["Idrena Solvathe"]`` for the text ``"Idrena Solvathe"``, ``; write ["1788"]`` for the number 1788, ``; write
    ["a", "2"]`` for ``["a", 2]``; "" when there is nothing to quote (null, a mapping, only blanks/nulls)."""
    import json

    if isinstance(answers, bool) or answers is None or isinstance(answers, dict):
        return ""
    items = answers if isinstance(answers, list) else [answers]
    if not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in items):
        return ""
    fixed = [a if isinstance(a, str) else json.dumps(a) for a in items]
    return f"; write {json.dumps(fixed, ensure_ascii=False)}" if fixed and any(a.strip() for a in fixed) else ""


def load_questions(spec: Any, *, split: str | None = None) -> list[dict]:
    """Read and check bring-your-own questions (module docstring).

    Returns:
        rows ``{qid, question, answers, gold_docids, where}`` in file order (``where`` = ``path:line``; a folder's
        ``file:line`` or ``file row i``; a hub id's ``id[split][i]``).

    Raises:
        ConfigError: no ``questions`` given, a path that does not exist, a folder without the split or whose card
        cannot be read (:func:`_folder_files`). DataError: a CSV or TSV cell of ``answers`` or ``gold_docids`` that
        holds no JSON list (:func:`_cell_lists`), a missing or empty
        field, answers that are not a non-empty list of strings or only blank ones (no tokens,
        :func:`retrieval.metrics.answer_tokens`, e.g. ``["", "\\u200b"]``), a ``.json`` file holding one JSON array
        (not JSON Lines), an id with whitespace, an empty, float or bool
        id or gold id (:func:`retrieval.io.json_id`), a duplicate id (both lines named), a question, answer, id or
        gold id holding a lone surrogate (a JSON escape ``\\udfff`` without its pair:
        :func:`retrieval.io.check_unicode`). OfflineError: a hub id that cannot be loaded.
    """
    if spec in (None, ""):
        raise ConfigError(f"the rag_qa_* tasks read your questions: {EXAMPLE}")
    from retrieval.metrics import answer_tokens

    out: list[dict] = []
    first: dict[str, str] = {}
    for i, (where, r) in enumerate(_rows(str(spec), split or "test")):
        # a JSON "\udfff" escape without its pair: pyarrow refused it after the model load (an UnicodeEncodeError)
        check_unicode({k: r[k] for k in FIELDS if k in r}, where)
        q = r.get("question")
        if q is None:
            raise DataError(_missing(where, r, "question", 'each line needs "question" and "answers": [...]'))
        if not isinstance(q, str) or not q.strip():
            raise DataError(f"{where}: 'question' must be non-empty text, got {q!r}")
        if "answers" not in r or r["answers"] is None:
            raise DataError(_missing(where, r, "answers", 'a list of gold answer strings, e.g. ["Paris"]'))
        answers = r["answers"]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise DataError(f"{where}: 'answers' must be a list of strings, got {answers!r}{_answers_fix(answers)}")
        given, answers = answers, [a for a in answers if a.strip() and answer_tokens(a)]  # metrics' blank test
        if given and not answers:  # ["", "\u200b"]: no answer, which retrieval.metrics refuses
            raise DataError(f"{where}: 'answers' {given!r} hold only blank strings (spaces or characters that do not "
                            "print); give at least one gold answer")
        if not answers:
            raise DataError(f"{where}: 'answers' is empty; give at least one gold answer")
        if "gold_docids" not in r:  # a near miss would leave the questions without gold ids, silently
            from .utils import _one_edit

            near = next((k for k in r if isinstance(k, str) and _one_edit(k, "gold_docids")), None)
            if near is not None:
                raise DataError(f"{where}: unknown field {near!r} (did you mean 'gold_docids'?); the fields read: "
                                f"{'/'.join(QID_FIELDS)} (the id: the first not null), "
                                f"{', '.join(f for f in FIELDS if f != 'id')}")
        name = qid_field(r)  # the first not null of qid/id/qId/_id, as `tokrag retrieve --topics` reads it
        raw_id = None if name is None else r[name]
        if name is None:
            alias = other_qid_field(r) or _case_id_field(r)  # a field of ID_FIELDS, or "ID", "QID", "Id"
            if alias is not None and (str(spec), alias) not in _WARNED:
                _WARNED.add((str(spec), alias))
                log.warning("%s: questions without an id field (%s) have a %r field, which is not read as the id, so "
                            "they get the automatic ids q<index of the question, from 0> (the first question is q0, "
                            "whatever its line): rename the field to 'id' to keep yours", spec, "/".join(QID_FIELDS),
                            alias)
        else:
            check_unicode({name: raw_id}, where)
            # 'id' was the only field read before s55 f5: say so where a line's id is now another field's value
            # compared as ids (json_id: the integer 7 is "7"), so {"qid": 7, "id": "7"} keeps its id and is not warned
            other = "id" if name != "id" and r.get("id") is not None and str(r["id"]) != str(raw_id) else None
            if other is not None and (str(spec), f"{name}/{other}") not in _WARNED:
                _WARNED.add((str(spec), f"{name}/{other}"))
                log.warning("%s: %r is read as the id, not %r (%r vs %r; ids are read from the first not null of %s, "
                            "as tokrag retrieve --topics reads them): keep one of the two fields", where, name, other,
                            raw_id, r[other], "/".join(QID_FIELDS))
        if raw_id == "":  # json_id's refusal, with how to get the automatic id instead
            raise DataError(f'{where}: {name!r} is "": an id must not be empty; give the id, or write "{name}": null or '
                            f"leave the field out for the automatic id 'q{i}' (q<index of the question, from 0>)")
        if isinstance(raw_id, str) and _WS.search(raw_id):
            raise DataError(f"{where}: id {raw_id!r} contains whitespace; ids must be single tokens (TREC runs)")
        qid = f"q{i}" if raw_id is None else json_id(raw_id, f"{where}: {name!r}")  # the ids' rule (topics, runs, corpora)
        if qid in first:
            raise DataError(f"{where}: duplicate id {qid!r} (first at {first[qid]}); ids must be unique")
        first[qid] = where
        gold = r.get("gold_docids")
        gold = [] if gold is None else gold  # 0, false, "" or {} is refused below, not read as no gold ids
        if not isinstance(gold, list):
            raise DataError(f"{where}: 'gold_docids' must be a list of passage ids, got {gold!r}")
        gold = [json_id(g, f"{where}: gold_docids[{j}]") for j, g in enumerate(gold)]
        out.append({"qid": qid, "question": q, "answers": answers, "gold_docids": gold, "where": where})
    if not out:
        raise DataError(f"questions {spec}: no questions")
    return out


def check_gold_ids(rows: list[dict], corpus: Any) -> None:
    """Every ``gold_docids`` entry must be a passage of ``corpus`` (a :class:`retrieval.Corpus`): the retrieval
    layer's check (:func:`retrieval.corpus.check_gold_ids`, also run by ``tokrag retrieve eval``) over these rows.

    Raises:
        DataError: naming the first question (file and line) whose gold ids are missing, and the corpus.
    """
    from retrieval.corpus import check_gold_ids as check

    check({r["qid"]: r.get("gold_docids", []) for r in rows}, corpus, {r["qid"]: r["where"] for r in rows if r.get("where")})
