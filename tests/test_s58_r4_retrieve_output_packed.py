"""``tokrag retrieve --output run.trec.bz2`` (also ``.xz``, ``.zst``, ``.zip``) is refused since s58 b2's 2a8cff5 with
"retrieve eval would read it as compressed and refuse it ... compress the file afterwards if needed": not so, eval
decompresses gzip only and read that plain-text file as a TREC run (gold@1 1.0), and a file compressed afterwards with
bzip2 was then "invalid UTF-8" (s58 r4). The refusal stays (the name says bzip2, the bytes are plain text); its line
now says that eval reads gzip but no such compression and to gzip the file. The ``.gz`` line is unchanged."""

import bz2
import json

import pytest
from retrieval_helpers import write_jsonl

from retrieval.errors import ConfigError, DataError


@pytest.fixture
def inputs(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "p1", "title": "A", "contents": "The sky is blue."}])
    topics = write_jsonl(tmp_path / "topics.jsonl", [{"id": "q1", "question": "what colour is the sky",
                                                      "answers": ["blue"], "gold_docids": ["p1"]}])
    return corpus, topics, ["retrieve", "--corpus", str(corpus), "--topics", str(topics), "--hits", "1",
                            "--cache-dir", str(tmp_path / "cache")]


@pytest.mark.parametrize("opt, name, plain, kind", [
    ("--output", "r.trec.bz2", "r.trec", "the TREC run"),
    ("--output", "r.trec.zst", "r.trec", "the TREC run"),
    ("--output-ctxs", "r.ctxs.jsonl.xz", "r.ctxs.jsonl", "the ctxs JSON Lines"),
    ("--output", "r.ZIP", "r", "the TREC run"),
])
def test_a_compression_eval_does_not_read_is_refused_with_a_true_reason(tmp_path, inputs, opt, name, plain, kind):
    from retrieval.cli import main

    out = tmp_path / "out"
    args = ["--output", str(out / "r.trec")] if opt == "--output-ctxs" else []
    with pytest.raises(ConfigError) as exc:
        main([*inputs[2], *args, opt, str(out / name)])
    packed = name[name.rindex("."):].lower()
    assert str(exc.value) == (
        f"{opt} {out / name}: a {packed} name, but tokrag retrieve writes {kind} as plain text, and retrieve eval "
        f"reads gzip (.gz) but no {packed} compression; give a name without {packed} (e.g. {out / plain}) and gzip "
        "the file afterwards if needed")
    assert not out.exists()


def test_what_the_old_line_said_was_false(tmp_path, inputs, capsys):
    """The facts behind the new line: a plain-text run named .bz2 is read by eval as plain text, a bzip2 one is not."""
    from retrieval.cli import main

    corpus, topics, retrieve = inputs
    run = tmp_path / "r.trec"
    assert main([*retrieve, "--output", str(run)]) == 0
    named = tmp_path / "named.trec.bz2"
    named.write_bytes(run.read_bytes())
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", str(named), "--topics", str(topics), "--corpus", str(corpus), "--k", "1",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gold@1"] == 1.0
    packed = tmp_path / "packed.trec.bz2"
    packed.write_bytes(bz2.compress(run.read_bytes()))
    # s58 f5: named as compressed (it was "invalid UTF-8; re-encode the file as UTF-8"); still not read
    with pytest.raises(DataError, match="a bzip2-compressed file; retrieve eval reads plain text or gzip"):
        main(["retrieve", "eval", "--run", str(packed), "--topics", str(topics), "--corpus", str(corpus), "--k", "1"])
