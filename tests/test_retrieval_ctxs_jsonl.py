"""``tokrag retrieve eval`` on ctxs JSONL runs of other tools (FiD-style: a row per question with ``qid``/``id`` and
``ctxs`` passages with ``docid``/``id``/``_id``): the right figures, or a one-line error naming the file and line."""

from __future__ import annotations

import json

import pytest

from tokrag_model.cli import main as tokrag

TOPICS = [
    {"qid": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["12"]},
    {"qid": "2", "question": "capital of france", "answers": ["Paris"], "gold_docids": ["p7"]},
    {"qid": "3", "question": "largest planet", "answers": ["Jupiter"], "gold_docids": ["30"]},
]
HAMLET = {"id": 12, "title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare"}
OTHER = {"id": 5, "title": "x", "text": "nothing here"}
PARIS = {"id": "p7", "title": "France", "text": "Paris is the capital"}
JUPITER = {"_id": 30, "title": "J", "text": "Jupiter is the largest"}


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _eval(capsys, run, topics, *args):
    """-> (exit status, parsed JSON or None, stderr)."""
    code = tokrag(["retrieve", "eval", "--run", str(run), "--topics", str(topics), "--json", *args])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if code == 0 else None), cap.err


@pytest.fixture()
def topics(tmp_path):
    return _jsonl(tmp_path / "topics.jsonl", TOPICS)


def test_a_question_id_on_two_rows_is_an_error_naming_both_lines(tmp_path, topics, capsys):
    # the second row replaced the first one's ranking: rc 0, MRR 2/3 instead of refusing
    run = _jsonl(tmp_path / "dupq.jsonl", [{"id": 1, "ctxs": [HAMLET]}, {"id": 1, "ctxs": [OTHER]},
                                           {"id": 2, "ctxs": [PARIS]}, {"id": 3, "ctxs": [JUPITER]}])
    code, _, err = _eval(capsys, run, topics)
    assert code == 2
    assert err.strip() == (f"tokrag retrieve: error: {run}:2: duplicate qid '1' (also on line 1); keep one row per question")
    # the same question under 'qid' (a string) and 'id' (an integer)
    run = _jsonl(tmp_path / "mix2.jsonl", [{"qid": "1", "ctxs": [HAMLET]}, {"qid": "2", "ctxs": [PARIS]},
                                           {"id": 1, "ctxs": [OTHER]}])
    code, _, err = _eval(capsys, run, topics)
    assert code == 2 and f"{run}:3: duplicate qid '1' (also on line 1)" in err


@pytest.mark.parametrize("row, field, shown", [
    ({"id": 1, "ctxs": [{**HAMLET, "id": "12 "}]}, "question '1', ctxs[0] 'id'", "'12 '"),
    ({"id": 1, "ctxs": [OTHER, {"docid": "30\n", "text": "x"}]}, "question '1', ctxs[1] 'docid'", "'30\\n'"),
    ({"id": " 1", "ctxs": [HAMLET]}, "question 'id'", "' 1'"),
])
def test_an_id_with_whitespace_is_refused_not_a_silent_miss(tmp_path, topics, capsys, row, field, shown):
    # "12 " never matched the gold id "12": gold@1 0.0 beside answer recall 1.0, and no note
    run = _jsonl(tmp_path / "ws.jsonl", [{"id": 2, "ctxs": [PARIS]}, row])
    code, _, err = _eval(capsys, run, topics)
    assert code == 2
    assert err.strip() == (f"tokrag retrieve: error: {run}:2: {field} is {shown}: an id is one token, without whitespace "
                           "(as in a TREC run, a corpus or topics); fix the id in the file")


def test_a_float_id_is_refused(tmp_path, topics, capsys):
    # 12.0 was read as "12.0" and missed the gold id "12"
    run = _jsonl(tmp_path / "odd4.jsonl", [{"id": 1, "ctxs": [{"id": 12.0, "text": "x"}]}])
    code, _, err = _eval(capsys, run, topics)
    assert code == 2 and err.strip() == (f"tokrag retrieve: error: {run}:1: question '1', ctxs[0] 'id' is 12.0: an id "
                                         'must be a string or an integer, not a float; write it as 12 or "12"')
    run = _jsonl(tmp_path / "odd3.jsonl", [{"id": 3.0, "ctxs": [JUPITER]}])
    code, _, err = _eval(capsys, run, topics)
    assert code == 2 and f"{run}:1: question 'id' is 3.0: an id must be a string or an integer" in err


