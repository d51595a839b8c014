"""Bad input that still got through retrieval's checks: each case is now one-line error raised where the bad value is
first seen, in the wording of the checks beside it (:mod:`retrieval.errors`).

* Hit counts, fusion depths and search threads above ``2**31 - 1``: Lucene and Pyserini take them as a Java
  ``int``, which pyjnius could not pass (a raw "No methods called batch_search ... matching your arguments" error);
  Anserini's indexer takes at most 32767 threads (a Java ``ForkJoinPool``; an ``IllegalArgumentException`` trace).
* ``retrieve(params={"k1": True})`` (or ``b``, ``alpha``): searched with 1.0, where ``Bm25Searcher(k1=True)`` is refused.
* ``python -m retrieval.cli``: a ConfigError/DataError was a Python traceback (exit status 1), where the console entry
  point ``tokrag retrieve`` prints one line (exit status 2).
* An expectation file's ``tolerance: .inf`` passed every figure (``.nan`` missed every one); an expected figure
  ``.nan`` or ``.inf`` missed whatever was measured.
* Metrics: a question whose answers are all blank strings (``[""]``, ``["  "]``) was scored, always a miss (blank
  answers never match; Pyserini's own ``has_answers`` would find one in every passage). A blank answer beside real
  ones is ignored, as before; no question of the shared data sets has a blank answer.
"""

from __future__ import annotations

import json
import re

import pytest

from retrieval import Corpus, Passage
from retrieval.errors import ConfigError
from tokrag_model.cli import main as tokrag

BIG = 2**31  # one more than a Java int holds
JAVA = "must be at most 2147483647 (Lucene and Pyserini take it as a Java int)"
JAVA_RE = re.escape(JAVA)
PASSAGES = [{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."},
            {"id": "p2", "title": "Berlin", "text": "Berlin is the capital of Germany."}]


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture()
def cache(tmp_path_factory):
    return ["--cache-dir", str(tmp_path_factory.getbasetemp() / "leftovers-cache")]


@pytest.fixture()
def corpus(tmp_path):
    return _jsonl(tmp_path / "corpus.jsonl", PASSAGES)


@pytest.mark.parametrize("opt", [["--hits", str(BIG)], ["--threads", str(BIG)], ["--hybrid", "--depth", str(BIG)]])
def test_retrieve_refuses_java_int_overflow(tmp_path, corpus, cache, capsys, opt):
    topics = _jsonl(tmp_path / "q.jsonl", [{"qid": "q1", "question": "capital of France"}])
    out = tmp_path / "run.trec"
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(out), *opt, *cache]) == 2
    err = capsys.readouterr().err
    assert f"tokrag retrieve: error: {opt[-2]} {BIG}: {JAVA}\n" in err and "Traceback" not in err and not out.exists()


def test_index_build_refuses_more_threads_than_anserini_takes(tmp_path, corpus, cache, capsys):
    target = tmp_path / "idx"
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(target), "--threads", "32768", *cache]) == 2
    err = capsys.readouterr().err
    assert ("--threads 32768: must be at most 32767 (Anserini indexes with a Java ForkJoinPool, which takes no more "
            "threads)") in err and "Traceback" not in err and not target.exists()


def test_api_refuses_java_int_overflow(tmp_path):
    from retrieval import retrieve
    from retrieval.bm25 import Bm25Searcher, build_bm25_index

    corpus = Corpus([Passage(p["id"], p["title"], p["text"]) for p in PASSAGES], name="two")
    with pytest.raises(ConfigError, match=f"^k={BIG}: {JAVA_RE}$"):
        retrieve(corpus, {"q": "capital"}, "bm25", k=BIG, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match=f"^depth={BIG}: {JAVA_RE}$"):
        retrieve(corpus, {"q": "capital"}, "hybrid", k=1, params={"depth": BIG}, cache_dir=tmp_path)
    searcher = Bm25Searcher(build_bm25_index(corpus, cache_dir=tmp_path), corpus=corpus)
    assert [d for d, _ in searcher.batch_search({"q": "capital France"}, k=BIG - 1, threads=BIG - 1)["q"]] == ["p1", "p2"]
    for call, what in ((lambda: searcher.search("capital", BIG), "k"),
                       (lambda: searcher.batch_search({"q": "capital"}, k=BIG), "k"),
                       (lambda: searcher.batch_search({"q": "capital"}, k=1, threads=BIG), "threads")):
        with pytest.raises(ConfigError, match=f"^{what}={BIG}: {JAVA_RE}$"):  # was a TokragError quoting pyjnius
            call()


