"""``tokrag retrieve --output out/`` (a folder meant, the path ending in '/') wrote the TREC run to the FILE ``out``,
with ``out.ctxs.jsonl`` and ``out.meta.json`` beside it, and exited 0 (s52 b1, /work/scratch/s52/b1/probe_retrieve.sh,
probe_retrieve.txt: 'run .../newdir, ctxs .../newdir.ctxs.jsonl'): pathlib drops the trailing '/'. Such a path (of
--output or --output-ctxs) that is not an existing folder is now refused before the search; an existing folder keeps
its own line."""

import pytest
from retrieval_helpers import write_jsonl

from retrieval.errors import ConfigError


@pytest.fixture
def inputs(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "p1", "title": "A", "contents": "The sky is blue."}])
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\twhat colour is the sky\n", encoding="utf-8")
    return ["retrieve", "--corpus", str(corpus), "--topics", str(topics), "--hits", "1"]


@pytest.mark.parametrize("option, example", [("--output", "run.trec"), ("--output-ctxs", "run.ctxs.jsonl")])
def test_an_output_ending_in_a_slash_is_refused_and_nothing_is_written(tmp_path, inputs, option, example):
    from retrieval.cli import main

    given = f"{tmp_path / 'out'}/"
    extra = [option, given] if option == "--output" else ["--output", str(tmp_path / "r.trec"), option, given]
    with pytest.raises(ConfigError) as exc:
        main([*inputs, *extra])
    assert str(exc.value) == f"{option} {given}: ends with '/', so it names a folder; give a file path (e.g. {given}{example})"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "topics.tsv"]


def test_an_existing_folder_with_a_slash_keeps_its_line(tmp_path, inputs):
    from retrieval.cli import main

    (tmp_path / "out").mkdir()
    with pytest.raises(ConfigError) as exc:
        main([*inputs, "--output", f"{tmp_path / 'out'}/"])
    assert str(exc.value) == f"--output {tmp_path / 'out'}: is a folder; give a file path (e.g. {tmp_path / 'out' / 'run.trec'})"