def test_topics_gold_ids_follow_the_same_rule(tmp_path, capsys):
    run = _jsonl(tmp_path / "fid.jsonl", [{"id": 1, "ctxs": [HAMLET]}])
    good = _jsonl(tmp_path / "t.jsonl", [{"id": 1, "question": "q", "answers": ["Shakespeare"], "gold_docids": [12]}])
    assert _eval(capsys, run, good)[1] == {"num_queries": 1, "answer_recall@1": 1.0, "gold@1": 1.0, "mrr": 1.0}
    for gold, shown in (([" 12"], "' 12': an id is one token"), ([12.0], "12.0: an id must be a string or an integer")):
        bad = _jsonl(tmp_path / "t.jsonl", [{"id": 1, "question": "q", "answers": ["Shakespeare"], "gold_docids": gold}])
        code, _, err = _eval(capsys, run, bad)
        assert code == 2 and f"{bad}:1: gold_docids[0] is {shown}" in err  # was gold@1 0.0 without a note


def test_num_queries_is_the_number_scored_an_int(tmp_path, topics, capsys):
    # was the run's query count as a float (3.0) while the note said "over the 2 it has"
    run = _jsonl(tmp_path / "run.jsonl", [{"id": 1, "ctxs": [HAMLET]}, {"id": 2, "ctxs": [OTHER]},
                                          {"id": 9, "ctxs": [JUPITER]}])
    code, m, err = _eval(capsys, run, topics, "--k", "1")
    assert code == 0 and m == {"num_queries": 2, "answer_recall@1": 0.5, "gold@1": 0.5, "mrr": 0.5}
    assert type(m["num_queries"]) is int
    assert err.strip() == (f"note: run {run} has 2 of the 3 queries of topics {topics!r}, and 1 qids that are not in "
                           "them; the metrics are over the 2 it has")
    # a question of the topics without answers or gold ids is in the run but not scored
    bare = _jsonl(tmp_path / "t2.jsonl", [*TOPICS[:2], {"qid": "9", "question": "which planet"}])
    code, m, err = _eval(capsys, run, bare, "--k", "1")
    assert code == 0 and m["num_queries"] == 2 and type(m["num_queries"]) is int
    assert "note:" not in err  # the run holds exactly the topics' questions
    code, m, err = _eval(capsys, run, _jsonl(tmp_path / "t3.jsonl", [*TOPICS, {"qid": "9", "question": "which planet"}]),
                         "--k", "1")
    assert m["num_queries"] == 2 and err.strip().endswith(
        "has 3 of the 4 queries of topics " + repr(str(tmp_path / "t3.jsonl")) +
        "; the metrics are over the 2 of them with answers or gold ids")
    from retrieval.metrics import evaluate_run

    assert evaluate_run({"1": [{"docid": "12"}], "2": []}, gold={"1": ["12"], "3": ["x"]}, ks=(1,)) == {
        "num_queries": 1, "gold@1": 1.0, "mrr": 1.0}


