"""More readers of valid JSON past Python's digit or recursion limit (s60 j1, after 2d46b56). Before, on e1a5527's
tree:

* a bring-your-own CSV/TSV ``answers`` cell nested too deep: a RecursionError traceback; one holding a 5001-digit
  integer: ``'answers' is '[1000...` with the whole cell written out, ``which is not valid JSON`` (it is valid).
  Now :func:`retrieval.io.json_limit_error`'s line naming the file, row and field, not the cell.
* ``tokrag leaderboard report --out DIR`` over a ``DIR/leaderboard.json`` nested too deep: a RecursionError
  traceback; with a long integer the refusal quoted Python's ``use sys.set_int_max_str_digits()`` advice. Now the
  refusal names the file and json_limit_error's reason (exit 2, nothing written, as for any unreadable report).
* the reads that skip a malformed file (an index folder's ``tokrag_index.json``, the file-hash memo, the BM25 checksum
  record, the weights fingerprint sidecar): a RecursionError traceback; now skipped as malformed.
"""

from __future__ import annotations


import pytest
from json_limit_helpers import BIG, DEEP, DIGITS, NESTED, limits  # noqa: F401 (limits: an autouse fixture)
from leaderboard_helpers import TOY, write_spec

from retrieval.errors import DataError
from tokrag_model.cli import main


@pytest.mark.parametrize("cell, why", [(DEEP, NESTED), ("[" + BIG + "]", DIGITS)], ids=["deep", "digits"])
def test_a_byo_csv_cell_is_one_line(tmp_path, cell, why):
    from tasks.byo import load_questions

    f = tmp_path / "questions.csv"
    f.write_text('id,question,answers\nq1,what is it,"%s"\n' % cell, encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_questions(str(f))
    assert str(err.value) == f"{f} row 0: 'answers': {why}"


def test_a_byo_cell_that_is_not_json_is_worded_as_before(tmp_path):
    from tasks.byo import load_questions

    f = tmp_path / "questions.csv"
    f.write_text('id,question,answers\nq1,what is it,Paris\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"row 0: 'answers' is 'Paris', "):
        load_questions(str(f))


@pytest.mark.parametrize("text, why", [(DEEP, NESTED), ('{"x": %s}' % BIG, DIGITS)], ids=["deep", "digits"])
def test_report_over_an_unreadable_leaderboard_json_is_one_line(tmp_path, capsys, text, why):
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3, methods=[{"name": "standard", "model": TOY}])
    out = tmp_path / "report"
    out.mkdir()
    (out / "leaderboard.json").write_text(text, encoding="utf-8")
    capsys.readouterr()
    # no run needed: the folder's report is read before any cell
    assert main(["leaderboard", "report", str(spec), "--runs-dir", str(tmp_path / "runs"), "--out", str(out),
                 "--allow-missing"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"tokrag leaderboard: error: the report folder {out} holds a leaderboard.json that cannot be "
                          f"read as a report ({out / 'leaderboard.json'}: {why}); nothing written: ")
    assert "\n" not in err and (out / "leaderboard.json").read_text(encoding="utf-8") == text


def test_the_tolerant_reads_skip_a_deep_file(tmp_path):
    from retrieval.bm25 import _checksum_entries
    from retrieval.io import HashMemo, read_index_meta

    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "tokrag_index.json").write_text(DEEP, encoding="utf-8")
    assert read_index_meta(tmp_path / "idx") is None
    (tmp_path / "memo.json").write_text(DEEP, encoding="utf-8")
    assert HashMemo(tmp_path / "memo.json").table == {}
    (tmp_path / "checksums.json").write_text(DEEP, encoding="utf-8")
    assert _checksum_entries(tmp_path / "checksums.json") == {}


def test_a_deep_weights_fingerprint_sidecar_is_recomputed(tmp_path, monkeypatch):
    from tokrag_model.loading import weights_fingerprint

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.safetensors").write_bytes(b"weights")
    want = weights_fingerprint(tmp_path / "m")
    (tmp_path / "m" / ".tokrag_fingerprint.json").write_text(DEEP, encoding="utf-8")
    assert weights_fingerprint(tmp_path / "m") == want