@pytest.mark.parametrize("retriever, name, extra", [("bm25", "k1", {}), ("bm25", "b", {}), ("hybrid", "k1", {}),
                                                    ("hybrid", "alpha", {"fusion": "weighted"})])
@pytest.mark.parametrize("value", [True, False])
def test_api_refuses_a_bool_bm25_or_fusion_param(retriever, name, extra, value):
    """``retrieve(params={"k1": True})`` searched with k1 = 1.0 (``float(True)``) where ``Bm25Searcher(k1=True)`` is
    refused; now the one-line message of a nan k1, before any search."""
    from retrieval.api import _resolve_params

    with pytest.raises(ConfigError, match=rf"^{name}={value} \(--{name}\): {name} must be a finite number$"):
        _resolve_params(retriever, {name: value, **extra})
    assert _resolve_params(retriever, {name: 1, **extra})[0][name] == 1  # an int is still a number


def test_retrieve_refuses_k1_true_before_searching(tmp_path):
    from retrieval import retrieve

    corpus = Corpus([Passage(p["id"], p["title"], p["text"]) for p in PASSAGES], name="two")
    with pytest.raises(ConfigError, match=r"^k1=True \(--k1\): k1 must be a finite number$"):
        retrieve(corpus, {"q": "capital"}, "bm25", k=1, params={"k1": True}, cache_dir=tmp_path)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("args", [["--topics", "nq-oracle", "--output", "run.trec", "--hits", "0"],
                                  ["eval", "--run", "no-such-run.jsonl", "--topics", "nq-oracle"],
                                  ["retrieve", "eval", "--run", "no-such-run.jsonl", "--topics", "nq-oracle"],
                                  ["index", "build", "--corpus", "no-such-corpus.jsonl"]])
def test_python_m_retrieval_cli_is_the_entry_point(tmp_path, capsys, monkeypatch, args):
    import os
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)  # relative paths are named with the working directory
    cmd = args[0] if args[0] in ("index", "retrieve") else "retrieve"
    rc = tokrag([cmd, *(args[1:] if args[0] == cmd else args)])
    expected = capsys.readouterr().err
    assert rc == 2 and expected.startswith(f"tokrag {cmd}: error: ") and expected.count("\n") == 1
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout, wherever the test runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-m", "retrieval.cli", *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (2, expected)  # was 1 and a traceback


@pytest.mark.parametrize("where, value", [("top", ".inf"), ("top", ".nan"), ("condition", ".inf"), ("condition", "-.inf")])
def test_expect_refuses_a_non_finite_tolerance(tmp_path, capsys, where, value):
    from retrieval import expect

    top, cond = (f"tolerance: {value}\n", "") if where == "top" else ("", f"    tolerance: {value}\n")
    path = tmp_path / "e.yaml"
    path.write_text(f"corpus: nq-dpr-1k\ntopics: nq-oracle\n{top}conditions:\n  - name: bm25\n{cond}"
                    "    expected: {answer_recall@5: 0.9}\n")
    shown = {".inf": "inf", ".nan": "nan", "-.inf": "-inf"}[value]
    message = f"{path}: condition 'bm25': tolerance={shown} must be a finite number >= 0"
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):  # inf: every figure ok, |0.1 - 0.9| <= inf
        expect.load(path)
    assert tokrag(["retrieve", "eval", "--expect", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: {message}\n"


@pytest.mark.parametrize("value, shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf")])
def test_expect_refuses_a_non_finite_expected_figure(tmp_path, value, shown):
    from retrieval import expect

    path = tmp_path / "e.yaml"
    path.write_text(f"corpus: nq-dpr-1k\ntopics: nq-oracle\nconditions:\n  - name: bm25\n"
                    f"    expected: {{answer_recall@5: 0.5, gold@5: {value}}}\n")
    message = f"{path}: condition 'bm25': expected gold@5 = {shown} is not a finite number"
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        expect.load(path)
    path.write_text(path.read_text().replace(value, "0.25"))  # finite figures and tolerance read as before
    (c,) = expect.load(path)["conditions"]
    assert (c["expected"], c["tolerance"]) == ({"answer_recall@5": 0.5, "gold@5": 0.25}, 0.005)