def test_one_rule_for_passages_without_ids_in_eval_and_expect(tmp_path, topics, capsys):
    """Some passages with an id and some without: a DataError naming the first without (plain eval printed gold@k
    unavailable for the whole run, --expect --run scored it and stopped on 'a passage has no 'docid'' without a
    file); no passage with an id: gold@k and MRR unavailable with a note naming the three id fields, in both paths."""
    mixed = _jsonl(tmp_path / "mixid.jsonl", [{"id": 1, "ctxs": [HAMLET, {"title": "x", "text": "nothing"}]},
                                              {"id": 2, "ctxs": [PARIS]}, {"id": 3, "ctxs": [JUPITER]}])
    expect = tmp_path / "exp.yaml"
    expect.write_text(f"name: t\ncorpus: prebuilt:wikipedia-dpr-100w\ntopics: {topics}\nconditions:\n"
                      "  - name: c1\n    retriever: bm25\n    expected: {answer_recall@1: 1.0, gold@1: 1.0, mrr: 1.0}\n")
    message = (f"tokrag retrieve: error: {mixed}:1: question '1', ctxs[1] has no id ('docid', 'id' or '_id') while 3 "
               "passages of the run have one; give every passage its corpus id")
    assert _eval(capsys, mixed, topics)[::2] == (2, message + "\n")
    assert tokrag(["retrieve", "eval", "--expect", str(expect), "--run", mixed]) == 2
    assert capsys.readouterr().err == message + "\n"
    bare = _jsonl(tmp_path / "noid.jsonl", [{"id": q, "ctxs": [{"title": "t", "text": t}]}
                                            for q, t in ((1, "by Shakespeare"), (2, "Paris is"), (3, "Jupiter"))])
    note = (f"note: no passage in {bare} has an id ('docid', 'id' or '_id'), so gold@k and MRR are unavailable; give "
            "each passage its corpus id, or score the run's TREC file with --corpus\n")
    assert _eval(capsys, bare, topics, "--k", "1") == (
        0, {"num_queries": 3, "answer_recall@1": 1.0, "gold@1": None, "mrr": None}, note)
    assert tokrag(["retrieve", "eval", "--expect", str(expect), "--run", bare, "--json"]) == 1  # a figure missed
    cap = capsys.readouterr()
    cond = json.loads(cap.out)["conditions"][0]
    assert cond["metrics"]["answer_recall@1"]["ok"] and cond["metrics"]["gold@1"]["measured"] is None
    assert cond["num_queries"] == 3 and cap.err.startswith(note)


def test_an_empty_docid_falls_through_to_id_as_a_null_one(tmp_path, topics, capsys):
    # {"docid": "", "id": "p7"} had no id (gold@k unavailable for the run) while {"docid": null, "id": 12} had "12"
    run = _jsonl(tmp_path / "odd.jsonl", [{"id": 1, "ctxs": [{**HAMLET, "docid": None}]},
                                          {"id": 2, "ctxs": [{**PARIS, "docid": ""}]},
                                          {"qid": None, "id": 3, "ctxs": [{**JUPITER, "id": "", "docid": None}]}])
    assert _eval(capsys, run, topics, "--k", "1") == (
        0, {"num_queries": 3, "answer_recall@1": 1.0, "gold@1": 1.0, "mrr": 1.0}, "")


def _expectation(tmp_path, topics) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: t\ncorpus: prebuilt:wikipedia-dpr-100w\ntopics: {topics}\nconditions:\n"
                    "  - name: c1\n    retriever: bm25\n    expected: {answer_recall@1: 1.0}\n")
    return str(path)


def test_expect_with_a_missing_run_or_options_it_sets_is_a_config_error(tmp_path, topics, capsys, monkeypatch):
    expect = _expectation(tmp_path, topics)
    monkeypatch.chdir(tmp_path)
    # a FileNotFoundError traceback, rc 1 (which says "a figure missed")
    assert tokrag(["retrieve", "eval", "--expect", expect, "--run", "nonexist.jsonl"]) == 2
    message = f"tokrag retrieve: error: --run nonexist.jsonl: no such file (relative to the working directory {tmp_path})\n"
    assert capsys.readouterr().err == message
    assert tokrag(["retrieve", "eval", "--topics", topics, "--run", "nonexist.jsonl"]) == 2  # the same as without --expect
    assert capsys.readouterr().err == message
    # --topics, --k and --corpus were ignored: the expectation file sets them
    run = _jsonl(tmp_path / "fid.jsonl", [{"id": 1, "ctxs": [HAMLET]}, {"id": 2, "ctxs": [PARIS]},
                                          {"id": 3, "ctxs": [JUPITER]}])  # all three: a run of some misses the check
    for extra, named in ((["--topics", topics], "--topics"), (["--k", "5"], "--k"),
                         (["--corpus", "nq-wiki-12k", "--k", "1"], "--k, --corpus")):
        assert tokrag(["retrieve", "eval", "--expect", expect, "--run", run, *extra]) == 2
        assert capsys.readouterr().err == (f"tokrag retrieve: error: {named} with --expect: the expectation file sets the "
                                           "corpus, topics and cut-offs of each condition; drop them, or score the run "
                                           "without --expect\n")
    assert tokrag(["retrieve", "eval", "--expect", expect, "--run", run]) == 0
    # and the other way round: --condition / --dry-run mean nothing without --expect
    assert tokrag(["retrieve", "eval", "--topics", topics, "--run", run, "--condition", "c1"]) == 2
    assert capsys.readouterr().err.endswith("error: --condition needs --expect FILE\n")


