"""``tokrag index`` / ``tokrag retrieve`` / ``tokrag retrieve eval`` on bad or unusual input: the right figures
(a qid 0, a string answer), one-line errors naming the file, line or argument, and no user file lost."""

from __future__ import annotations

import json
import shlex

import pytest

from tokrag_model.cli import main as tokrag

PASSAGES = [
    {"id": "p1", "title": "Nobel Prize in Physics", "text": "The Nobel Prize in Physics is awarded by the Royal Swedish Academy; Marie Curie won it in 1903."},
    {"id": "p2", "title": "Paris", "text": "Paris is the capital of France, on the river Seine."},
    {"id": "p3", "title": "Numbers", "text": "The number 4 is even and comes after 3 in the list of numbers."},
]


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture()
def cache(tmp_path_factory):
    return ["--cache-dir", str(tmp_path_factory.getbasetemp() / "inputs-cache")]


@pytest.fixture()
def corpus(tmp_path):
    return _jsonl(tmp_path / "good.jsonl", PASSAGES)


def _retrieve_eval(tmp_path, corpus, cache, topics, capsys, k=("1", "3")) -> dict:
    out = tmp_path / "o.trec"
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(out), "--hits", "3", *cache]) == 0
    capsys.readouterr()
    assert tokrag(["retrieve", "eval", "--run", str(tmp_path / "o.ctxs.jsonl"), "--topics", topics, "--k", *k, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_integer_qid_0_keeps_its_answers(tmp_path, corpus, cache, capsys):
    # qid 0's answer is in no passage: recall@1 is 1/2, not 1/1 with qid 0 silently dropped (its answers under "q0")
    topics = _jsonl(tmp_path / "t.jsonl", [
        {"qid": 0, "question": "who won the nobel prize in physics", "answers": ["berlin"]},
        {"qid": 1, "question": "where is paris", "answers": ["paris"]},
    ])
    m = _retrieve_eval(tmp_path, corpus, cache, topics, capsys)
    assert m["num_queries"] == 2 and m["answer_recall@1"] == 0.5


def test_topics_qids_match_queries_and_answers(tmp_path):
    from retrieval.cli import load_topics
    from retrieval.corpus import load_queries

    p = tmp_path / "t.jsonl"
    _jsonl(p, [{"qid": 0, "question": "a b", "answers": ["x"], "gold_docids": "p1"},
               {"id": None, "question": "c d", "answer": "y z"}])
    queries, answers, gold = load_topics(str(p))
    assert list(queries) == ["0", "q1"] == list(load_queries(p))
    assert answers == {"0": ["x"], "q1": ["y z"]} and gold == {"0": ["p1"]}


def test_string_answer_is_one_answer(tmp_path, corpus, cache, capsys):
    # "Marie 4" as a string is one answer (as tasks/data.py reads it), not the characters "M", "4", ... that match p3
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "the number 4 even", "answers": "Marie 4"},
                                           {"qid": "b", "question": "where is paris", "answers": ["paris"]}])
    m = _retrieve_eval(tmp_path, corpus, cache, topics, capsys, k=("1",))
    assert m["num_queries"] == 2 and m["answer_recall@1"] == 0.5


def test_answers_of_another_type_are_a_one_line_error(tmp_path, corpus, cache, capsys):
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris", "answers": {"x": 1}}])
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(tmp_path / "o.trec"), *cache]) == 2
    err = capsys.readouterr().err
    assert f"{topics}:1: field 'answers' must be a string or a list of strings" in err and "Traceback" not in err


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_index_build_never_deletes_a_users_folder(tmp_path, corpus, cache, capsys, force):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(target), *force, *cache]) == 2
    err = capsys.readouterr().err
    assert f"index folder {target} is not empty and is not an index built by tokrag" in err and "Traceback" not in err
    assert (target / "thesis.tex").read_text() == "years of work" and [p.name for p in target.iterdir()] == ["thesis.tex"]


def test_index_build_into_empty_or_own_folder(tmp_path, corpus, cache, capsys):
    target = tmp_path / "empty"
    target.mkdir()
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(target), *cache]) == 0
    assert (target / "tokrag_index.json").is_file()
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(target), "--force", *cache]) == 0  # its own index
    assert json.loads((target / "tokrag_index.json").read_text())["num_docs"] == 3


def test_index_build_bad_folder_is_a_one_line_error(tmp_path, corpus, cache, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(a_file), *cache]) == 2
    err = capsys.readouterr().err
    assert f"index folder {a_file} is a file, not a folder" in err and "Traceback" not in err
    assert a_file.read_text() == "keep me"
    assert tokrag(["index", "build", "--corpus", corpus, "--index", "/proc/nope/idx", *cache]) == 2
    err = capsys.readouterr().err
    assert "cannot create the index folder /proc/nope/idx" in err and "Traceback" not in err


