"""A lone surrogate in a QA data file (s53 r2, b2's finding; /work/scratch/s53/r2/probe_byo_surrogate.py,
probe_builtin_surrogate.py): a JSON escape ``"\\udfff"`` without its pair is valid JSON, so a bring-your-own answer
``"Paris\\udfff"`` passed ``tasks.byo.load_questions`` (the pre-load check) and the run failed after the model load
with an 80-line pyarrow ``UnicodeEncodeError`` from ``datasets.Dataset.from_list`` in ``tasks.utils.load_qa``; a
question or id the same (22-31 lines), and an NQ-open or WebQuestions data-folder file, the NQ-open oracle file and a
local copy given as ``hub_id`` too. Each reader now refuses it in one line naming the file, line and field
(``retrieval.io.check_unicode``), as the corpus reader does; the bring-your-own one before the model load."""

from __future__ import annotations

import gzip
import json

import pytest

from retrieval.errors import DataError
from tasks import data as qa_data
from tasks.byo import load_questions

WORDS = ["apple", "banana", "cherry", "dolphin", "eagle", "falcon", "giraffe", "hippo", "iguana", "jaguar", "koala",
         "lemur"]
TAIL = ("holds an invalid Unicode character ({}: a lone surrogate, half of a UTF-16 pair, as a JSON escape such as "
        "\\udfff without its partner writes it); remove the character or fix the text")


