"""``tokrag retrieve eval`` on a TREC run whose first line starts with a UTF-8 byte order mark (Windows editors write
one): the mark is skipped, as the corpus, topics and ctxs JSONL readers skip it, plain or ``.gz``.

Before, the first qid was read as ``'\\ufeffq1'``: the run scored MRR 0.0 (1.0 without the mark) with only a note of
"qids that are not in" the topics, and a one-query run stopped with "no qid of run.trec.gz has answers or gold ids",
naming neither. The error now shows the run's qids with repr(), and the note the unknown qids
holding a character that does not print. The other readers a run is scored with
(topics JSONL and TSV, a ctxs JSONL run) are checked here too.
"""

from __future__ import annotations

import gzip
import json

import pytest

from retrieval.cli import main
from retrieval.errors import DataError

BOM = b"\xef\xbb\xbf"
CORPUS = [("d1", "Paris", "Paris is the capital of France."), ("d2", "Berlin", "Berlin is the capital of Germany.")]
TOPIC = {"qid": "q1", "question": "capital of France", "answers": ["Paris"], "gold_docids": ["d1"]}


def _argv(tmp_path, run, topics_bytes=None):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8")
    topics = tmp_path / "topics.jsonl"
    topics.write_bytes(topics_bytes if topics_bytes is not None else (json.dumps(TOPIC) + "\n").encode())
    return ["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics), "--k", "1", "--json"]


# d2 first in the file and by rank, but d1 scores higher: the gold passage is at rank 1 only if q1 is read as 'q1'
TREC = b"q1 Q0 d1 1 3.0 run\nq1 Q0 d2 2 2.0 run\n"


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz"])
def test_trec_run_with_a_byte_order_mark_scores_as_without(tmp_path, capsys, name):
    run = tmp_path / name
    data = BOM + TREC
    run.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert main(_argv(tmp_path, run)) == 0
    out = capsys.readouterr()
    m = json.loads(out.out)
    assert m == {"answer_recall@1": 1.0, "gold@1": 1.0, "mrr": 1.0, "num_queries": 1}
    assert "not in them" not in out.err


def test_trec_run_with_a_byte_order_mark_in_two_queries(tmp_path, capsys):
    # two queries: before, q1 was an unknown '\ufeffq1' and the metrics were over q2 alone
    run = tmp_path / "run.trec"
    run.write_bytes(BOM + TREC + b"q2 Q0 d2 1 1.0 run\n")
    q2 = {"qid": "q2", "question": "capital of Germany", "answers": ["Berlin"], "gold_docids": ["d1"]}
    topics = "".join(json.dumps(t) + "\n" for t in (TOPIC, q2)).encode()
    assert main(_argv(tmp_path, run, topics)) == 0
    out = capsys.readouterr()
    m = json.loads(out.out)
    assert m["num_queries"] == 2 and m["mrr"] == 0.5 and m["answer_recall@1"] == 1.0
    assert "note:" not in out.err


def test_unknown_qids_are_shown_with_repr(tmp_path, capsys):
    # a qid the topics lack (here a mark in the middle of the file, which is not skipped) is named, visibly
    run = tmp_path / "run.trec"
    run.write_bytes(TREC + b"\xef\xbb\xbfq2 Q0 d2 1 1.0 run\n")
    assert main(_argv(tmp_path, run)) == 0
    err = capsys.readouterr().err
    assert "1 qids that are not in them (with characters that do not print: '\\ufeffq2')" in err


def test_no_known_qid_error_names_the_run_qids(tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_bytes(b"Q1 Q0 d1 1 3.0 run\n")
    with pytest.raises(DataError) as exc:
        main(_argv(tmp_path, run))
    assert f"no qid of {run} ('Q1') has answers or gold ids" in str(exc.value)


def test_topics_and_ctxs_run_with_a_byte_order_mark(tmp_path, capsys):
    # the other readers a run is scored with already skip the mark: topics JSONL, and a ctxs JSONL run
    run = tmp_path / "run.ctxs.jsonl"
    run.write_bytes(BOM + json.dumps({"qid": "q1", "ctxs": [{"id": "d1", "title": "Paris", "text": "Paris"}]}).encode() + b"\n")
    assert main(_argv(tmp_path, run, BOM + (json.dumps(TOPIC) + "\n").encode())) == 0
    assert json.loads(capsys.readouterr().out)["mrr"] == 1.0


def test_tsv_topics_with_a_byte_order_mark(tmp_path):
    from retrieval.cli import load_topics

    p = tmp_path / "q.tsv"
    p.write_bytes(BOM + b"q1\tcapital of France\n")
    assert load_topics(str(p))[0] == {"q1": "capital of France"}
