"""``tokrag index`` / ``tokrag retrieve`` / ``tokrag retrieve eval`` on the nq-dpr-1k slice."""

from __future__ import annotations

import json
import urllib.error

import pytest

from retrieval.cli import main
from tokrag_model.cli import main as tokrag


@pytest.fixture(scope="module")
def env(tmp_path_factory, data_dir):
    cache = tmp_path_factory.mktemp("cli-cache")
    return ["--cache-dir", str(cache), "--data-dir", str(data_dir)]


def test_help_is_pyserini_like(capsys):
    for argv in (["index", "build", "--help"], ["retrieve", "--help"], ["retrieve", "eval", "--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--index", "--topics", "--output", "--bm25", "--k1", "--b", "--hits", "--encoder", "--threads", "--batch-size", "--dense", "--hybrid"):
        assert flag in out


def test_build_retrieve_eval(env, tmp_path, capsys):
    assert main(["index", "build", "--corpus", "nq-dpr-1k", *env]) == 0
    got = capsys.readouterr()
    index_dir = got.out.strip()
    assert "indexes/bm25-" in index_dir
    # one line on stderr says what was built (the path alone used to be all a 15-minute dense build printed)
    assert got.err.splitlines()[-1].startswith("bm25 index of nq-dpr-1k: 1199 passages; built in ")
    assert main(["index", "build", "--corpus", "nq-dpr-1k", *env]) == 0
    got = capsys.readouterr()
    assert (got.out.strip(), got.err.splitlines()[-1]) == (
        index_dir, "bm25 index of nq-dpr-1k: 1199 passages; already built, reused (--force rebuilds it)")
    out = tmp_path / "runs" / "bm25.trec"
    argv = ["retrieve", "--corpus", "nq-dpr-1k", "--topics", "nq-oracle:200", "--output", str(out), "--bm25", "--hits", "20", *env]
    assert main(argv) == 0
    assert "200 queries searched" in capsys.readouterr().err
    lines = out.read_text().splitlines()
    ctxs = [json.loads(x) for x in (tmp_path / "runs" / "bm25.ctxs.jsonl").read_text().splitlines()]
    assert len(ctxs) == 200 and len(lines) == sum(len(c["ctxs"]) for c in ctxs) == 3996  # a few queries match < 20 passages
    assert lines[0].startswith("nq-oracle-0 Q0 nq-ad268f41306d486e 1 ")
    assert ctxs[0]["qid"] == "nq-oracle-0" and ctxs[0]["ctxs"][0]["title"] == "List of Nobel laureates in Physics"
    assert main(argv) == 0
    assert "cache hit" in capsys.readouterr().err
    assert main(["retrieve", "eval", "--run", str(tmp_path / "runs" / "bm25.ctxs.jsonl"), "--topics", "nq-oracle:200", "--k", "5", "--json", "--data-dir", env[3]]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["gold@5"] == pytest.approx(0.96, abs=0.011) and m["answer_recall@5"] == pytest.approx(0.96, abs=0.011)
    # the TREC file plus the corpus gives the same figures
    assert main(["retrieve", "eval", "--run", str(out), "--corpus", "nq-dpr-1k", "--topics", "nq-oracle:200", "--k", "5", "--json", "--data-dir", env[3]]) == 0
    assert json.loads(capsys.readouterr().out) == m
    # index-only retrieval (as with a Pyserini prebuilt index): texts come from the stored raw documents
    out2 = tmp_path / "idx.trec"
    assert main(["retrieve", "--index", index_dir, "--topics", "nq-oracle:3", "--output", str(out2), "--hits", "3", *env]) == 0
    capsys.readouterr()
    raw = [json.loads(x) for x in (tmp_path / "idx.ctxs.jsonl").read_text().splitlines()]
    assert [c["docid"] for c in raw[0]["ctxs"]] == [c["docid"] for c in ctxs[0]["ctxs"][:3]]
    assert raw[0]["ctxs"][0]["title"] == ctxs[0]["ctxs"][0]["title"] and raw[0]["ctxs"][0]["text"] == ctxs[0]["ctxs"][0]["text"]


def test_topics_file_with_lucene_syntax(env, tmp_path, capsys):
    topics = tmp_path / "q.tsv"
    topics.write_text('q1\t"AND" (x) [y]: ^~*? OR NOT Nobel prize physics\nq2\twho wrote the lyrics\n')
    out = tmp_path / "q.trec"
    assert main(["retrieve", "--corpus", "nq-dpr-1k", "--topics", str(topics), "--output", str(out), "--hits", "5", *env]) == 0
    assert out.read_text().splitlines()[0].startswith("q1 Q0 nq-ad268f41306d486e 1 ")


def test_errors_are_reported_by_the_console_script(env, tmp_path, capsys):
    rc = tokrag(["retrieve", "--corpus", "nq-dpr-1k", "--topics", str(tmp_path / "missing.tsv"), "--output", str(tmp_path / "o.trec"), *env])
    assert rc == 2
    err = capsys.readouterr().err
    assert "tokrag retrieve: error: --topics" in err and "not a file" in err and "Traceback" not in err
    assert tokrag(["retrieve", "--corpus", "nq-dpr-1k", "--topics", "nq-oracle:2", "--output", str(tmp_path / "o.trec"), "--hits", "0", *env]) == 2
    assert "--hits 0" in capsys.readouterr().err
    assert tokrag(["retrieve", "--index", str(tmp_path / "noindex"), "--topics", "nq-oracle:2", "--output", str(tmp_path / "o.trec"), *env]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert tokrag(["index", "build", "--corpus", "nq-wiki-13k", *env]) == 2  # neither a name nor a path
    assert "unknown corpus 'nq-wiki-13k' (did you mean 'nq-wiki-12k'?)" in capsys.readouterr().err



def test_topic_set_count_must_be_a_number(env):
    """nq-oracle:abc silently retrieved all 2,655 questions (the count was dropped); nq-oracle:0 retrieved none."""
    from retrieval.cli import load_topics
    from retrieval.errors import ConfigError

    for spec in ("nq-oracle:abc", "nq-open:5x", "nq-oracle:0", "nq-oracle:"):
        with pytest.raises(ConfigError, match=rf"--topics {spec!r}: the part after ':' must be a number of questions >= 1"):
            load_topics(spec, env[3])
    assert len(load_topics("nq-oracle:3", env[3])[0]) == 3

def test_prebuilt_index_names(env, tmp_path, capsys, monkeypatch):
    import pyserini.util

    from retrieval.bm25 import Bm25Searcher
    from retrieval.errors import ConfigError, OfflineError

    with pytest.raises(ConfigError, match="neither an index folder nor a Pyserini prebuilt"):
        Bm25Searcher.from_prebuilt("wikipedia-dpr-101w")

    def offline(url, *a, **kw):  # what urllib raises without internet (pyserini then tries the next URL)
        raise urllib.error.URLError(f"no internet for {url}")

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    monkeypatch.setattr(pyserini.util, "download_url", offline)
    with pytest.raises(OfflineError, match="wikipedia-dpr-100w.*cannot be downloaded.*search a local corpus instead.*tokrag retrieve --corpus"):
        Bm25Searcher.from_prebuilt("wikipedia-dpr-100w")