def _byo(folder, first_line: str):
    """12 questions over a 12-passage corpus (distinct words: BM25 finds each one's passage); the first line given."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "passages.jsonl").write_text("".join(
        json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"The {w} lives in region {i}; the {w} is famous."}) + "\n"
        for i, w in enumerate(WORDS)), encoding="utf-8")
    lines = [json.dumps({"id": f"q{i}", "question": f"where does the {w} live", "answers": [f"region {i}"]})
             for i, w in enumerate(WORDS)]
    (folder / "q.jsonl").write_text("\n".join([first_line] + lines[1:]) + "\n", encoding="utf-8")
    return folder / "q.jsonl", folder / "passages.jsonl"


# the JSON text of line 1 (the escape written as the file holds it) -> the field and the place named
CASES = {
    "answer": ('{"id": "q0", "question": "where does the apple live", "answers": ["region 0", "Paris\\udfff"]}',
               "'answers'[1]", "U+DFFF at character 6"),
    "question": ('{"id": "q0", "question": "where does the apple live\\ud800", "answers": ["region 0"]}',
                 "'question'", "U+D800 at character 26"),
    "id": ('{"id": "q\\udfff", "question": "where does the apple live", "answers": ["region 0"]}',
           "'id'", "U+DFFF at character 2"),
    "gold id": ('{"id": "q0", "question": "where does the apple live", "answers": ["region 0"], '
                '"gold_docids": ["p0", "p\\udc00"]}', "'gold_docids'[1]", "U+DC00 at character 2"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_byo_file_with_a_lone_surrogate_is_one_line_naming_the_field(tmp_path, case):
    line, field, place = CASES[case]
    q, _ = _byo(tmp_path, line)
    with pytest.raises(DataError) as exc:
        load_questions(str(q))  # was: 12 rows accepted; the task build then raised UnicodeEncodeError
    assert str(exc.value) == f"{q}:1: {field} " + TAIL.format(place)


def test_the_run_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    """``tokrag eval`` (lm-eval's CLI) with such an answer stops at the pre-load check, not after the model load."""
    from tests.eval_helpers import stop_at_model_load
    from tokrag_model.eval_cli import main

    def loaded(*args, **kwargs):
        raise AssertionError("the model load was reached")

    stop_at_model_load(monkeypatch, loaded)
    q, c = _byo(tmp_path, CASES["answer"][0])
    with pytest.raises(DataError) as exc:
        main(["--model", "rag-none", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--tasks", "rag_qa_bm25", "--limit", "2",
              "--metadata", json.dumps({"questions": str(q), "corpus": str(c), "hits": 2})])
    assert str(exc.value) == f"{q}:1: 'answers'[1] " + TAIL.format("U+DFFF at character 6")
    assert getattr(exc.value, "_tokrag_before_load", False) is True


def test_a_surrogate_pair_is_a_character_and_is_kept(tmp_path):
    """``"\\ud83d\\ude00"`` is one character (U+1F600), valid UTF-8: read as before."""
    q, _ = _byo(tmp_path, '{"id": "q0", "question": "where does the apple live \\ud83d\\ude00", '
                          '"answers": ["region 0 \\ud83d\\ude00"]}')
    rows = load_questions(str(q))
    assert len(rows) == 12
    assert rows[0]["question"] == "where does the apple live \U0001F600"
    assert rows[0]["answers"] == ["region 0 \U0001F600"]


def _nq_lines(bad: str) -> str:
    lines = [json.dumps({"question": f"where does the {w} live", "answer": [f"region {i}"]}) for i, w in enumerate(WORDS)]
    return "\n".join([bad] + lines[1:]) + "\n"


def test_nq_open_in_a_data_folder_and_as_a_local_copy(tmp_path):
    bad = '{"question": "where does the apple live", "answer": ["region\\udfff 0"]}'
    data = tmp_path / "data" / "nq_open" / "NQ-open.dev.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text(_nq_lines(bad), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        qa_data.load_qa_split("nq_open", "test", data_dir=tmp_path / "data")  # was: rows, then pyarrow's error
    assert str(exc.value) == f"{data}:1: 'answer'[0] " + TAIL.format("U+DFFF at character 7")
    copy = tmp_path / "copy" / "nq_open" / "validation.jsonl"  # the hub's layout, given as hub_id (tasks.sources)
    copy.parent.mkdir(parents=True)
    copy.write_text(_nq_lines(bad), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        qa_data.load_nq_open(hub_id=str(tmp_path / "copy"))
    assert str(exc.value) == f"{copy}:1: 'answer'[0] " + TAIL.format("U+DFFF at character 7")
    sound = json.dumps({"question": "where does the apple live", "answer": ["region 0"]})
    copy.write_text(_nq_lines(sound), encoding="utf-8")  # a sound copy reads as before
    assert [r["answers"] for r in qa_data.load_nq_open(hub_id=str(tmp_path / "copy"))][:2] == [["region 0"], ["region 1"]]


def test_webquestions_and_a_json_local_copy(tmp_path):
    items = [{"qId": f"wq{i}", "qText": f"where does the {w} live", "answers": [f"region {i}"]} for i, w in enumerate(WORDS)]
    text = json.dumps(items).replace('"qText": "where does the banana live"', '"qText": "where does the banana\\udfff live"')
    webq = tmp_path / "data" / "webquestions" / "test.json"
    webq.parent.mkdir(parents=True)
    webq.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as exc:
        qa_data.load_webq(tmp_path / "data")
    assert str(exc.value) == f"{webq} item 1: 'qText' " + TAIL.format("U+DFFF at character 22")
    copy = tmp_path / "copy" / "validation.json"  # a local copy's JSON array, given as hub_id
    copy.parent.mkdir(parents=True)
    copy.write_text(text.replace('"qText"', '"question"').replace('"answers"', '"answer"'), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        qa_data.load_nq_open(hub_id=str(tmp_path / "copy"))
    assert str(exc.value) == f"{copy} row 1: 'question' " + TAIL.format("U+DFFF at character 22")


def test_the_nq_oracle_file(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    oracle = tmp_path / "oracle.jsonl"
    rows = [{"question": f"where does the {w} live", "answers": [f"region {i}"],
             "ctxs": [{"title": f"T{i}", "text": f"The {w} lives in region {i}."}]} for i, w in enumerate(WORDS[:3])]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    assert [r["answers"] for r in qa_data.load_nq_oracle(oracle_file=_write(oracle, text))] == [
        ["region 0"], ["region 1"], ["region 2"]]
    with pytest.raises(DataError) as exc:
        qa_data.load_nq_oracle(oracle_file=_write(oracle, text.replace('"T2"', '"T\\ud8002"')))
    assert str(exc.value) == f"{oracle}:3: 'ctxs'[0]['title'] " + TAIL.format("U+D800 at character 2")
    from retrieval.corpus import named_corpus  # the data folder's oracle file, read for the nq-wiki-12k corpus

    folder = tmp_path / "data" / "nq_open_oracle"
    folder.mkdir(parents=True)
    (folder / "nq-open-oracle.jsonl.gz").write_bytes(gzip.compress(text.replace('"T2"', '"T\\ud8002"').encode()))
    with pytest.raises(DataError) as exc:  # was: UnicodeEncodeError from nq_gold_docid's hash
        named_corpus("nq-wiki-12k", tmp_path / "data")
    assert str(exc.value) == (f"{folder / 'nq-open-oracle.jsonl.gz'}:3: 'ctxs'[0]['title'] "
                              + TAIL.format("U+D800 at character 2"))


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path