def test_bad_output_fails_before_the_search(tmp_path, corpus, cache, capsys, monkeypatch):
    import retrieval.api

    def no_search(*a, **k):
        raise AssertionError("searched although --output cannot be written")

    monkeypatch.setattr(retrieval.api, "retrieve", no_search)
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris"}])
    folder = tmp_path / "runs"
    folder.mkdir()
    for output, expected in ((str(folder), f"--output {folder}: is a folder; give a file path"),
                             ("/proc/nope/x.trec", "--output /proc/nope/x.trec: cannot create it (/proc is not writable")):
        assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", output, *cache]) == 2
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(tmp_path / "o.trec"),
                   "--output-ctxs", str(folder), *cache]) == 2
    assert f"--output-ctxs {folder}: is a folder" in capsys.readouterr().err
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("line, expected", [("a Q0 p2 1 abc tag", "score 'abc' is not a number"),
                                            ("a Q0 p2 x 1.5 tag", "rank 'x' is not an integer")])
def test_trec_run_with_bad_numbers_names_file_and_line(tmp_path, corpus, capsys, line, expected):
    run = tmp_path / "bad.trec"
    run.write_text(f"a Q0 p1 1 2.0 tag\n{line}\n")
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris", "answers": ["paris"]}])
    assert tokrag(["retrieve", "eval", "--run", str(run), "--corpus", corpus, "--topics", topics]) == 2
    err = capsys.readouterr().err
    assert f"{run}:2: {expected}" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["c.jsonl.gz", "c.tsv.gz", "c.json.gz"])
def test_truncated_gzip_corpus_is_named(tmp_path, cache, capsys, name):
    import gzip

    body = (b"id\ttext\ttitle\n" + b"".join(b"%d\tpassage text %d\tT\n" % (i, i) for i in range(2000)) if ".tsv" in name
            else b"".join(json.dumps(p).encode() + b"\n" for p in PASSAGES * 1000))
    data = gzip.compress(body)
    path = tmp_path / name
    path.write_bytes(data[: len(data) // 2])
    assert tokrag(["index", "build", "--corpus", str(path), "--index", str(tmp_path / "idx"), *cache]) == 2
    err = capsys.readouterr().err
    assert f"{path}: the gzip file is truncated or corrupt" in err and "Traceback" not in err


@pytest.mark.parametrize("opt, expected", [(["--k1", "-1"], "--k1 -1.0: BM25 k1 must be >= 0"),
                                           (["--b", "1.5"], "--b 1.5: BM25 b must be between 0 and 1"),
                                           (["--threads", "0"], "--threads 0: must be >= 1")])
def test_index_build_rejects_out_of_range_numbers(tmp_path, corpus, cache, capsys, opt, expected):
    target = tmp_path / "idx"
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(target), *opt, *cache]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and not target.exists()


def test_build_bm25_index_rejects_zero_threads(tmp_path):
    from retrieval import Corpus, Passage
    from retrieval.bm25 import build_bm25_index
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match="threads=0"):
        build_bm25_index(Corpus([Passage("a", "", "alpha")]), tmp_path / "idx", threads=0)
    assert not (tmp_path / "idx").exists()


def test_eval_notes_a_run_covering_few_topics(tmp_path, corpus, cache, capsys):
    rows = [{"qid": f"q{i}", "question": "where is paris", "answers": ["paris"]} for i in range(100)]
    few = _jsonl(tmp_path / "few.jsonl", rows[:2])
    out = tmp_path / "o.trec"
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", few, "--output", str(out), "--hits", "1", *cache]) == 0
    capsys.readouterr()
    all_topics = _jsonl(tmp_path / "all.jsonl", rows)
    run = tmp_path / "o.ctxs.jsonl"
    assert tokrag(["retrieve", "eval", "--run", str(run), "--topics", all_topics, "--k", "1", "--json"]) == 0
    cap = capsys.readouterr()
    assert f"note: run {run} has 2 of the 100 queries of topics {all_topics!r}; the metrics are over the 2 it has" in cap.err
    assert json.loads(cap.out) == {"num_queries": 2, "answer_recall@1": 1.0}  # the metrics themselves unchanged
    assert tokrag(["retrieve", "eval", "--run", str(run), "--topics", few, "--k", "1"]) == 0
    assert "note: run" not in capsys.readouterr().err  # same queries: no note


def test_data_dir_that_is_a_file_is_called_a_file(monkeypatch):
    from retrieval.errors import ConfigError
    from retrieval.paths import data_dir

    monkeypatch.setenv("TOKRAG_DATA_DIR", "/etc/passwd")
    with pytest.raises(ConfigError, match=r"\$TOKRAG_DATA_DIR = '/etc/passwd': /etc/passwd is a file, not a folder;") as e:
        data_dir()
    assert "does not exist" not in str(e.value)
    with pytest.raises(ConfigError, match=r"folder /no/such/dir does not exist"):
        data_dir("/no/such/dir")


