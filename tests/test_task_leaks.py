"""Passages that leak what is scored: the article's own passages in wikitext103_bm25_wiki, gold answers left in
counterfactual passages, the counterfactual kind of an answer, and gold passage ids with '#'."""

from __future__ import annotations

import json
import types

import pytest

# WikiText-103 test articles in the raw format (titles as the data set writes them) and the DPR title of each
PAGES = {
    "Kiss You (One Direction song)": " = Kiss You ( One Direction song ) = \n \n \" Kiss You \" is a song recorded by "
                                     "English @-@ Irish boy band One Direction for their second studio album . \n",
    "Ise-class battleship": " = Ise @-@ class battleship = \n \n The Ise @-@ class battleships were a pair of dreadnought "
                            "battleships built for the Imperial Japanese Navy during World War I . \n",
    "2011–12 Michigan Wolverines men's basketball team": " = 2011 – 12 Michigan Wolverines men 's basketball team = \n \n The "
                                                         "2011 – 12 Michigan Wolverines men 's basketball team represented "
                                                         "the University of Michigan . \n",
    "Meridian, Mississippi": " = Meridian , Mississippi = \n \n Meridian is the sixth @-@ largest city in the state of "
                             "Mississippi . \n",
    "Robert Boulter": " = Robert Boulter = \n \n Robert Boulter is an English film , television and theatre actor . \n",
}


def test_wikitext_drops_the_articles_own_passages_for_punctuated_titles(tmp_path, monkeypatch):
    import retrieval
    from tasks import wikitext

    d = tmp_path / "wikitext-103-raw-v1"
    d.mkdir()
    (d / "test.jsonl").write_text("".join(json.dumps({"page": p}) + "\n" for p in PAGES.values()))
    own = list(PAGES)

    def fake_retrieve(corpus, queries, **kw):  # every chunk retrieves its own article's DPR passage at rank 1
        ctxs = {}
        for qid in queries:
            a = int(qid.split("-")[1])
            ctxs[qid] = [{"docid": f"own{a}", "title": own[a], "text": "the article's own passage", "score": 9.0, "rank": 1},
                         {"docid": f"other{a}", "title": "Something else", "text": "...", "score": 1.0, "rank": 2}]
        return types.SimpleNamespace(ctxs=ctxs, fingerprint="fake", config={})

    monkeypatch.setattr(retrieval, "retrieve", fake_retrieve)
    monkeypatch.setattr(retrieval, "check_run_sanity", lambda run: None)
    docs = wikitext.build_wikitext_docs(k=3, hub_id=str(tmp_path), corpus="prebuilt:wikipedia-dpr-100w")
    assert [d["title"] for d in docs] == ["Kiss You ( One Direction song )", "Ise @-@ class battleship",
                                         "2011 – 12 Michigan Wolverines men 's basketball team", "Meridian , Mississippi",
                                         "Robert Boulter"]
    # old code: the own passage stayed for the first four (only lower-cased titles were compared)
    assert [[c["docid"] for c in d["ctxs"]] for d in docs] == [[f"other{a}"] for a in range(5)]


def test_title_key_ignores_case_spaces_and_punctuation_only():
    from tasks.wikitext import title_key

    assert title_key("Ise @-@ class battleship", wikitext=True) == title_key("Ise-class battleship") == "iseclassbattleship"
    assert title_key("2011 – 12 Michigan Wolverines men 's basketball team", wikitext=True) == \
        title_key("2011–12 Michigan Wolverines men's basketball team")
    assert title_key("Meridian , Mississippi", wikitext=True) != title_key("Meridian, Idaho")
    assert title_key("") == ""


def test_gold_at_k_keeps_ids_with_hash_and_strips_only_the_counterfactual_suffix():
    from tasks.rag import CF_SUFFIX
    from tasks.utils import process_results_qa

    assert CF_SUFFIX == "#cf"
    doc = {"answers": ["Paris"], "gold_docids": ["enwiki#Paris#p3"],
           "ctxs": [{"docid": "enwiki#Paris#p3", "title": "Paris", "text": "Paris is the capital of France."}]}
    assert process_results_qa(doc, ["Paris"])["gold_at_k"] == 1.0  # old code: 0.0 (the id was cut at the first '#')
    doc["ctxs"][0]["docid"] = "enwiki#Paris#p3#cf"  # its counterfactual version counts, as before
    assert process_results_qa(doc, ["Paris"])["gold_at_k"] == 1.0
    doc["ctxs"][0]["docid"] = "enwiki#Paris#p4"
    assert process_results_qa(doc, ["Paris"])["gold_at_k"] == 0.0


