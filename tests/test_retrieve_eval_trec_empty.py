"""``tokrag retrieve eval`` of a run written by ``tokrag retrieve``: a question retrieved without passages has a row in
``run.ctxs.jsonl`` but no line in ``run.trec``. DPR's top-k accuracy (Karpukhin et al. 2020, section 5.1) is over all
questions, so both files give the same figures: the TREC run's questions are those of the ctxs JSONL beside it when
it holds the same rankings. Without one, a WARNING says how many questions of the topics have no line and are left out.

Before, the TREC run dropped the question (answer_recall@1 0.5 over 2 queries) while the JSONL counted it as a miss
(0.3333 over 3).
"""

from __future__ import annotations

import json

import pytest

from retrieval.cache import jsonl_lines, trec_lines
from retrieval.cli import main

CORPUS = [("d1", "A", "Paris is the capital"), ("d2", "B", "Berlin")]
CTXS = {"q1": [{"docid": "d1", "title": "A", "text": "Paris is the capital", "score": 3.0, "rank": 1}],
        "q2": [{"docid": "d2", "title": "B", "text": "Berlin", "score": 2.0, "rank": 1}],
        "q3": []}
ANSWERS = {"q1": ["Paris"], "q2": ["Rome"], "q3": ["Madrid"]}


def _files(tmp_path, ctxs=CTXS, beside=True):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8")
    topics = tmp_path / "topics.jsonl"
    topics.write_text("".join(json.dumps({"qid": q, "question": q, "answers": a}) + "\n" for q, a in ANSWERS.items()),
                      encoding="utf-8")
    (tmp_path / "run.trec").write_text(trec_lines(CTXS, "t"), encoding="utf-8")  # as tokrag retrieve writes them
    if beside:
        (tmp_path / "run.ctxs.jsonl").write_text(jsonl_lines(ctxs, None), encoding="utf-8")
    return corpus, topics


def _eval(capsys, run, corpus, topics):
    assert main(["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics),
                 "--k", "1", "--json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_trec_and_ctxs_jsonl_of_one_run_give_the_same_figures(tmp_path, capsys):
    corpus, topics = _files(tmp_path)
    trec, err = _eval(capsys, tmp_path / "run.trec", corpus, topics)
    jsonl, _ = _eval(capsys, tmp_path / "run.ctxs.jsonl", corpus, topics)
    assert trec == jsonl == {"num_queries": 3, "answer_recall@1": pytest.approx(1 / 3)}
    assert "1 of them have no TREC line ('q3')" in err and "count as misses at every cut-off" in err
    assert "WARNING" not in err


def test_without_the_ctxs_jsonl_the_left_out_questions_are_named_in_a_warning(tmp_path, capsys):
    corpus, topics = _files(tmp_path, beside=False)
    m, err = _eval(capsys, tmp_path / "run.trec", corpus, topics)
    assert m == {"num_queries": 2, "answer_recall@1": 0.5}
    (line,) = [x for x in err.splitlines() if x.startswith("WARNING")]
    assert line.startswith("WARNING: 1 of the 3 questions of topics ") and "are excluded from the metrics" in line


def test_a_ctxs_jsonl_with_other_rankings_is_not_used(tmp_path, capsys):
    other = {**CTXS, "q2": [{**CTXS["q2"][0], "docid": "d1"}]}  # not the TREC run's ranking of q2
    corpus, topics = _files(tmp_path, ctxs=other)
    m, err = _eval(capsys, tmp_path / "run.trec", corpus, topics)
    assert m["num_queries"] == 2 and "WARNING: 1 of the 3 questions" in err


def test_every_question_with_a_line_is_quiet(tmp_path, capsys):
    full = {q: v for q, v in CTXS.items() if v}
    corpus, topics = _files(tmp_path, ctxs=full)
    topics.write_text("".join(json.dumps({"qid": q, "question": q, "answers": ANSWERS[q]}) + "\n" for q in full),
                      encoding="utf-8")
    m, err = _eval(capsys, tmp_path / "run.trec", corpus, topics)
    assert m == {"num_queries": 2, "answer_recall@1": 0.5}
    assert "WARNING" not in err and "no TREC line" not in err


def test_tokrag_retrieve_then_eval_of_either_file(tmp_path, tmp_path_factory, data_dir, capsys):
    """End to end: BM25 finds nothing for a query of unknown words; both files of the run score it as a miss."""
    env = ["--cache-dir", str(tmp_path_factory.mktemp("cache")), "--data-dir", str(data_dir)]
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"qid": "q1", "question": "Nobel prize physics", "answers": ["Nobel"]}) + "\n"
                      + json.dumps({"qid": "q2", "question": "zzqxv qqzzk", "answers": ["Paris"]}) + "\n", encoding="utf-8")
    out = tmp_path / "run.trec"
    assert main(["retrieve", "--corpus", "nq-dpr-1k", "--topics", str(topics), "--output", str(out), "--hits", "3", *env]) == 0
    capsys.readouterr()
    assert [json.loads(x)["ctxs"] for x in (tmp_path / "run.ctxs.jsonl").read_text().splitlines()][1] == []
    figures = []
    for run, corpus in ((out, ["--corpus", "nq-dpr-1k"]), (tmp_path / "run.ctxs.jsonl", [])):
        assert main(["retrieve", "eval", "--run", str(run), *corpus, "--topics", str(topics), "--k", "1", "--json", *env]) == 0
        figures.append(json.loads(capsys.readouterr().out))
    assert figures[0] == figures[1] == {"num_queries": 2, "answer_recall@1": 0.5}