def test_empty_query_in_tsv_topics_names_file_and_line(tmp_path, corpus, cache, capsys):
    topics = tmp_path / "q.tsv"
    topics.write_text("q1\twhere is paris\nq2\t   \n")
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", str(topics), "--output", str(tmp_path / "o.trec"), *cache]) == 2
    err = capsys.readouterr().err
    assert f"{topics}:2: query 'q2' is empty or whitespace only" in err and "Traceback" not in err
    topics.write_text("q1\twhere is paris\na b\tnobel\n")
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", str(topics), "--output", str(tmp_path / "o.trec"), *cache]) == 2
    assert f"{topics}:2: query id 'a b' is empty or contains whitespace" in capsys.readouterr().err


def test_duplicate_corpus_id_names_lines(tmp_path, cache, capsys):
    path = _jsonl(tmp_path / "dup.jsonl", [PASSAGES[0], PASSAGES[1], {**PASSAGES[2], "id": "p1"}])
    assert tokrag(["index", "build", "--corpus", path, "--index", str(tmp_path / "idx"), *cache]) == 2
    assert f"{path}:3: duplicate id 'p1' (first at {path}:1); ids must be unique" in capsys.readouterr().err


def test_unterminated_string_message_has_no_double_at(tmp_path, cache, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "p1", "text": "no end}\n')
    assert tokrag(["index", "build", "--corpus", str(path), "--index", str(tmp_path / "idx"), *cache]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: malformed JSON (Unterminated string starting at column 22)" in err and "at at" not in err


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_index_build_keeps_user_files_beside_an_index_meta_file(tmp_path, corpus, cache, capsys, force):
    # a tokrag_index.json alone (no segments_*) or a real index the user added files to: never rmtree'd
    target = tmp_path / "idx"
    (target / "sub").mkdir(parents=True)
    (target / "tokrag_index.json").write_text("{}")
    (target / "notes.txt").write_text("precious")
    (target / "sub" / "y").write_text("x")
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(target), *force, *cache]) == 2
    err = capsys.readouterr().err
    assert f"index folder {target} holds entries a tokrag bm25 index build does not write (notes.txt, sub/)" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (target / "notes.txt").read_text() == "precious" and (target / "sub" / "y").read_text() == "x"
    # the same on a complete index built here
    built = tmp_path / "built"
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(built), *cache]) == 0
    (built / "notes.txt").write_text("precious")
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(built), *force, *cache]) == 2  # refused even when it would only be reused
    assert (built / "notes.txt").read_text() == "precious"


def test_empty_answers_field_falls_back_to_answer(tmp_path):
    # the old 'obj.get("answers") or obj.get("answer")': an empty or null 'answers' does not hide 'answer'
    from retrieval.cli import load_topics

    p = tmp_path / "t.jsonl"
    _jsonl(p, [{"qid": "a", "question": "a b", "answers": [], "answer": ["x"]},
               {"qid": "b", "question": "c d", "answers": None, "answer": "y"},
               {"qid": "c", "question": "e f", "answers": "", "answer": ["z"]},
               {"qid": "d", "question": "g h", "answers": []}])
    _, answers, _ = load_topics(str(p))
    assert answers == {"a": ["x"], "b": ["y"], "c": ["z"]}


def test_numeric_answers_are_matched_as_text(tmp_path, corpus, cache, capsys):
    # documented in retrieval/README.md: [1903] is "1903", found in p1's text
    from retrieval.cli import load_topics

    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "nobel prize physics", "answers": [1903]},
                                           {"qid": "b", "question": "where is paris", "answers": [4.5]}])
    assert load_topics(topics)[1] == {"a": ["1903"], "b": ["4.5"]}
    m = _retrieve_eval(tmp_path, corpus, cache, topics, capsys, k=("1",))
    assert m["num_queries"] == 2 and m["answer_recall@1"] == 0.5


def test_retrieve_output_that_would_overwrite_an_input_or_the_other_output_is_refused(tmp_path, corpus, cache, capsys):
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris"}])
    before = {p: open(p).read() for p in (topics, corpus)}
    for args, expected in (
        (["--output", topics], f"--output {topics}: is the --topics file"),
        (["--output", corpus], f"--output {corpus}: is the --corpus file"),
        (["--output", str(tmp_path / "o.trec"), "--output-ctxs", topics], f"--output-ctxs {topics}: is the --topics file"),
        (["--output", str(tmp_path / "o.trec"), "--output-ctxs", str(tmp_path / "." / "o.trec")],
         f"--output-ctxs {tmp_path / '.' / 'o.trec'}: is the same file as --output"),
    ):
        assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, *args, *cache]) == 2
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert {p: open(p).read() for p in (topics, corpus)} == before and not (tmp_path / "o.trec").exists()