@pytest.mark.parametrize("answer,kind", [
    # real NQ-open golds that the old rule (a month word or a year anywhere) called dates
    ("June Gable", "other"), ("Hon July Moyo", "other"), ("April Kepner M.D.", "other"),
    ("The Data Protection Act 1998", "other"), ("The 1700 Cascadia earthquake", "other"),
    ("the disputed 1824 presidential election", "other"), ("the 2001–2002 season", "other"),
    ("introduced around 1940", "other"), ("the second Sunday of March", "other"),
    # whole-answer dates, with and without a short prefix
    ("June 1, 1969", "date"), ("1969", "date"), ("12\xa0April\xa01979", "date"), ("in 1997", "date"),
    ("till September", "date"), ("mid November", "date"), ("By mid-1988", "date"), ("2015,", "date"),
    ("1780–1830", "date"), ("1993–94", "date"), ("1979/80", "date"), ("October\xa02003\xa0– present", "date"),
    ("1560s", "date"), ("the 1840s", "date"),
    # numbers and names as before
    ("1.5", "numeric"), ("3,000", "numeric"), ("12 million", "numeric"), ("seven", "numeric"), ("30 km", "numeric"),
    ("Paris", "other"),
])
def test_answer_kind_calls_only_whole_answers_dates(answer, kind):
    from tasks.rag import answer_kind

    assert answer_kind(answer) == kind


@pytest.mark.parametrize("title,text,answers,sub,want_title,want_text", [
    # real NQ-oracle golds whose swapped passage kept the answer under SQuAD normalisation (nq-dev-2580, -0897, -2104)
    ("Vanishing point", "A vanishing point is a point on the image plane.", ["A vanishing point"], "Saint Peter",
     "Saint Peter", "Saint Peter is a point on the image plane."),
    ("Speaker of the United States House of Representatives",
     "The House of Representatives elects the Speaker of the House.", ["The House of Representatives"], "Charles County",
     "Speaker of the United States Charles County", "Charles County elects the Speaker of the House."),
    ("1700 Cascadia earthquake", "The 1700 Cascadia earthquake occurred along the Cascadia subduction zone.",
     ["The 1700 Cascadia earthquake"], "New Zealand", "New Zealand", "New Zealand occurred along the Cascadia subduction zone."),
    ("Kate Mulgrew", 'Katherine Kiernan Maria "Kate" Mulgrew (born 1955), (Kate Mulgrew).', ['"Kate" Mulgrew'], "Egypt",
     "Egypt", 'Katherine Kiernan Maria Egypt (born 1955), (Egypt).'),
])
def test_counterfactual_swap_leaves_no_normalised_gold(title, text, answers, sub, want_title, want_text):
    from tasks.metrics import normalize_answer
    from tasks.rag import swap_answer

    new_title, new_text, n = swap_answer(title, text, answers, sub)
    assert (new_title, new_text) == (want_title, want_text)  # old code: the title (and text) kept the answer
    from tasks.rag import contains_normalised

    assert not contains_normalised(f"{new_title}\n{new_text}", answers)
    assert n >= 2 and normalize_answer(sub) in normalize_answer(new_text)


def test_counterfactual_task_on_nq_oracle_has_no_normalised_gold_and_the_same_questions(data_dir):
    from tasks.metrics import normalize_answer
    from tasks.rag import build_qa_docs

    def holds(text, answers):  # SQuAD-normalised containment, written out so the test reads it without tasks.rag
        words = f" {normalize_answer(text)} "
        return any(g and f" {g} " in words for g in map(normalize_answer, answers))

    docs = build_qa_docs("nq_oracle", counterfactual=True, gold_only=True)
    assert len(docs) == 2382  # nq-dev-0954 (gold '), starting on': no literal answer in its passage) stays out
    assert "nq-dev-0954" not in {d["qid"] for d in docs}
    left = [d["qid"] for d in docs if holds(f"{d['ctxs'][0]['title']}\n{d['ctxs'][0]['text']}", d["answers"])]
    # old code (before 53f055b): 34 (nq-dev-2580 'A vanishing point', nq-dev-0897 'The House of Representatives', ...);
    # since version 8.0 a normalised swap stays within a sentence, so 'album Ringo. Starr co-wrote' is kept (WARNING)
    assert left == ["nq-dev-3047"]


