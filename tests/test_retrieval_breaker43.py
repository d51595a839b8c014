"""Retrieval and bring-your-own data defects found by a breaker (stop 43): each test failed on the code before its fix.

* ``retrieve eval`` scored a run against topics whose questions under the same ids were other questions
  (automatic ids ``q<index>`` shift when a line is inserted): refused, naming the id and both texts.
* a corpus passage with a lone surrogate (valid JSON ``"\\ud800"``) crashed the BM25 index build with a traceback:
  refused at load, naming the file, line and passage.
* ``retrieve(params=...)`` / the tasks' ``retriever_params`` were range-checked only by the CLI.
* an existing topics file whose path holds ':' was read as ``NAME:N``.
* BYO questions: a ``.json`` array file, a folder (read since s50), and answers that are all blank.
"""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError, DataError
from tests.retrieval_helpers import PASSAGES, ctxs_run
from tests.retrieval_helpers import eval_json as _eval
from tests.retrieval_helpers import write_jsonl as _jsonl


# ------------------------------------------------------------------------------------------- lone surrogates
def test_a_passage_with_a_lone_surrogate_is_refused_at_load(tmp_path):
    from retrieval.corpus import load_corpus

    f = tmp_path / "sur.jsonl"
    f.write_text('{"id": "p1", "text": "gamma beta"}\n{"id": "p2", "text": "alpha \\ud800 beta"}\n', encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_corpus(f)
    assert str(exc.value) == (f"{f}:2: passage 'p2' holds an invalid Unicode character in its text (U+D800 at character "
                              "7: a lone surrogate, half of a UTF-16 pair, as a JSON escape \\ud800 without its partner "
                              "writes it); remove the character or fix the text")


@pytest.mark.parametrize("field, record", [("title", '{"id": "p1", "title": "\\udfff", "text": "beta"}'),
                                           ("id", '{"id": "p\\ud800", "text": "beta"}')])
def test_a_lone_surrogate_in_a_title_or_id_is_refused_too(tmp_path, field, record):
    from retrieval.corpus import load_corpus

    f = tmp_path / "c.jsonl"
    f.write_text(record + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{f}:1: passage .* holds an invalid Unicode character in its {field} \(U\+D"):
        load_corpus(f)


def test_queries_keep_their_own_message():
    from retrieval.bm25 import validate_queries

    with pytest.raises(DataError, match=r"^query 'q1' is not valid Unicode \(invalid UTF-8 was decoded into it\)"):
        validate_queries({"q1": "a \ud800 b"})


# ------------------------------------------------------------------------------------------- topics path with ':'
def test_an_existing_topics_file_whose_path_holds_a_colon_is_read_as_a_file(tmp_path):
    from retrieval.cli import load_topics

    folder = tmp_path / "run 10:00"
    folder.mkdir()
    f = _jsonl(folder / "q.jsonl", [{"question": "who wrote hamlet", "answers": ["Shakespeare"]}])
    assert load_topics(str(f)) == ({"q0": "who wrote hamlet"}, {"q0": ["Shakespeare"]}, {})


def test_a_missing_path_with_a_colon_is_refused_as_no_file(tmp_path):
    from retrieval.cli import load_topics

    missing = tmp_path / "run 10:00" / "q.jsonl"
    with pytest.raises(ConfigError, match=rf"^--topics '{missing}': not a file and not a named topic set"):
        load_topics(str(missing))
    with pytest.raises(ConfigError, match=r"^--topics 'mine:x': the part after ':' must be a number of questions$"):
        load_topics("mine:x")
    with pytest.raises(ConfigError, match=r"must be a number of questions >= 1 \(e\.g\. nq-oracle:200\)"):
        load_topics("nq-oracle:x")


# ------------------------------------------------------------------------------------------- retriever params
@pytest.mark.parametrize("retriever, params, message", [
    ("hybrid", {"rrf_k": -1}, "rrf_k=-1: must be a whole number >= 1 (the RRF constant, default 60)"),
    ("hybrid", {"rrf_k": 0}, "rrf_k=0: must be a whole number >= 1 (the RRF constant, default 60)"),
    ("hybrid", {"rrf_k": 2.5}, "rrf_k=2.5: must be a whole number >= 1 (the RRF constant, default 60)"),
    ("hybrid", {"depth": 0}, "depth=0: must be a whole number >= 1 (hits per retriever before fusion)"),
    ("bm25", {"k1": "abc"}, "k1='abc' (--k1): k1 must be a finite number"),
    ("bm25", {"k1": [1]}, "k1=[1] (--k1): k1 must be a finite number"),
    ("bm25", {"b": "0.4"}, "b='0.4' (--b): b must be a finite number"),
    ("bm25", {"k1": -1}, "k1=-1: BM25 k1 must be >= 0 (default 0.9)"),
    ("bm25", {"b": 1.5}, "b=1.5: BM25 b must be between 0 and 1 (default 0.4)"),
    ("bm25", {"threads": 0}, "threads=0: must be >= 1 (an integer number of threads)"),
    ("dense", {"batch_size": 0}, "batch_size=0: must be a whole number >= 1 (encoder batch size)"),
])
def test_retriever_params_are_range_checked_as_the_cli_checks_its_options(retriever, params, message):
    from retrieval.api import _resolve_params

    with pytest.raises(ConfigError) as exc:
        _resolve_params(retriever, params)
    assert str(exc.value) == message


def test_retrieve_refuses_a_negative_rrf_k_before_any_work(tmp_path, monkeypatch):
    import retrieval.api as api
    from retrieval.corpus import Corpus, Passage

    monkeypatch.setattr(api, "hybrid_hits", lambda *a, **k: pytest.fail("searched"), raising=False)
    corpus = Corpus([Passage("p1", "Paris", "Paris is the capital of France.")], name="one")
    with pytest.raises(ConfigError, match=r"^rrf_k=-1: must be a whole number >= 1"):
        api.retrieve(corpus, {"q": "capital"}, "hybrid", k=1, params={"rrf_k": -1}, cache_dir=tmp_path)
    assert not (tmp_path / "runs").exists()


def test_the_cli_uses_the_same_check(monkeypatch):
    import argparse

    import retrieval.api as api
    from retrieval.cli import _check_numbers

    seen = []
    monkeypatch.setattr(api, "check_numbers", lambda values, **kw: seen.append(values))
    _check_numbers(argparse.Namespace(k1=0.5, b=None, threads=None, rrf_k=3, depth=None, max_length=None, batch_size=None))
    assert seen == [{"k1": 0.5, "b": None, "threads": None, "rrf_k": 3, "depth": None, "max_length": None, "batch_size": None}]
    monkeypatch.undo()
    with pytest.raises(ConfigError, match=r"^--rrf-k 0: must be a whole number >= 1 \(the RRF constant, default 60\)$"):
        _check_numbers(argparse.Namespace(rrf_k=0))


# ------------------------------------------------------------------------------------------- BYO questions
def test_byo_questions_in_one_json_array_get_the_corpus_and_run_readers_words(tmp_path):
    from tasks.byo import load_questions

    f = tmp_path / "arr.json"
    f.write_text(json.dumps([{"question": "a", "answers": ["x"]}], indent=2), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_questions(str(f))
    assert str(exc.value) == (f"questions {f}: one JSON array, not JSON Lines; write one {{question, answers}} object "
                              f"per line (jq -c '.[]' {f} > {tmp_path / 'arr.jsonl'})")


def test_byo_questions_that_name_a_folder_read_its_split(tmp_path, monkeypatch):
    """Since s50 (f3) a folder is read as datasets.load_dataset reads it (tests/test_s50_f3_byo_folder.py); it was
    refused ("... is a folder, not a JSONL file; give the file itself")."""
    from tasks.byo import load_questions

    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "qs").mkdir(parents=True)
    _jsonl(tmp_path / "org" / "qs" / "test.jsonl", [{"question": "a", "answers": ["x"]}])
    assert [(r["qid"], r["question"]) for r in load_questions("org/qs")] == [("q0", "a")]


@pytest.mark.parametrize("answers", [["", "\u200b"], ["\u200b"], [" \ufeff "]])
def test_byo_answers_that_are_all_blank_are_refused_at_load_naming_the_line(tmp_path, answers):
    from retrieval.metrics import answer_recall_at_k
    from tasks.byo import load_questions

    f = _jsonl(tmp_path / "zw.jsonl", [{"question": "a", "answers": ["x"]}, {"question": "b", "answers": answers}])
    with pytest.raises(DataError) as exc:
        load_questions(str(f))
    assert str(exc.value) == (f"{f}:2: 'answers' {answers!r} hold only blank strings (spaces or characters that do not "
                              "print); give at least one gold answer")
    with pytest.raises(ConfigError, match="hold only blank strings"):  # the metrics' own refusal: the same test
        answer_recall_at_k({"q0": [{"docid": "p", "text": "x"}]}, {"q0": answers}, 1)


def test_byo_blank_answers_beside_a_real_one_are_dropped(tmp_path):
    from tasks.byo import load_questions

    f = _jsonl(tmp_path / "q.jsonl", [{"question": "a", "answers": ["\u200b", "Paris", " "]}])
    assert load_questions(str(f))[0]["answers"] == ["Paris"]


# ------------------------------------------------------------------------------------------- eval: same questions
QS = [{"question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["p1"]},
      {"question": "what is the capital of france", "answers": ["Paris"], "gold_docids": ["p2"]}]


def _run(path, texts, field="query"):
    """A ctxs JSONL as tokrag retrieve writes it: q0 ranked p1, q1 ranked p2, each with the text it was retrieved for."""
    return ctxs_run(path, [f"q{i}" for i in range(len(texts))], texts, field)


def test_eval_refuses_topics_whose_questions_moved_under_the_automatic_ids(tmp_path, capsys):
    run = _run(tmp_path / "run.ctxs.jsonl", [q["question"] for q in QS])
    topics = _jsonl(tmp_path / "q.jsonl", QS)
    assert _eval(capsys, "--run", str(run), "--topics", str(topics))["gold@1"] == 1.0
    moved = _jsonl(tmp_path / "q_v2.jsonl", [{"question": "who painted the last supper", "answers": ["Leonardo"]}, *QS])
    with pytest.raises(DataError) as exc:
        _eval(capsys, "--run", str(run), "--topics", str(moved))
    assert str(exc.value) == (
        f"run {run}: question 'q0' was retrieved for 'who wrote hamlet' but topics '{moved}' give 'who painted the "
        "last supper' under that id (2 of the 2 ids they share differ), so it would be scored against another "
        "question's answers (ids q<index> move when a line is added or removed); score the run with the topics it was "
        "retrieved with, or retrieve again with these topics")


def test_eval_compares_texts_up_to_whitespace_and_unicode_composition(tmp_path, capsys):
    qs = [dict(QS[0], question="who wrote  hamle\u0301t "), QS[1]]  # NFD é, two spaces, a trailing space
    run = _run(tmp_path / "run.ctxs.jsonl", ["who wrote haml\u00e9t", " what is the\tcapital of france"],
               field="question")  # FiD-style field
    topics = _jsonl(tmp_path / "q.jsonl", qs)
    assert _eval(capsys, "--run", str(run), "--topics", str(topics))["gold@1"] == 1.0
    capital = _jsonl(tmp_path / "cased.jsonl", [qs[0], dict(QS[1], question="What is the capital of France")])
    with pytest.raises(DataError, match=r"question 'q1' was retrieved for 'what is the capital of france' but topics "
                                        r".* give 'What is the capital of France' under that id \(1 of the 2 ids"):
        _eval(capsys, "--run", str(run), "--topics", str(capital))


def test_eval_accepts_the_query_field_a_task_retrieved_with(tmp_path, capsys):
    run = _run(tmp_path / "run.ctxs.jsonl", ["hamlet author", QS[1]["question"]])
    topics = _jsonl(tmp_path / "q.jsonl", [dict(QS[0], query="hamlet author"), QS[1]])
    assert _eval(capsys, "--run", str(run), "--topics", str(topics))["gold@1"] == 1.0


def test_eval_of_a_trec_run_checks_the_ctxs_jsonl_beside_it(tmp_path, capsys):
    corpus = _jsonl(tmp_path / "passages.jsonl", PASSAGES)
    trec = tmp_path / "run.trec"
    trec.write_text("q0 Q0 p1 1 1.000000 bm25\nq1 Q0 p2 1 1.000000 bm25\n", encoding="utf-8")
    _run(tmp_path / "run.ctxs.jsonl", [q["question"] for q in QS])
    topics = _jsonl(tmp_path / "q.jsonl", QS)
    assert _eval(capsys, "--run", str(trec), "--topics", str(topics), "--corpus", str(corpus))["gold@1"] == 1.0
    moved = _jsonl(tmp_path / "q_v2.jsonl", [{"question": "who painted the last supper", "answers": ["Leonardo"]}, *QS])
    with pytest.raises(DataError, match=rf"^run {trec}: question 'q0' was retrieved for 'who wrote hamlet' but topics"):
        _eval(capsys, "--run", str(trec), "--topics", str(moved), "--corpus", str(corpus))