def test_retrieve_that_fails_leaves_no_output_folders(tmp_path, corpus, cache, capsys):
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "  "}])  # an empty query: fails after the output check
    out = tmp_path / "new" / "sub" / "o.trec"
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(out), *cache]) == 2
    assert "Traceback" not in capsys.readouterr().err and not (tmp_path / "new").exists()
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris"}])
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(out), *cache]) == 0
    assert out.is_file() and out.with_name("o.ctxs.jsonl").is_file()  # made when written


def test_bm25_numbers_are_checked_in_one_place(tmp_path, corpus, cache, capsys, monkeypatch):
    # the library check (retrieval.bm25.check_bm25_numbers) is the CLI's: same words, refused before any work
    import retrieval.bm25 as bm25
    from retrieval.errors import ConfigError

    for kwargs, expected in (({"k1": -1}, "k1=-1: BM25 k1 must be >= 0"), ({"b": 1.5}, "b=1.5: BM25 b must be between 0 and 1"),
                             ({"k1": True}, "k1=True: BM25 k1 must be >= 0")):
        with pytest.raises(ConfigError, match=expected):
            bm25.Bm25Searcher(tmp_path / "no-index", **kwargs)  # the numbers first, not the missing folder
    calls = []
    monkeypatch.setattr(bm25, "check_bm25_numbers", lambda *a, **k: calls.append((a, k)))
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris"}])
    tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(tmp_path / "o.trec"), "--k1", "0.5", *cache])
    assert calls and calls[0][0][:2] == (0.5, None)


# ------------------------------------------------------------------------------------------------ corpus formats
def test_tsv_row_with_more_fields_than_the_header_is_an_error(tmp_path):
    from retrieval.corpus import load_corpus
    from retrieval.errors import DataError

    path = tmp_path / "c.tsv"  # the tab after "tragedy" made a 4th field that was dropped
    path.write_text("id\ttext\ttitle\np2\tParis is the capital of France.\tParis\np1\tHamlet is a tragedy\tby Shakespeare.\tHamlet\n")
    with pytest.raises(DataError, match=rf"^{path}:3: expected 3 tab-separated fields \(id, text, title\), got 4; "
                                        r"a tab inside a field needs the field quoted"):
        load_corpus(path)


@pytest.mark.parametrize("last, until", [
    ("p4\tNeil Armstrong walked on the Moon in 1969.\tMoon\n", "runs on to line 5 (the end of the file)"),  # never closed
    ('p4\tNeil Armstrong walked on the "Moon" in 1969.\tMoon\np5\tok\tT\n', "runs on to line 5"),  # closed 2 rows later
])
def test_tsv_unbalanced_quote_names_the_line_it_opened(tmp_path, last, until):
    from retrieval.corpus import load_corpus
    from retrieval.errors import DataError

    path = tmp_path / "c.tsv"
    path.write_text('id\ttext\ttitle\np1\tHamlet is a tragedy.\tHamlet\np2\t"Paris is the capital of France.\tParis\n'
                    "p3\tMount Everest is the highest mountain.\tEverest\n" + last)
    with pytest.raises(DataError, match=rf"^{path}:3: unbalanced '\"': the quoted field opened on this line is not closed "
                                        rf"on it and {until.replace('(', '[(]').replace(')', '[)]')}; close the quote"):
        load_corpus(path)
    path.write_text('id\ttext\ttitle\np1\tok\tT\np2\t"open at the end\tT')  # the last line, no line end
    with pytest.raises(DataError, match=rf"^{path}:3: unbalanced '\"': the quoted field opened on this line is never closed"):
        load_corpus(path)
    # DPR's quoting (a quoted field, inner quotes doubled) and quotes inside an unquoted text still read as before
    path.write_text('id\ttext\ttitle\n1\t"Aaron ( or ; ""Aharon"") is a prophet"\tAaron\n2\tthe "Moon" landing\tMoon\n')
    assert [(p.docid, p.title, p.text) for p in load_corpus(path)] == [
        ("1", "Aaron", 'Aaron ( or ; "Aharon") is a prophet'), ("2", "Moon", 'the "Moon" landing')]


def test_tsv_quoted_field_with_a_line_break_is_named_as_such(tmp_path):
    from retrieval.corpus import load_corpus
    from retrieval.errors import DataError

    path = tmp_path / "c.tsv"  # the quote closes: it was called 'not closed on it and runs on to line 3'
    path.write_text('id\ttext\ttitle\n1\t"line one\nline two"\tT\n2\tok\tU\n')
    with pytest.raises(DataError) as exc:
        load_corpus(path)
    assert str(exc.value) == (f"{path}:2: a line break inside a quoted field (the quote opened on this line closes on line 3); "
                              "a passage stays on one line: replace the line break with a space")