def test_counterfactual_swap_stays_within_a_sentence(data_dir, caplog):
    """53f055b's normalised swap ran across a sentence stop and took an abbreviation's period (version 7.0)."""
    import logging

    from tasks import data
    from tasks.rag import build_qa_docs, contains_normalised, holds_normalised_gold, swap_answer

    row = next(r for r in data.load_nq_oracle() if r["qid"] == "nq-dev-3047")
    text, answers = row["gold"]["text"], row["answers"]
    assert "1973 album Ringo. Starr co-wrote" in text and "Ringo Starr" in answers
    _, new_text, _ = swap_answer(row["gold"]["title"], text, answers, "Hugo von Mohl")
    assert "1973 album Ringo. Starr co-wrote" in new_text  # old code: '1973 album Hugo von Mohl co-wrote'
    assert "Ringo Starr" not in new_text and "George Harrison" not in new_text
    # the swap's containment check agrees with the swap; the metrics' whole-text rule still sees the stop-crossing gold
    assert not contains_normalised(new_text, answers) and holds_normalised_gold(new_text, answers)
    assert swap_answer("X", "He lived in Washington D.C. then.", ["Washington, D.C."], "Boston") == (
        "X", "He lived in Boston then.", 1)  # old code: 'He lived in Boston. then.'
    assert swap_answer("X", "the 1970 album Osmonds. It was", ["The Osmonds"], "Boston")[1] == "the 1970 album Boston. It was"
    # an answer that crosses a stop as written may be matched across it; one that does not, may not
    assert swap_answer("X", "Hello mr smith there.", ["Mr. Smith"], "Ann")[1] == "Hello Ann there."
    assert swap_answer("X", "Hello Mr. Smith there.", ["Mr Smith"], "Ann") == ("X", "Hello Mr. Smith there.", 0)
    assert contains_normalised("Hello Mr. Smith there.", ["Mr. Smith"])  # a literal occurrence is still caught
    with caplog.at_level(logging.WARNING, logger="tasks.rag"):
        docs = build_qa_docs("nq_oracle", counterfactual=True, gold_only=True)
    assert len(docs) == 2382
    assert any("1 of 2383 questions keep a gold answer" in m and "nq-dev-3047" in m for m in caplog.messages)


def test_noise_skips_passages_holding_a_normalised_gold(data_dir):
    from retrieval import has_answer
    from retrieval.corpus import resolve_corpus
    from tasks import data
    from tasks.metrics import normalize_answer
    from tasks.rag import add_noise

    def contains_normalised(text, answers):  # as tasks.rag.contains_normalised, written out
        words = f" {normalize_answer(text)} "
        return any(g and f" {g} " in words for g in map(normalize_answer, answers))

    corpus = resolve_corpus("nq-wiki-12k")
    row = next(r for r in data.load_nq_oracle() if r["qid"] == "nq-dev-0750")
    assert row["answers"] == ["24", "24 judges"]
    crimea = next(p for p in corpus.passages if p.docid == "wiki-Crimea")
    assert "2.4 million" in crimea.text and not has_answer(crimea.text, row["answers"])
    assert contains_normalised(crimea.text, row["answers"])  # '2.4' normalises to '24', which EM would score as gold
    dummy = [{"docid": f"x{i}", "title": "", "text": "", "score": 0.0, "rank": i + 1, "source": "retrieved"} for i in range(5)]
    ctxs = add_noise(dummy, corpus, row["qid"], row["answers"], row["gold_docids"], 1.0, 1234)
    assert "wiki-Crimea" not in [c["docid"] for c in ctxs]  # old code drew it
    assert not any(contains_normalised(f"{c['title']}\n{c['text']}", row["answers"]) for c in ctxs)
