"""``retrieve eval --run <TREC run>`` without ``--corpus``: the line names only what scores this run (s59 r4, review
of n3's d93d4d7).

n3's line named the ctxs JSONL at the default place beside the run (``run.trec`` -> ``run.ctxs.jsonl``) whenever a
file was there, as "the ctxs JSONL written with it". A run written again with ``--output-ctxs`` elsewhere (or edited
since) leaves another run's ctxs there: following the advice scored other rankings (answer recall 1.0 where the run
itself scores 0.0). And a run over a prebuilt corpus was told to "pass that corpus as --corpus", which ``retrieve
eval`` refuses for a TREC run. Now the ctxs named is the one the run's ``.meta.json`` records, with its recorded
checksum; a prebuilt corpus is named as not local; a path with a space is shell-quoted.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from tokrag_model.cli import main

HEAD = "tokrag retrieve: error: --run {run}: a TREC run needs --corpus to score answer recall (passage texts)"


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def two_runs(tmp_path, monkeypatch):
    """``my runs/bm25.trec`` retrieved from p2.jsonl with ``--output-ctxs other.ctxs.jsonl``, after an earlier run
    over passages.jsonl left its ``my runs/bm25.ctxs.jsonl`` beside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    _write(tmp_path / "passages.jsonl", [{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."},
                                         {"id": "p2", "title": "Hamlet", "text": "Hamlet was written by Shakespeare."}])
    _write(tmp_path / "p2.jsonl", [{"id": "x1", "title": "Rome", "text": "Rome is the capital of Italy."},
                                   {"id": "x2", "title": "France", "text": "France has a capital."}])
    _write(tmp_path / "q.jsonl", [{"id": "q1", "question": "what is the capital of france", "answers": ["Paris"]}])
    for corpus, extra in (("passages.jsonl", []), ("p2.jsonl", ["--output-ctxs", "other.ctxs.jsonl"])):
        assert main(["retrieve", "--corpus", corpus, "--bm25", "--topics", "q.jsonl", "--hits", "2",
                     "--output", "my runs/bm25.trec", *extra]) == 0
    assert (tmp_path / "my runs" / "bm25.ctxs.jsonl").is_file()  # the earlier run's, left beside
    return tmp_path


def _scores(capsys, *args):
    capsys.readouterr()
    assert main(["retrieve", "eval", *args, "--topics", "q.jsonl", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_recorded_ctxs_is_named_not_another_runs(two_runs, capsys):
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", "my runs/bm25.trec", "--topics", "q.jsonl", "--json"]) == 2
    assert capsys.readouterr().err == (
        HEAD.format(run="my runs/bm25.trec") + "; it was retrieved from corpus 'p2.jsonl' (bm25.trec.meta.json): pass "
        "that corpus as --corpus, or score the ctxs JSONL written with it (--run 'my runs/../other.ctxs.jsonl'), which "
        "carries the passages\n")
    by_corpus = _scores(capsys, "--run", "my runs/bm25.trec", "--corpus", "p2.jsonl")
    assert _scores(capsys, "--run", "my runs/../other.ctxs.jsonl") == by_corpus
    assert by_corpus["answer_recall@1"] == 0.0 and by_corpus["num_queries"] == 1
    # the file n3's line named holds the earlier run's rankings: other figures
    assert _scores(capsys, "--run", "my runs/bm25.ctxs.jsonl")["answer_recall@1"] == 1.0


def test_a_changed_ctxs_is_not_named(two_runs, capsys):
    other = two_runs / "other.ctxs.jsonl"
    other.write_text(other.read_text().replace('"x1"', '"x9"'))
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", "my runs/bm25.trec", "--topics", "q.jsonl", "--json"]) == 2
    assert capsys.readouterr().err == (
        HEAD.format(run="my runs/bm25.trec") + "; it was retrieved from corpus 'p2.jsonl' (bm25.trec.meta.json): pass "
        "that corpus as --corpus\n")


@pytest.mark.parametrize("ctxs_there", [True, False])
def test_a_prebuilt_corpus_is_named_as_not_local(tmp_path, monkeypatch, capsys, ctxs_there):
    """A run over a prebuilt corpus (its .meta.json written as tokrag retrieve writes it): no --corpus advice."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 123 1 3.0 tokrag-bm25-00000000\n")
    ctxs = tmp_path / "run.ctxs.jsonl"
    _write(ctxs, [{"id": "q1", "question": "x", "ctxs": [{"id": "123", "title": "t", "text": "y"}]}])
    meta = {"config": {"corpus": {"name": "prebuilt:wikipedia-dpr-100w", "indexes": [], "size": 21015324}},
            "output": {"run": "run.trec", "ctxs": "run.ctxs.jsonl", "sha256": {
                "run": hashlib.sha256(run.read_bytes()).hexdigest(),
                "ctxs": hashlib.sha256(ctxs.read_bytes()).hexdigest()}}}
    (tmp_path / "run.trec.meta.json").write_text(json.dumps(meta))
    if not ctxs_there:
        ctxs.unlink()
    _write(tmp_path / "q.jsonl", [{"id": "q1", "question": "x", "answers": ["y"]}])
    assert main(["retrieve", "eval", "--run", "run.trec", "--topics", "q.jsonl", "--json"]) == 2
    way = ("score the ctxs JSONL written with it (--run run.ctxs.jsonl), which carries the passages" if ctxs_there
           else "score the ctxs JSONL tokrag retrieve wrote with it, which carries the passages")
    assert capsys.readouterr().err == (
        HEAD.format(run="run.trec") + "; it was retrieved from the prebuilt corpus 'prebuilt:wikipedia-dpr-100w' "
        "(run.trec.meta.json), whose passage texts are not local: " + way + "\n")
    if ctxs_there:
        assert _scores(capsys, "--run", "run.ctxs.jsonl")["answer_recall@1"] == 1.0