def test_tsv_trailing_tab_is_an_empty_extra_field_and_read(tmp_path):
    from retrieval.corpus import load_corpus

    path = tmp_path / "c.tsv"  # read before; then refused with 'a tab inside a field needs the field quoted'
    path.write_text("id\ttext\ttitle\np1\tHamlet is a tragedy.\tHamlet\t\np2\tParis is the capital.\tParis\t\t\n")
    assert [(p.docid, p.title, p.text) for p in load_corpus(path)] == [
        ("p1", "Hamlet", "Hamlet is a tragedy."), ("p2", "Paris", "Paris is the capital.")]


@pytest.mark.parametrize("name", ["c.ndjson", "c.txt", "c.ndjson.gz", "c"])
def test_jsonl_corpus_with_another_extension_is_read(tmp_path, name):
    import gzip

    from retrieval.corpus import load_corpus

    body = ("\n" + "".join(json.dumps(p) + "\n" for p in PASSAGES)).encode()  # a blank first line too
    (tmp_path / name).write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    (tmp_path / "c.jsonl").write_bytes(body)
    corpus = load_corpus(tmp_path / name)
    assert [p.docid for p in corpus] == ["p1", "p2", "p3"] and corpus.fingerprint == load_corpus(tmp_path / "c.jsonl").fingerprint


def test_rebuild_command_of_a_named_corpus_names_its_data_folder(tmp_path, data_dir):
    import shutil

    from retrieval.bm25 import rebuild_command
    from retrieval.cli import _index_parser
    from retrieval.corpus import named_corpus

    d = tmp_path / "my data"  # a data folder other than $TOKRAG_DATA_DIR: the command must name it
    for sub in ("nq_open_oracle", "dpr_wiki_sample1k"):
        shutil.copytree(data_dir / sub, d / sub)
    command = rebuild_command(named_corpus("nq-dpr-1k", d), tmp_path / "idx")
    assert command == f"tokrag index build --corpus nq-dpr-1k --data-dir '{d}' --index {tmp_path / 'idx'} --force"
    a = _index_parser().parse_args(shlex.split(command)[2:])
    assert (a.corpus, a.data_dir, a.index, a.force) == ("nq-dpr-1k", str(d), str(tmp_path / "idx"), True)


def test_utf8_bom_is_skipped_in_corpora_and_topics(tmp_path):
    from retrieval.cli import load_topics
    from retrieval.corpus import load_corpus, load_queries

    bom = b"\xef\xbb\xbf"
    files = {"c.jsonl": "".join(json.dumps(p) + "\n" for p in PASSAGES),
             "c.tsv": "id\ttext\ttitle\n" + "".join(f"{p['id']}\t{p['text']}\t{p['title']}\n" for p in PASSAGES),
             "t.jsonl": json.dumps({"qid": "a", "question": "where is paris", "answers": ["paris"]}) + "\n",
             "t.tsv": "a\twhere is paris\n"}
    for name, body in files.items():
        (tmp_path / name).write_bytes(body.encode())
        (tmp_path / f"bom-{name}").write_bytes(bom + body.encode())
    for name in ("c.jsonl", "c.tsv"):
        assert load_corpus(tmp_path / f"bom-{name}").fingerprint == load_corpus(tmp_path / name).fingerprint
    assert load_queries(tmp_path / "bom-t.tsv") == load_queries(tmp_path / "bom-t.jsonl") == {"a": "where is paris"}
    assert load_topics(str(tmp_path / "bom-t.jsonl"))[1] == {"a": ["paris"]}


def test_json_object_keyed_by_id_is_not_read_as_wikipedia_summaries(tmp_path):
    from retrieval.corpus import load_corpus
    from retrieval.errors import DataError

    path = tmp_path / "c.json"  # was read as summaries: ids 'wiki-Hamlet', 'wiki-Paris', so no gold id ever matched
    path.write_text(json.dumps({p["id"]: {"title": p["title"], "text": p["text"]} for p in PASSAGES}))
    with pytest.raises(DataError, match=rf"^{path}: one JSON object of records without 'extract' \(e.g. entry 'p1'\) is no "
                                        r"corpus format tokrag reads; write one \{id, title, text\} record per line "
                                        r"\(supported corpus files: \.jsonl/\.json .*\.tsv .*\)$"):
        load_corpus(path)
    path.write_text(json.dumps({"A": {"title": "A", "extract": "first"}, "B": {"title": "B", "text": "second"}}))
    with pytest.raises(DataError, match=rf"^{path}: entry 'B' has no 'extract' field"):
        load_corpus(path)