@pytest.mark.parametrize("blank", [[""], ["  "], ["", "\t\n"], ["\u200b"], ["\u200b", "\u2060 "]])
def test_metrics_refuse_answers_that_are_all_blank(blank):
    from retrieval.metrics import answer_hits, answer_recall_at_k, evaluate_run

    run = {"a": [{"docid": "1", "text": "Paris is the capital"}], "b": [{"docid": "2", "text": "Berlin"}]}
    message = f"query 'b': answers {blank!r} hold only blank strings; drop the question or give its answers"
    for call in (lambda: answer_hits(run, {"a": ["Paris"], "b": blank}, 1),
                 lambda: answer_recall_at_k(run, {"a": ["Paris"], "b": blank}, 1),  # was 0.5: 'b' always a miss
                 lambda: evaluate_run(run, {"a": ["Paris"], "b": blank}, ks=(1,))):
        with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
            call()
    # a blank answer beside a real one never matches (the real one decides); an empty list is skipped
    assert evaluate_run(run, {"a": ["Paris", ""], "b": ["Rome", " "]}, ks=(1,)) == {"num_queries": 2, "answer_recall@1": 0.5}
    assert evaluate_run(run, {"a": ["Paris"], "b": []}, ks=(1,)) == {"num_queries": 1, "answer_recall@1": 1.0}


@pytest.mark.parametrize("bad", [1990, 19.5, None, b"1990"])
def test_metrics_refuse_an_answer_that_is_not_a_string(bad):
    """has_answer dropped it silently: {"b": [1990]} scored a miss (answer recall 0.5 here, 1.0 is right for "1990"),
    while tasks.metrics.qa_scores matches str(1990). Now refused, naming the query and the value."""
    from retrieval.metrics import answer_recall_at_k, evaluate_run

    run = {"a": [{"docid": "1", "text": "Paris is the capital"}], "b": [{"docid": "2", "text": "born in 1990"}]}
    message = f"query 'b': answer {bad!r} is of type {type(bad).__name__}, not a string (it would never match); give it as text"
    for call in (lambda: answer_recall_at_k(run, {"a": ["Paris"], "b": ["x", bad]}, 1),
                 lambda: evaluate_run(run, {"a": ["Paris"], "b": [bad]}, ks=(1,))):
        with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
            call()
    assert answer_recall_at_k(run, {"a": ["Paris"], "b": ["1990"]}, 1) == 1.0


def test_an_answer_of_invisible_characters_is_blank():
    """A zero-width space has no DPR tokens: Pyserini's has_answers found it in every passage, so ["\u200b"] was
    answer recall 1.0 and ["\u200b", "zzz"] matched "Berlin" (breaker); now it is blank like " " (refused when it is
    the only answer, ignored beside real ones). A one-character answer with a token (".") is still an answer."""
    from retrieval.metrics import answer_tokens, evaluate_run, has_answer

    assert answer_tokens("\u200b") == [] and answer_tokens(" Paris ") == ["paris"] and answer_tokens(".") == ["."]
    assert not has_answer("Berlin is the capital", ["\u200b"])
    assert not has_answer("Berlin is the capital", ["\u200b", "zzz"])
    assert has_answer("Berlin is the capital", ["\u200b", "berlin"])
    run = {"a": [{"docid": "1", "text": "Paris is the capital"}], "b": [{"docid": "2", "text": "Berlin"}]}
    assert evaluate_run(run, {"a": ["Paris"], "b": ["Rome", "\u200b"]}, ks=(1,)) == {"num_queries": 2, "answer_recall@1": 0.5}


def test_retrieve_eval_refuses_a_question_whose_answers_are_blank(tmp_path, capsys):
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "q1", "question": "capital of France", "answers": ["Paris"]},
                                           {"qid": "q2", "question": "capital of Germany", "answers": [" "]}])
    run = _jsonl(tmp_path / "run.ctxs.jsonl", [{"qid": "q1", "ctxs": [{"docid": "p1", "text": "Paris"}]},
                                               {"qid": "q2", "ctxs": [{"docid": "p2", "text": "Berlin"}]}])
    assert tokrag(["retrieve", "eval", "--run", run, "--topics", topics, "--k", "1"]) == 2  # was 0, recall@1 0.5
    assert capsys.readouterr().err == ("tokrag retrieve: error: query 'q2': answers [' '] hold only blank strings; "
                                       "drop the question or give its answers\n")


def test_shared_topic_sets_have_no_blank_answers(data_dir):
    """The refusal cannot break the named topic sets (nq-oracle, nq-open), which the tasks and benchmarks score."""
    from retrieval.cli import load_topics
    from retrieval.metrics import _scorable

    for name in ("nq-oracle", "nq-open"):
        _, answers, _ = load_topics(name, str(data_dir))
        assert len(_scorable(answers, "answers")) == len(answers) > 2000
