"""``tokrag retrieve eval --run run.trec --corpus C`` takes the passage texts from C. It took them from any C: with
another corpus than the run's, answer recall 1.0 became 0.0 without a word. When ``run.trec.meta.json`` (written by
``tokrag retrieve`` with the file) records the run's corpus, a --corpus with another fingerprint is now refused;
without that record (or for a file changed since) nothing is checked, as before."""

from __future__ import annotations

import json
import shutil

import pytest

from retrieval.cli import main
from retrieval.errors import DataError

PASSAGES = [
    {"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600."},
    {"id": "p2", "title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"id": "p3", "title": "Mona Lisa", "text": "The Mona Lisa is a portrait painted by Leonardo da Vinci."},
]
TOPICS = [{"id": "q1", "question": "who wrote the tragedy hamlet", "answers": ["Shakespeare"]}]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("evalcorpus")
    corpus, other, topics = root / "passages.jsonl", root / "other.jsonl", root / "topics.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    edited = [dict(p, text=p["text"].replace("William Shakespeare", "an unknown author")) for p in PASSAGES]
    other.write_text("".join(json.dumps(p) + "\n" for p in edited), encoding="utf-8")
    topics.write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    run = root / "run" / "run.trec"
    assert main(["retrieve", "--corpus", str(corpus), "--bm25", "--topics", str(topics), "--hits", "1",
                 "--output", str(run), "--cache-dir", str(root / "cache")]) == 0
    return {"root": root, "corpus": corpus, "other": other, "topics": topics, "run": run}


def _recall(run, corpus, topics, capsys) -> float:
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics), "--k", "1", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["answer_recall@1"]


def test_trec_run_scored_with_another_corpus_is_refused(made, capsys):
    run, other = made["run"], made["other"]
    assert _recall(run, made["corpus"], made["topics"], capsys) == 1.0  # the corpus it was made from
    with pytest.raises(DataError, match=rf"^--run {run} was retrieved from corpus 'passages.jsonl' \(fingerprint [0-9a-f]{{16}}, "
                       rf"recorded in run.trec.meta.json\) but --corpus {other} has fingerprint [0-9a-f]{{16}}, .*pass the "
                       r"corpus the run was made from, or score the ctxs JSONL written with the run \(run.ctxs.jsonl\) instead$"):
        main(["retrieve", "eval", "--run", str(run), "--corpus", str(other), "--topics", str(made["topics"]), "--k", "1"])


def test_without_the_runs_record_nothing_is_checked(made, capsys):
    bare = made["root"] / "bare" / "run.trec"  # a TREC file without its .meta.json: the corpus is taken as given
    bare.parent.mkdir()
    shutil.copy(made["run"], bare)
    assert _recall(bare, made["other"], made["topics"], capsys) == 0.0
    changed = made["root"] / "changed" / "run.trec"  # a file changed since its record was written: the record is not its
    shutil.copytree(made["run"].parent, changed.parent)
    changed.write_text(changed.read_text().replace("tokrag-bm25", "edited"), encoding="utf-8")
    assert _recall(changed, made["other"], made["topics"], capsys) == 0.0