def test_jsonl_record_with_contents_and_text_is_an_error(tmp_path):
    from retrieval.corpus import load_corpus
    from retrieval.errors import DataError

    path = _jsonl(tmp_path / "c.jsonl", [PASSAGES[0], {**PASSAGES[1], "contents": "Something else entirely"}])
    with pytest.raises(DataError, match=rf"^{path}:2: passage 'p2' has both 'contents' and 'text'; keep one of them"):
        load_corpus(path)


@pytest.mark.parametrize("name", ["c.csv", "c.txt", "c.csv.gz"])
def test_corpus_with_another_extension_names_the_supported_ones(tmp_path, cache, capsys, name):
    path = tmp_path / name
    path.write_text("id,title,text\np1,Hamlet,Hamlet is a tragedy.\n")
    assert tokrag(["index", "build", "--corpus", str(path), "--index", str(tmp_path / "idx"), *cache]) == 2
    err = capsys.readouterr().err
    ext = name[1:]
    assert f"corpus file {path}: the extension {ext!r} is no corpus format tokrag reads; convert or rename it" in err
    assert "(supported corpus files: .jsonl/.json" in err and ".tsv (DPR" in err and "malformed JSON" not in err


def test_relative_missing_paths_name_the_working_directory(tmp_path, corpus, cache, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris"}])
    assert tokrag(["retrieve", "--corpus", "data/c.jsonl", "--topics", topics, "--output", "o.trec", *cache]) == 2
    assert f"corpus path data/c.jsonl does not exist (relative to the working directory {tmp_path})" in capsys.readouterr().err
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", "q/t.jsonl", "--output", "o.trec", *cache]) == 2
    assert f"--topics 'q/t.jsonl': not a file (relative to the working directory {tmp_path})" in capsys.readouterr().err
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", "/abs/t.jsonl", "--output", "o.trec", *cache]) == 2
    assert "working directory" not in capsys.readouterr().err  # an absolute path needs no note


def test_eval_with_tsv_topics_says_answers_need_jsonl(tmp_path, corpus, cache, capsys):
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\twhere is paris\n")
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", str(tsv), "--output", str(tmp_path / "o.trec"), *cache]) == 0
    capsys.readouterr()
    assert tokrag(["retrieve", "eval", "--run", str(tmp_path / "o.ctxs.jsonl"), "--topics", str(tsv)]) == 2
    err = capsys.readouterr().err
    assert f"--topics {tsv}: TSV topics (qid<TAB>query) carry no answers or gold ids" in err
    assert "give the topics as JSONL with 'answers'" in err and "are these the topics" not in err


def test_gold_ids_absent_from_the_corpus_are_an_error(tmp_path, corpus, cache, capsys):
    # gold "P1" for corpus id "p1": gold@1 read 0.6667 with no note
    topics = _jsonl(tmp_path / "t.jsonl", [
        {"qid": "a", "question": "where is paris", "answers": ["paris"], "gold_docids": ["p2"]},
        {"qid": "b", "question": "who won the nobel prize in physics", "answers": ["curie"], "gold_docids": ["P1"]},
    ])
    out = tmp_path / "o.trec"
    expected = f"{topics}:2: gold_docids ['P1'] are not in corpus {corpus} (3 passages); fix the ids or pass the corpus that holds them"
    # retrieve uses the gold ids only to leave them out: checked with --exclude-gold only
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(out), "--hits", "1", "--exclude-gold",
                   *cache]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and not out.exists()
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", topics, "--output", str(out), "--hits", "1", *cache]) == 0
    capsys.readouterr()
    assert tokrag(["retrieve", "eval", "--run", str(out), "--corpus", corpus, "--topics", topics, "--k", "1"]) == 2
    err = capsys.readouterr().err  # scoring a TREC run checks the same (the run's queries), with another way out
    assert expected + ", or use topics without gold_docids (answer recall only)" in err


def test_retrieve_takes_topics_whose_gold_ids_are_in_another_corpus(tmp_path, corpus, cache, capsys):
    # 'retrieve --corpus wiki-vital --topics nq-oracle:5' (the gold passages are not Wikipedia lead paragraphs) was refused
    out = tmp_path / "o.trec"
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", "nq-oracle:2", "--output", str(out), "--hits", "2", *cache]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "o.ctxs.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["nq-oracle-0", "nq-oracle-1"]
    assert {c["docid"] for r in rows for c in r["ctxs"]} <= {"p1", "p2", "p3"}
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", "nq-oracle:2", "--output", str(out), "--exclude-gold",
                   *cache]) == 2
    err = capsys.readouterr().err
    assert "--topics nq-oracle:2 question 'nq-oracle-0': gold_docids ['nq-" in err
    assert f"are not in corpus {corpus} (3 passages)" in err


