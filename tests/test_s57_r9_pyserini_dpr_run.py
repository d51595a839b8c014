"""``tokrag retrieve eval`` on Pyserini's DPR-style run (``convert_trec_run_to_dpr_retrieval_run``: one pretty-printed
JSON object keyed by question id, ``{question, answers, contexts: [{docid, score, text, has_answer}]}``) says what the
file is and the jq command that converts it (s57 r9, reviewing h1's ctxs reader for false refusals of real inputs). It
was "<file>:1: malformed JSON (Expecting property name enclosed in double quotes at column 2); fix or remove the line",
though the file is sound: no line of it can be fixed. A JSON Lines run reads as before."""

from __future__ import annotations

import gzip
import json
import shlex
import shutil
import subprocess

import pytest

from tokrag_model.cli import main

CORPUS = [("d1", "Paris", "Paris is the capital of France."), ("d2", "Berlin", "Berlin is the capital of Germany.")]
TOPIC = {"qid": "q1", "question": "capital of France", "answers": ["Paris"], "gold_docids": ["d1"]}
PYSERINI = {"q1": {"question": "capital of France", "answers": ["Paris"],
                   "contexts": [{"docid": "d2", "score": 3.0, "text": "Berlin is the capital of Germany.", "has_answer": False},
                                {"docid": "d1", "score": 2.0, "text": "Paris is the capital of France.", "has_answer": True}]}}
JQ = "'to_entries[] | {qid: .key, question: .value.question, ctxs: .value.contexts}'"


def _eval(tmp_path, capsys, run):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8")
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps(TOPIC) + "\n", encoding="utf-8")
    code = main(["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics),
                 "--k", "1", "2", "--json"])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if code == 0 else None), cap.err


@pytest.mark.parametrize("name", ["dpr run.json", "run.json.gz"])
def test_pyserini_dpr_run_is_one_line_with_the_command_that_converts_it(tmp_path, capsys, name):
    run = tmp_path / name
    text = json.dumps(PYSERINI, indent=4).encode()
    run.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    code, m, err = _eval(tmp_path, capsys, run)
    out = tmp_path / name.removesuffix(".gz").replace(".json", ".jsonl")
    command = (f"gunzip -c {shlex.quote(str(run))} | jq -c {JQ}" if name.endswith(".gz")
               else f"jq -c {JQ} {shlex.quote(str(run))}") + f" > {shlex.quote(str(out))}"
    assert (code, m) == (2, None)
    assert err == (f"tokrag retrieve: error: {run}: one JSON object keyed by question id (Pyserini's DPR-style run, "
                   "'contexts' per question), not JSON Lines; convert it to one {qid, question, ctxs} per line: "
                   f"{command}\n")
    if shutil.which("jq"):  # the command as printed, then the converted run scores its list order
        subprocess.run(command, shell=True, check=True)
        code, m, err = _eval(tmp_path, capsys, out)
        assert code == 0 and m == {"answer_recall@1": 0.0, "answer_recall@2": 1.0, "gold@1": 0.0, "gold@2": 1.0,
                                   "mrr": 0.5, "num_queries": 1}, err


def test_another_pretty_printed_object_is_named_as_such(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"qid": "q1", "ctxs": [{"docid": "d1", "text": "Paris is the capital of France."}]},
                              indent=2), encoding="utf-8")
    code, m, err = _eval(tmp_path, capsys, run)
    assert (code, m) == (2, None)
    assert err == (f"tokrag retrieve: error: {run}: a pretty-printed JSON object, not JSON Lines; write one {{qid, ctxs}} "
                   f"object per line (for instance: jq -c . {shlex.quote(str(run))} > {shlex.quote(str(tmp_path / 'run.jsonl'))})\n")


def test_a_json_lines_run_reads_as_before(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"qid": "q1", "ctxs": PYSERINI["q1"]["contexts"]}) + "\n", encoding="utf-8")
    code, m, err = _eval(tmp_path, capsys, run)
    assert code == 0 and m["mrr"] == 0.5 and m["gold@2"] == 1.0, err
