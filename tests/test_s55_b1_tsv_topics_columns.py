"""TSV topics (Pyserini's ``qid<TAB>query``) with more than two columns or a header line (breaker b1, s55).

``load_queries`` split a TSV line at its first tab only: a third column (an answers column, as DPR's ``qas`` files
carry; a title) became part of the query text and was searched as query words, so a run over
``1<TAB>who wrote hamlet<TAB>["Shakespeare"]`` searched for the answer itself, silently; a header line
``qid<TAB>query`` became a question with the id ``qid``. Both are now a one-line DataError naming the file and line.
A trailing tab (an empty extra field) is dropped, as the corpus reader drops it (it was kept in the query text).
"""

from __future__ import annotations

import pytest

from tokrag_model.cli import main as tokrag
from retrieval.corpus import load_queries
from retrieval.errors import DataError


def _topics(tmp_path, text: str, name: str = "topics.tsv"):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8"))
    return p


@pytest.mark.parametrize("name", ["topics.tsv", "topics.txt"])
def test_a_third_column_is_refused_not_searched(tmp_path, name) -> None:
    p = _topics(tmp_path, '1\twho wrote hamlet\n2\twho wrote faust\t["Goethe"]\n', name)
    with pytest.raises(DataError) as exc:
        load_queries(p)
    assert str(exc.value) == (f"{p}:2: expected 2 tab-separated fields (qid, query text), got 3; TSV topics hold no "
                              'answers or other columns: keep the first two, or write JSONL topics ({"qid", '
                              '"question", "answers"}), or replace the tab inside the query with a space')


def test_a_header_line_is_refused_not_read_as_a_question(tmp_path) -> None:
    p = _topics(tmp_path, "\ufeffQID\tQuery\r\n1\twho wrote hamlet\r\n")
    with pytest.raises(DataError) as exc:
        load_queries(p)
    assert str(exc.value) == (f"{p}:1: 'QID\\tQuery' is a header line; TSV topics (Pyserini's qid<TAB>query) have "
                              "none: remove the line (it was read as a question)")


def test_trailing_tabs_are_dropped_and_a_question_about_queries_is_read(tmp_path) -> None:
    p = _topics(tmp_path, "1\twho wrote hamlet\t\t\r\n\r\n2\tquery\n7\tqid\n")  # 'query' as a question after line 1
    assert load_queries(p) == {"1": "who wrote hamlet", "2": "query", "7": "qid"}


def test_retrieve_refuses_the_answers_column_in_one_line(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "Hamlet was written by Shakespeare."}\n', encoding="utf-8")
    p = _topics(tmp_path, '1\twho wrote hamlet\t["Shakespeare"]\n')
    rc = tokrag(["retrieve", "--corpus", str(corpus), "--topics", str(p), "--output", str(tmp_path / "run.trec"),
                 "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip().splitlines() == [f"tokrag retrieve: error: {p}:1: expected 2 tab-separated fields (qid, query "
                                        'text), got 3; TSV topics hold no answers or other columns: keep the first '
                                        'two, or write JSONL topics ({"qid", "question", "answers"}), or replace the '
                                        "tab inside the query with a space"]
    assert not (tmp_path / "run.trec").exists()