def _count_corpus_loads(monkeypatch) -> list:
    import retrieval.corpus

    loads, real = [], retrieval.corpus.resolve_corpus
    monkeypatch.setattr(retrieval.corpus, "resolve_corpus", lambda *a, **k: loads.append(a) or real(*a, **k))
    return loads


def test_eval_of_a_jsonl_run_reads_the_corpus_only_for_gold_ids_not_in_the_run(tmp_path, corpus, cache, capsys, monkeypatch):
    out = tmp_path / "o.trec"
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", _jsonl(tmp_path / "q.jsonl", [
        {"qid": "a", "question": "where is paris"}, {"qid": "b", "question": "who won the nobel prize in physics"}]),
        "--output", str(out), "--hits", "1", *cache]) == 0
    run = str(tmp_path / "o.ctxs.jsonl")  # a: p2, b: p1
    loads = _count_corpus_loads(monkeypatch)
    capsys.readouterr()

    def score(rows, corpus_arg=corpus):
        code = tokrag(["retrieve", "eval", "--run", run, "--corpus", corpus_arg, "--topics", _jsonl(tmp_path / "t.jsonl", rows),
                       "--k", "1", "--json"])
        return code, capsys.readouterr()

    # gold ids all among the run's passages (the run was retrieved from the corpus): the corpus is not read
    code, res = score([{"qid": "a", "question": "where is paris", "gold_docids": ["p2"]},
                       {"qid": "b", "question": "who won the nobel prize in physics", "answers": ["curie"],
                        "gold_docids": ["p1"]}])  # the text b was retrieved for: retrieve eval compares them
    assert code == 0 and loads == [] and json.loads(res.out)["gold@1"] == 1.0
    code, res = score([{"qid": "a", "question": "where is paris", "answers": ["paris"]}])  # answers only: nothing to check
    assert code == 0 and loads == [] and json.loads(res.out)["answer_recall@1"] == 1.0
    # a gold id the run lacks: read the corpus, which holds it (p3) or not (P2)
    code, res = score([{"qid": "a", "question": "where is paris", "gold_docids": ["p3"]}])
    assert code == 0 and len(loads) == 1 and json.loads(res.out)["gold@1"] == 0.0
    code, res = score([{"qid": "a", "question": "where is paris", "gold_docids": ["P2"]}])
    assert code == 2 and len(loads) == 2
    assert (f"{tmp_path / 't.jsonl'}:1: gold_docids ['P2'] are not in corpus {corpus} (3 passages); fix the ids or pass the "
            "corpus that holds them, or use topics without gold_docids (answer recall only)") in res.err
    code, res = score([{"qid": "a", "question": "where is paris", "answers": ["paris"]}], str(tmp_path / "nothing.jsonl"))
    assert code == 2 and f"corpus path {tmp_path / 'nothing.jsonl'} does not exist" in res.err  # a typo is still named