def test_passage_texts_a_number_is_an_error_none_at_all_is_unavailable(tmp_path, topics, capsys):
    # "text": 5 was a TypeError traceback from unicodedata.normalize, rc 1
    run = _jsonl(tmp_path / "odd9.jsonl", [{"id": 2, "ctxs": [PARIS]}, {"id": 1, "ctxs": [{"id": 12, "text": 5}]}])
    assert _eval(capsys, run, topics)[::2] == (2, f"tokrag retrieve: error: {run}:2: question '1', ctxs[0] (passage "
                                                  "'12') 'text' is 5: a passage text must be a string\n")
    # some passages with a text, one without: it counted as a passage without the answer
    run = _jsonl(tmp_path / "odd7.jsonl", [{"id": 1, "ctxs": [{"id": 12}, OTHER]}, {"id": 2, "ctxs": [PARIS]}])
    assert _eval(capsys, run, topics)[::2] == (2, f"tokrag retrieve: error: {run}:1: question '1', ctxs[0] has no 'text' "
                                                  "while 2 passages of the run have one; answer recall needs every "
                                                  "passage's text: give it its text\n")
    # no passage with a text (ids only): answer recall unavailable with a note, not 0.0
    ids = _jsonl(tmp_path / "ids.jsonl", [{"id": 1, "ctxs": [{"id": 12}]}, {"id": 2, "ctxs": [{"id": "p7", "text": None}]},
                                          {"id": 3, "ctxs": [{"id": 5}]}])
    code, m, err = _eval(capsys, ids, topics, "--k", "1")
    assert code == 0 and m == {"num_queries": 3, "answer_recall@1": None, "gold@1": 2 / 3, "mrr": 2 / 3}
    assert err == (f"note: no passage in {ids} has a 'text', so answer recall is unavailable; give each passage its "
                   "text, or score the run's TREC file with --corpus\n")
    assert tokrag(["retrieve", "eval", "--run", ids, "--topics", topics, "--k", "1"]) == 0
    assert "answer_recall@1  unavailable" in capsys.readouterr().out
    # neither ids nor texts: nothing to score
    none = _jsonl(tmp_path / "none.jsonl", [{"id": 1, "ctxs": [{"title": "Hamlet"}]}])
    assert _eval(capsys, none, topics)[::2] == (2, f"tokrag retrieve: error: nothing in {none} can be scored on topics "
                                                   f"{topics!r}: gold@k and MRR need passage ids and answer recall needs "
                                                   "passage texts, which its passages do not have; give each passage its "
                                                   "corpus id and text, or score the run's TREC file with --corpus\n")
    from retrieval.errors import DataError
    from retrieval.metrics import answer_recall_at_k

    with pytest.raises(DataError, match=r"^query 'a': a passage has no 'text', so answer recall cannot be computed"):
        answer_recall_at_k({"a": [{"docid": "12"}]}, {"a": ["x"]}, 1)  # was a silent 0.0
    with pytest.raises(DataError, match=r"^query 'a': a passage has a 'text' of type int, so answer recall"):
        answer_recall_at_k({"a": [{"docid": "12", "text": 5}]}, {"a": ["x"]}, 1)  # was a TypeError


