"""``tokrag retrieve --output run.trec.gz`` wrote the TREC run as plain text under a gzip name, and ``retrieve eval
--run run.trec.gz`` then refused tokrag's own file as "the gzip file is truncated or corrupt"; ``--output run.jsonl``
(or ``run.ctxs.jsonl``) wrote a TREC run that eval reads as a ctxs run ("malformed JSON"), and ``--output-ctxs
run.txt`` a ctxs JSONL that eval reads as a TREC run ("rank '"what' is not an integer"); all exited 0 (s58 b2). Such
names are now refused before the search, naming the option, the path and a name to give instead; nothing is
written."""

import json

import pytest
from retrieval_helpers import write_jsonl

from retrieval.errors import ConfigError


@pytest.fixture
def inputs(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "p1", "title": "A", "contents": "The sky is blue."}])
    topics = write_jsonl(tmp_path / "topics.jsonl", [{"id": "q1", "question": "what colour is the sky",
                                                      "answers": ["blue"]}])
    return ["retrieve", "--corpus", str(corpus), "--topics", str(topics), "--hits", "1",
            "--cache-dir", str(tmp_path / "cache")]


@pytest.mark.parametrize("given, expected", [
    (["--output", "r.trec.gz"], "--output {d}/r.trec.gz: a .gz name, but tokrag retrieve writes the TREC run as plain "
     "text (retrieve eval would read it as compressed and refuse it); give a name without .gz (e.g. {d}/r.trec) and "
     "compress the file afterwards if needed"),
    (["--output", "r.trec", "--output-ctxs", "r.ctxs.jsonl.gz"], "--output-ctxs {d}/r.ctxs.jsonl.gz: a .gz name, but "
     "tokrag retrieve writes the ctxs JSON Lines as plain text (retrieve eval would read it as compressed and refuse "
     "it); give a name without .gz (e.g. {d}/r.ctxs.jsonl) and compress the file afterwards if needed"),
    (["--output", "r.ctxs.jsonl"], "--output {d}/r.ctxs.jsonl: names the TREC run, but retrieve eval reads a name "
     "ending in .jsonl as a ctxs JSON run; give it a name such as {d}/r.trec (the ctxs JSONL goes beside it, "
     "{d}/r.ctxs.jsonl)"),
    (["--output", "r.trec", "--output-ctxs", "r.txt"], "--output-ctxs {d}/r.txt: names the ctxs JSON Lines, but "
     "retrieve eval reads a name ending in .txt as a TREC run; give it a name such as {d}/r.ctxs.jsonl"),
])
def test_an_output_name_eval_reads_as_another_kind_is_refused(tmp_path, inputs, given, expected):
    from retrieval.cli import main

    out = tmp_path / "out"
    args = [str(out / v) if v.startswith("r.") else v for v in given]
    with pytest.raises(ConfigError) as exc:
        main([*inputs, *args])
    assert str(exc.value) == expected.format(d=out)
    assert not out.exists()


def test_a_txt_run_and_its_ctxs_beside_still_round_trip(tmp_path, inputs, capsys):
    from retrieval.cli import main

    run = tmp_path / "out" / "r.txt"
    assert main([*inputs, "--output", str(run)]) == 0
    assert run.read_text(encoding="utf-8").split()[:3] == ["q1", "Q0", "p1"]
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", str(tmp_path / "out" / "r.ctxs.jsonl"), "--topics", inputs[4],
                 "--k", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer_recall@1"] == 1.0