def test_eval_of_a_dpr_style_ctxs_jsonl_compares_its_passage_ids_as_the_gold_ids(tmp_path, capsys):
    """A ctxs JSONL of another tool (DPR/FiD: the question id and the passage ids under 'id', or integer ids) scored
    gold@k 0 without a note, or stopped: 'id' was not read and an integer docid 12 was compared with the gold id "12"."""
    run = _jsonl(tmp_path / "fid.jsonl", [
        {"id": "q1", "question": "where is paris", "answers": ["France"],
         "ctxs": [{"id": "p2", "title": "Paris", "text": PASSAGES[1]["text"], "score": 12.0},
                  {"id": "p1", "title": "Nobel", "text": PASSAGES[0]["text"], "score": 3.0}]},
        {"qid": "q2", "question": "who won the nobel prize in physics",
         "ctxs": [{"docid": 12, "title": "Nobel", "text": PASSAGES[0]["text"]},
                  {"docid": 7, "title": "Numbers", "text": PASSAGES[2]["text"]}]},
    ])
    topics = _jsonl(tmp_path / "t.jsonl", [
        {"qid": "q1", "question": "where is paris", "answers": ["France"], "gold_docids": ["p2"]},  # rank 1
        {"qid": "q2", "question": "who won the nobel prize in physics", "answers": ["Curie"], "gold_docids": [12]},  # rank 1
    ])
    assert tokrag(["retrieve", "eval", "--run", run, "--topics", topics, "--k", "1", "2", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {"num_queries": 2, "answer_recall@1": 1.0, "answer_recall@2": 1.0,
                                   "gold@1": 1.0, "gold@2": 1.0, "mrr": 1.0}
    assert "note:" not in cap.err
    # passages without any id: the gold cannot be decided from the run; unavailable with a note, not a false 0
    bare = _jsonl(tmp_path / "bare.jsonl", [{"qid": q, "ctxs": [{"title": "Paris", "text": PASSAGES[1]["text"]}]}
                                            for q in ("q1", "q2")])
    assert tokrag(["retrieve", "eval", "--run", bare, "--topics", topics, "--k", "1", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {"num_queries": 2, "answer_recall@1": 0.5, "gold@1": None, "mrr": None}
    assert cap.err.strip() == (f"note: no passage in {bare} has an id ('docid', 'id' or '_id'), so gold@k and MRR are "
                               "unavailable; give each passage its corpus id, or score the run's TREC file with --corpus")
    assert tokrag(["retrieve", "eval", "--run", bare, "--topics", topics, "--k", "1"]) == 0
    table = capsys.readouterr().out
    assert "gold@1           unavailable" in table and "mrr              unavailable" in table


def test_eval_of_a_jsonl_run_with_a_prebuilt_corpus_is_scored(tmp_path, corpus, cache, capsys):
    # '--corpus prebuilt:wikipedia-dpr-100w' was ignored for a ctxs JSONL run, then refused as an unknown corpus
    out = tmp_path / "o.trec"
    questions = _jsonl(tmp_path / "q.jsonl", [{"qid": "a", "question": "where is paris"}])
    assert tokrag(["retrieve", "--corpus", corpus, "--topics", questions, "--output", str(out), "--hits", "1", *cache]) == 0
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris", "answers": ["paris"],
                                           "gold_docids": ["P2"]}])
    capsys.readouterr()
    assert tokrag(["retrieve", "eval", "--run", str(tmp_path / "o.ctxs.jsonl"), "--corpus", "prebuilt:wikipedia-dpr-100w",
                   "--topics", topics, "--k", "1", "--json"]) == 0  # its ids cannot be listed: the gold ids are not checked
    assert json.loads(capsys.readouterr().out) == {"answer_recall@1": 1.0, "gold@1": 0.0, "mrr": 0.0, "num_queries": 1}
    assert tokrag(["retrieve", "eval", "--run", str(out), "--corpus", "prebuilt:wikipedia-dpr-100w", "--topics", topics]) == 2
    assert ("--corpus prebuilt:wikipedia-dpr-100w: the passage texts of a TREC run over a prebuilt corpus are not local; "
            "score the run's ctxs JSONL (written beside it by tokrag retrieve) instead") in capsys.readouterr().err


def test_stale_explicit_index_names_the_command_that_replaces_it(tmp_path, corpus, cache, capsys):
    idx = tmp_path / "my index"
    assert tokrag(["index", "build", "--corpus", corpus, "--index", str(idx), *cache]) == 0
    other = _jsonl(tmp_path / "other.jsonl", PASSAGES[:2])
    assert tokrag(["index", "build", "--corpus", other, "--index", str(idx), *cache]) == 2
    command = f"tokrag index build --corpus {other} --index '{idx}' --force"
    err = capsys.readouterr().err
    assert "holds a BM25 index of another corpus" in err and f"to replace it run: {command} (force=True in Python)" in err
    assert tokrag(shlex.split(command)[1:] + cache) == 0  # the command as given works
    assert json.loads((idx / "tokrag_index.json").read_text())["num_docs"] == 2


def test_mrr_cut_off_follows_the_rule_of_the_other_metrics(tmp_path, capsys):
    # mrr(run, gold, k=0) scored the whole ranking (ctxs[:k] if k else ...) and k=-1 all but the last passage,
    # where recall@k and gold@k refuse a k < 1
    from retrieval.errors import ConfigError
    from retrieval.metrics import gold_at_k, mrr

    run = {"a": [{"docid": "7"}, {"docid": "12"}], "b": [{"docid": "1"}, {"docid": "2"}, {"docid": "30"}]}
    gold = {"a": [12], "b": ["30"]}
    assert mrr(run, gold) == pytest.approx((1 / 2 + 1 / 3) / 2)  # no k: the whole ranking
    assert mrr(run, gold, 3) == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert mrr(run, gold, 2) == pytest.approx(1 / 2 / 2)
    assert mrr(run, gold, 1) == 0.0
    for k in (0, -1, 2.0):
        with pytest.raises(ConfigError, match=rf"^k={k!r}: k must be an integer >= 1 \(or None: the whole ranking\)$"):
            mrr(run, gold, k)
        with pytest.raises(ConfigError, match=rf"^k={k!r}: k must be an integer >= 1$"):
            gold_at_k(run, gold, k)
    # no command passes a k to mrr (retrieve eval's MRR is over the whole ranking); its --k 0 is refused
    path = _jsonl(tmp_path / "run.jsonl", [{"id": 1, "ctxs": [{"id": 12, "text": "x"}]}])
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": 1, "question": "q", "gold_docids": [12]}])
    assert tokrag(["retrieve", "eval", "--run", path, "--topics", topics, "--k", "0", "--json"]) == 2
    assert capsys.readouterr().err.strip() == "tokrag retrieve: error: --k [0]: cut-offs must be >= 1"