def test_a_json_array_is_named_and_gzip_or_unsuffixed_ctxs_files_are_read(tmp_path, topics, capsys):
    import gzip

    # DPR's retriever output, one JSON array: "dpr.json:1: malformed JSON (Expecting value at column 2)"
    rows = [{"id": 1, "question": "who wrote hamlet", "ctxs": [OTHER, HAMLET]}, {"id": 2, "ctxs": [PARIS]},
            {"id": 3, "ctxs": [JUPITER]}]
    dpr = tmp_path / "dpr.json"
    dpr.write_text(json.dumps(rows, indent=2))
    assert _eval(capsys, dpr, topics)[::2] == (2, f"tokrag retrieve: error: {dpr}: one JSON array (as DPR's retriever "
                                                  "writes), not JSON Lines; convert it to one object per line, each with "
                                                  "its question's id from the topics ('qid' or 'id') and its 'ctxs' (when "
                                                  f"its objects carry an 'id': jq -c '.[]' {dpr} > {tmp_path / 'dpr.jsonl'})\n")
    expected = {"num_queries": 3, "answer_recall@1": 2 / 3, "gold@1": 2 / 3, "mrr": 5 / 6}
    # a .jsonl.gz was taken for a TREC run ("a TREC run needs --corpus"); a ctxs file named otherwise too
    gz = tmp_path / "fid.jsonl.gz"
    gz.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    plain = _jsonl(tmp_path / "fid.ctxs", rows)
    for run in (gz, plain):
        code, m, err = _eval(capsys, run, topics, "--k", "1")
        assert code == 0 and m == pytest.approx(expected) and err == ""
    from retrieval.cache import is_ctxs_file

    trec = tmp_path / "run"
    trec.write_text("1 Q0 12 1 3.0 x\n")
    assert not is_ctxs_file(trec) and not is_ctxs_file(tmp_path / "r.trec.gz") and is_ctxs_file(tmp_path / "r.json.gz")


def test_duplicate_passages_are_an_error_naming_the_line_question_and_id(tmp_path, topics, capsys):
    # counted as separate ranks without a word; then (1358d12) still counted, as DPR's evaluation does, with one
    # stderr note; now (s57 h1) refused in the reader, as trec_eval refuses such a run ("duplicate docs"): a copy
    # counts twice in every figure and in a prompt
    run = _jsonl(tmp_path / "duppass.jsonl", [{"id": 1, "ctxs": [OTHER, OTHER, HAMLET]}, {"id": 2, "ctxs": [PARIS, PARIS]},
                                              {"id": 3, "ctxs": [JUPITER]}])
    code, m, err = _eval(capsys, run, topics, "--k", "1", "2")
    assert (code, m) == (2, None)
    assert err == (f"tokrag retrieve: error: {run}:1: question '1', ctxs[1] (passage '5') is listed twice (also "
                   "ctxs[0]); each copy would count as a rank (trec_eval refuses such a run): keep one copy, the "
                   "better-ranked\n")


def test_questions_without_passages_are_named(tmp_path, topics, capsys):
    # "cut-offs above it are reported at @0" and only mrr printed
    empty = _jsonl(tmp_path / "emptyctx.jsonl", [{"id": 1, "ctxs": []}, {"id": 2, "ctxs": []}, {"id": 3, "ctxs": []}])
    assert _eval(capsys, empty, topics)[::2] == (2, f"tokrag retrieve: error: every question of {empty} has an empty "
                                                    "'ctxs' list ('1', '2', '3'), so there is nothing to score; give the "
                                                    "questions their passages\n")
    some = _jsonl(tmp_path / "some.jsonl", [{"id": 1, "ctxs": []}, {"id": 2, "ctxs": [PARIS]}, {"id": 3, "ctxs": []}])
    code, m, err = _eval(capsys, some, topics, "--k", "1")
    assert code == 0 and m == pytest.approx({"num_queries": 3, "answer_recall@1": 1 / 3, "gold@1": 1 / 3, "mrr": 1 / 3})
    assert err == (f"note: 2 of the 3 questions of {some} have no passages ('1', '3'); they count as misses at every "
                   "cut-off\n")


def test_a_run_whose_only_passage_ids_are_empty_has_no_ids_as_a_null_one(tmp_path, topics, capsys):
    # {"docid": ""} alone: "query '1': a passage has no 'docid', so gold@k and MRR cannot be computed" (rc 2, no
    # file), while {"docid": null} gave gold@k and MRR unavailable
    for name, value in (("null", None), ("empty", "")):
        run = _jsonl(tmp_path / f"{name}.jsonl", [{"id": q, "ctxs": [{"docid": value, "title": "t", "text": t}]}
                                                  for q, t in ((1, "by Shakespeare"), (2, "Paris is"), (3, "Jupiter"))])
        note = (f"note: no passage in {run} has an id ('docid', 'id' or '_id'), so gold@k and MRR are unavailable; "
                "give each passage its corpus id, or score the run's TREC file with --corpus\n")
        assert _eval(capsys, run, topics, "--k", "1") == (
            0, {"num_queries": 3, "answer_recall@1": 1.0, "gold@1": None, "mrr": None}, note), name
