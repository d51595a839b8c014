"""The paper's task families over the (stand-in) prebuilt DPR Wikipedia, and bring-your-own data.

Data: a few rows per family written here in the hub's schemas and layout (``<data>/trivia_qa/unfiltered.nocontext/
validation.jsonl``, ``<data>/kilt_tasks/trex/validation.jsonl``, ...); passages: the tiny prebuilt stand-ins of
``prebuilt_helpers`` (nothing is downloaded)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from prebuilt_helpers import PASSAGES, corpus, prebuilt, pyserini_cache, tiny_dpr  # noqa: F401 (fixtures)

from retrieval.errors import ConfigError, DataError
from tasks import TASK_DIR
from tasks.data import qa_split_of

HUB_ROWS = {
    "trivia_qa/unfiltered.nocontext/validation.jsonl": [
        {"question": "Which city is the capital of France?", "question_id": "tc_1", "question_source": "x", "entity_pages": {},
         "search_results": {}, "answer": {"value": "Paris", "aliases": ["Paris", "Paris, France", "City of Light"],
                                          "normalized_aliases": ["paris"], "type": "WikipediaEntity"}},
        {"question": "Who received the first Nobel Prize in Physics?", "question_id": "tc_2", "question_source": "x",
         "entity_pages": {}, "search_results": {}, "answer": {"value": "Wilhelm Rontgen", "aliases": ["Röntgen"]}},
        {"question": "Where is Berlin?", "question_id": "tc 3", "question_source": "x", "entity_pages": {}, "search_results": {},
         "answer": {"value": "Germany", "aliases": []}},
    ],
    "squad/plain_text/validation.jsonl": [
        {"id": "5733be284776f41900661182", "title": "Everest", "context": "...", "question": "what is the highest mountain on earth",
         "answers": {"text": ["Mount Everest", "Mount Everest", "Everest"], "answer_start": [0, 0, 6]}},
    ],
    "PopQA/test.jsonl": [
        {"id": 4222, "subj": "Tokyo", "prop": "country", "obj": "Japan", "question": "What is Tokyo the capital of?",
         "possible_answers": "[\"Japan\", \"Nippon\"]", "s_pop": 1000, "o_pop": 2000},
    ],
    "kilt_tasks/trex/validation.jsonl": [
        {"id": "trex-1", "input": "Nile [SEP] continent", "meta": {"template_questions": []},
         "output": [{"answer": "Africa", "meta": {"score": 0}, "provenance": [{"title": "Nile", "wikipedia_id": "1"}]},
                    {"answer": "", "provenance": []}]},
    ],
    "kilt_tasks/structured_zeroshot/validation.jsonl": [
        {"id": "zsre-1", "input": "Jupiter [SEP] parent astronomical body",
         "meta": {"template_questions": ["Which astronomical body does Jupiter orbit?"]},
         "output": [{"answer": "Sun", "provenance": []}]},
    ],
    "kilt_tasks/eli5/validation.jsonl": [
        {"id": "eli5-1", "input": "Why is the Amazon river so large?", "meta": {},
         "output": [{"answer": "It drains a huge rainy basin, so it carries the largest volume of water of any river."},
                    {"answer": "Because of the rain."}]},
    ],
    "kilt_tasks/wow/validation.jsonl": [
        {"id": "wow-1", "input": "I love bananas.\nThey are great, so tasty!\nDo you know what color they are?", "meta": {},
         "output": [{"answer": "Bananas are an elongated, edible yellow fruit."}]},
    ],
    "wikitext_document_level/wikitext-103-raw-v1/test.jsonl": [
        {"page": " = Marie Curie = \n \n Marie Curie was a physicist and chemist in Paris who won the first Nobel Prize for "
                 "a woman , in physics in 1903 . She discovered polonium , a chemical element named after Poland . \n \n "
                 "= = Berlin and Africa = = \n \n She visited the capital of Germany , Berlin , and the Nile in Africa . \n"},
    ],
}


@pytest.fixture(scope="module")
def hub_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hub-data")
    for rel, rows in HUB_ROWS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return root


def _tasks(names, **meta):
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata=meta).load(names)["tasks"]


def _docs(task) -> list[dict]:
    return [dict(d) for d in task.test_docs()]


def test_family_rows_in_the_hub_schemas(hub_dir):
    from tasks.sources import load_family, slot_question

    tqa = load_family("triviaqa", data_dir=hub_dir)
    assert [r["qid"] for r in tqa] == ["tc_1", "tc_2", "tc_3"]  # whitespace in a hub id becomes "_"
    assert tqa[0]["answers"] == ["Paris", "Paris, France", "City of Light"]  # value + every alias, once each
    assert tqa[1]["answers"] == ["Wilhelm Rontgen", "Röntgen"]
    assert load_family("squad_open", data_dir=hub_dir)[0]["answers"] == ["Mount Everest", "Everest"]
    assert load_family("popqa", data_dir=hub_dir)[0] == {"qid": "popqa-4222", "question": "What is Tokyo the capital of?",
                                                        "answers": ["Japan", "Nippon"], "gold_docids": []}
    assert load_family("kilt_trex", data_dir=hub_dir)[0]["question"] == "What is the continent of Nile?"
    assert load_family("kilt_trex", data_dir=hub_dir)[0]["answers"] == ["Africa"]
    assert load_family("kilt_zsre", data_dir=hub_dir)[0]["question"] == "Which astronomical body does Jupiter orbit?"
    wow = load_family("kilt_wow", data_dir=hub_dir)[0]
    assert wow["query"] == "I love bananas. They are great, so tasty! Do you know what color they are?"
    assert len(load_family("kilt_eli5", data_dir=hub_dir)[0]["answers"]) == 2
    assert slot_question("X [SEP] date of birth") == "What is the date of birth of X?"
    # hub_id may name the local copy directly
    assert load_family("popqa", hub_id=str(hub_dir / "PopQA"))[0]["qid"] == "popqa-4222"


def test_family_errors_name_the_row(hub_dir, tmp_path):
    from tasks.sources import load_family

    bad = tmp_path / "trivia_qa" / "unfiltered.nocontext"
    bad.mkdir(parents=True)
    (bad / "validation.jsonl").write_text(json.dumps({"question": "q", "question_id": "a", "answer": {"value": "", "aliases": []}}) + "\n")
    with pytest.raises(DataError, match=r"trivia_qa row 0: no gold answer"):
        load_family("triviaqa", data_dir=tmp_path)
    (bad / "validation.jsonl").write_text(json.dumps({"question_id": "a", "answer": {"value": "x"}}) + "\n")
    with pytest.raises(DataError, match=r"row 0: missing field 'question'"):
        load_family("triviaqa", data_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"no files for split 'test'"):
        load_family("triviaqa", data_dir=tmp_path, hub_split="test")


def test_qa_wiki_tasks_over_the_prebuilt_index(prebuilt, hub_dir, tiny_dpr, tmp_path):
    meta = {"data_dir": str(hub_dir), "cache_dir": str(tmp_path)}
    tasks = _tasks(["triviaqa_bm25_wiki", "squad_open_bm25_wiki", "popqa_bm25_wiki", "trex_bm25_wiki", "zsre_bm25_wiki"], **meta)
    tqa = _docs(tasks["triviaqa_bm25_wiki"])
    # "Which city is the capital of France?" is in the dev pool (tasks/data.py): two test questions remain
    assert qa_split_of(HUB_ROWS["trivia_qa/unfiltered.nocontext/validation.jsonl"][0]["question"]) == "dev"
    assert [d["qid"] for d in tqa] == ["tc_2", "tc_3"]
    assert tqa[0]["ctxs"][0]["docid"] == "7" and tqa[0]["ctxs"][0]["title"] == "Wilhelm Rontgen"
    assert [c["rank"] for c in tqa[0]["ctxs"]] == list(range(1, len(tqa[0]["ctxs"]) + 1)) and len(tqa[0]["ctxs"]) <= 5
    assert tqa[1]["ctxs"][0]["title"] == "Berlin"
    assert tasks["triviaqa_bm25_wiki"].VERSION == 4.0
    out = tasks["triviaqa_bm25_wiki"].process_results(tqa[0], [" It was Röntgen.\n"])
    assert out["answer_match"] == 1.0 and out["answer_recall"] == 1.0 and "gold_at_k" not in out
    assert _docs(tasks["squad_open_bm25_wiki"])[0]["ctxs"][0]["title"] == "Mount Everest"
    assert _docs(tasks["popqa_bm25_wiki"])[0]["ctxs"][0]["title"] == "Tokyo"
    assert _docs(tasks["trex_bm25_wiki"])[0]["ctxs"][0]["title"] == "Nile"
    zsre = _docs(tasks["zsre_bm25_wiki"])[0]
    assert zsre["question"] == "Which astronomical body does Jupiter orbit?" and zsre["ctxs"][0]["title"] == "Jupiter"
    prompt = tasks["trex_bm25_wiki"].fewshot_context(_docs(tasks["trex_bm25_wiki"])[0], num_fewshot=0)
    assert prompt == "Answer the question with a short answer.\nQuestion: What is the continent of Nile?\nAnswer:"
    # metadata split: dev evaluates the pool question instead
    dev = _docs(_tasks(["triviaqa_bm25_wiki"], split="dev", **meta)["triviaqa_bm25_wiki"])
    assert [d["qid"] for d in dev] == ["tc_1"] and dev[0]["ctxs"][0]["title"] == "Paris"


def test_nq_open_dpr_and_hybrid_wiki_tasks(prebuilt, tiny_dpr, tmp_path, data_dir):
    """The NQ tasks carry their retrieval setting (DPR-multi; the hybrid with Pyserini's DPR-page alpha 1.3) into
    retrieval.retrieve. One question: the random tiny DPR encoder ranks every question alike, which the
    degenerate-retrieval guard would (rightly) stop."""
    import yaml

    from retrieval import retrieve

    cfg = yaml.safe_load((TASK_DIR / "qa" / "nq_open_hybrid_wiki.yaml").read_text())
    assert cfg["metadata"]["retriever_params"] == {"dense_index": "dpr-multi", "alpha": 1.3}
    assert cfg["metadata"]["corpus"] == "prebuilt:wikipedia-dpr-100w" and cfg["metadata"]["retriever"] == "hybrid"
    params = {"dense_index": "dpr-multi", "alpha": 1.3, "query_encoder": str(tiny_dpr[1])}
    meta = {"data_dir": str(data_dir), "cache_dir": str(tmp_path), "max_docs": 1, "retriever_params": params}
    (doc,) = _docs(_tasks(["nq_open_hybrid_wiki"], **meta)["nq_open_hybrid_wiki"])
    assert doc["question"] == "when was the last time anyone was on the moon" and doc["gold_docids"] == []  # nq-wiki-12k ids
    direct = retrieve("prebuilt:wikipedia-dpr-100w", {doc["qid"]: doc["question"]}, "hybrid", k=5, params=params, cache_dir=tmp_path)
    assert direct.searches == 0  # the task's own run, from the cache
    assert [c["docid"] for c in doc["ctxs"]] == direct.docids(doc["qid"]) and len(doc["ctxs"]) == 5
    assert doc["run_fingerprint"] == direct.fingerprint
    # without alpha the hybrid task stops with the reason, never with Pyserini's 0.1
    with pytest.raises(ConfigError, match="needs an explicit alpha"):
        _tasks(["nq_open_hybrid_wiki"], **{**meta, "retriever_params": {"query_encoder": str(tiny_dpr[1])}})
    dpr_params = {"dense_index": "dpr-multi", "query_encoder": str(tiny_dpr[1])}
    (d2,) = _docs(_tasks(["nq_open_dpr_wiki"], **{**meta, "retriever_params": dpr_params})["nq_open_dpr_wiki"])
    direct = retrieve("prebuilt:wikipedia-dpr-100w", {doc["qid"]: doc["question"]}, "dpr", k=5, params=dpr_params, cache_dir=tmp_path)
    assert direct.searches == 0 and [c["docid"] for c in d2["ctxs"]] == direct.docids(doc["qid"])


def test_eli5_and_wow_generation_metrics(prebuilt, hub_dir, tmp_path):
    from tasks.longform import rouge_l

    meta = {"data_dir": str(hub_dir), "cache_dir": str(tmp_path)}
    tasks = _tasks(["eli5_bm25_wiki", "wow_bm25_wiki"], **meta)
    eli5 = _docs(tasks["eli5_bm25_wiki"])[0]
    assert eli5["ctxs"][0]["title"] == "Amazon River"
    pred = "Because of the rain."
    out = tasks["eli5_bm25_wiki"].process_results(eli5, [pred])
    assert out == pytest.approx({"rougeL": 1.0, "rougeL_kilt_downstream": 1.0, "f1": 1.0})  # the second reference
    # LCS of "the amazon is huge" and reference 2 ("because of the rain"): "the" -> P=1/4, R=1/4
    assert rouge_l("the amazon is huge", ["Because of the rain."]) == pytest.approx(0.25)
    assert tasks["eli5_bm25_wiki"].config.generation_kwargs["max_gen_toks"] == 128
    wow = _docs(tasks["wow_bm25_wiki"])[0]
    assert wow["ctxs"][0]["title"] == "Banana"  # retrieved with the first and the last two turns
    assert tasks["wow_bm25_wiki"].fewshot_context(wow, num_fewshot=0) == (
        "Continue the conversation with one informative reply.\nI love bananas.\nThey are great, so tasty!\n"
        "Do you know what color they are?\nReply:")
    assert tasks["eli5_bm25_wiki"].fewshot_context(eli5, num_fewshot=0) == (
        "Answer the question in a few sentences.\nQuestion: Why is the Amazon river so large?\nAnswer:")
    base = _tasks(["eli5_bm25_wiki"], prompt="base", **meta)["eli5_bm25_wiki"]  # base models: no instruction
    assert base.fewshot_context(_docs(base)[0], num_fewshot=0) == "Question: Why is the Amazon river so large?\nAnswer:"
    out = tasks["wow_bm25_wiki"].process_results(wow, ["\nBananas are yellow.\nMore text"])
    # first line "Bananas are yellow." vs "Bananas are an elongated, edible yellow fruit.": 3 common tokens, P=1;
    # F1 drops the article "an" (SQuAD normalisation): R=3/6 -> 2/3; ROUGE-L keeps it: LCS 3 of 7 -> R=3/7 -> 0.6
    assert out["f1"] == pytest.approx(2 / 3)
    assert out["rougeL"] == pytest.approx(2 * 1 * (3 / 7) / (1 + 3 / 7))
    # KILT's too: 3 of 7 ("elongated," a token)
    assert out["rougeL_kilt_downstream"] == pytest.approx(2 * 1 * (3 / 7) / (1 + 3 / 7))


def test_wikitext103_chunks_passages_and_perplexities(prebuilt, hub_dir, tmp_path):
    from tasks.wikitext import chunk_article

    page = HUB_ROWS["wikitext_document_level/wikitext-103-raw-v1/test.jsonl"][0]["page"]
    task = _tasks(["wikitext103_bm25_wiki"], data_dir=str(hub_dir), cache_dir=str(tmp_path), chunk_words=10,
                  context_words=6)["wikitext103_bm25_wiki"]
    docs = _docs(task)
    chunks = chunk_article(page, 10, 6)
    assert [d["target"] for d in docs] == [c["target"] for c in chunks] and len(docs) == 6
    # the chunks tile the article from the end of the title's text: each character is scored once
    assert "".join(d["target"] for d in docs) == page[len(" = Marie Curie ="):]
    assert docs[0]["context"] == " = Marie Curie =" and docs[0]["question"] == "Marie Curie"
    assert docs[0]["target"].startswith(" \n \n Marie Curie was")
    assert docs[1]["context"] == "physicist and chemist in Paris who" and docs[1]["target"].startswith(" won the first Nobel")
    assert docs[4]["question"] == ". Berlin and Africa"  # heading marks removed from the query
    for d in docs:  # the article's own passages (title "Marie Curie") never come back
        assert all(c["title"] != "Marie Curie" for c in d["ctxs"]) and len(d["ctxs"]) <= 3
    assert docs[0]["ctxs"] == []  # only the article's own passages match its title
    assert [c["title"] for c in docs[1]["ctxs"]][:1] == ["Paris"] and docs[3]["ctxs"][0]["title"] == "Polonium"
    assert [c["rank"] for c in docs[5]["ctxs"]] == [1, 2, 3]
    assert task.doc_to_text(docs[1]) + task.doc_to_target(docs[1]) == docs[1]["context"] + docs[1]["target"]

    class LL(float):  # a model that reports the token count with the log-likelihood
        n_tokens = 20

    t = docs[1]["target"]
    out = task.process_results(docs[1], [(LL(-30.0), False)])
    assert out["word_perplexity"] == (-30.0, 10) and out["byte_perplexity"] == (-30.0, len(t.encode()))
    assert out["bits_per_byte"] == (-30.0, len(t.encode())) and out["token_perplexity"] == (-30.0, 20)
    assert "token_perplexity" not in task.process_results(docs[1], [(-30.0, False)])
    from tasks.wikitext import load_wikitext103

    with pytest.raises(ConfigError, match=r"unknown task metadata key 'chunk_word' \(did you mean 'chunk_words'\?\)"):
        load_wikitext103(chunk_word=10)


def test_wikitext103_scores_each_character_once():
    """lm-eval's convention moves a context's trailing whitespace to the front of the continuation
    (``RAGMethodLM.split_context``, as hf's ``_encode_pair``). Until task version 2.0 every context ended with the
    whitespace that also ended the previous chunk's target, so it was scored twice while bytes and words were counted
    once (a review: SmolLM2-135M bits/byte 0.9700 instead of 0.9598 on 4 chunks of 128 words). Now the continuations the
    model scores are exactly the targets, and they tile the article after its title."""
    from tasks.wikitext import chunk_article
    from tokrag_model.base import RAGMethodLM

    pages = [HUB_ROWS["wikitext_document_level/wikitext-103-raw-v1/test.jsonl"][0]["page"],
             " = A = \n \n x  y\n\nz \n \n = = B = = \n \n w v u . \n", "no title here ,  just   words \n"]
    for page in pages:
        for words, ctx_words in [(1, 1), (2, 3), (3, 2), (10, 6)]:
            chunks = chunk_article(page, words, ctx_words)
            scored = [RAGMethodLM.split_context(None, c["context"], c["target"])[1] for c in chunks if c["context"]]
            assert scored == [c["target"] for c in chunks if c["context"]], (page, words)
            title = page.index("=", page.index("=") + 1) + 1 if page.lstrip().startswith("=") else 0
            assert "".join(c["target"] for c in chunks) == page[title:], (page, words)
            assert sum(len(c["target"].split()) for c in chunks) == len(page[title:].split())


def test_wikitext103_through_lm_eval(prebuilt, hub_dir, tmp_path):
    """Aggregation by lm-eval: exp(-sum ll / sum words); token perplexity absent when the model gives no counts."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    class PerWord(LM):  # -2 nats per whitespace word of the continuation
        def loglikelihood(self, requests, disable_tqdm=False):
            return [(-2.0 * len(r.args[1].split()), False) for r in requests]

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def generate_until(self, requests, disable_tqdm=False):
            raise NotImplementedError

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False,
                     metadata={"data_dir": str(hub_dir), "cache_dir": str(tmp_path), "chunk_words": 10, "context_words": 6})
    res = simple_evaluate(model=PerWord(), tasks=["wikitext103_bm25_wiki"], task_manager=tm, bootstrap_iters=0)
    r = res["results"]["wikitext103_bm25_wiki"]
    page = HUB_ROWS["wikitext_document_level/wikitext-103-raw-v1/test.jsonl"][0]["page"]
    body = page[len(" = Marie Curie ="):]  # every byte after the title's text, the blank lines before the body included
    assert r["word_perplexity,none"] == pytest.approx(math.exp(2.0))
    assert r["bits_per_byte,none"] == pytest.approx(2.0 * len(body.split()) / len(body.encode()) / math.log(2))
    assert "token_perplexity,none" not in r


# ------------------------------------------------------------------------------------------- bring your own data
def _byo(tmp_path: Path, lines: list, name: str = "q.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return p


@pytest.fixture
def byo_corpus(tmp_path) -> Path:
    p = tmp_path / "passages.jsonl"
    p.write_text("".join(json.dumps({"id": f"p{i}", "title": t, "text": x}) + "\n" for i, t, x in PASSAGES), encoding="utf-8")
    return p


def test_byo_questions_errors_name_file_and_line(tmp_path, byo_corpus, monkeypatch):
    from tasks.byo import load_questions

    good = {"id": "a", "question": "where is berlin", "answers": ["Germany"]}
    cases = [
        ([good, {"id": "b", "answers": ["x"]}], r"q.jsonl:2: missing field 'question'"),
        ([good, {"id": "b", "question": "q"}], r"q.jsonl:2: missing field 'answers'"),
        ([good, {"id": "b", "question": "q", "answers": []}], r"q.jsonl:2: 'answers' is empty; give at least one gold answer"),
        ([good, {"id": "b", "question": "q", "answers": "Paris"}], r"q.jsonl:2: 'answers' must be a list of strings"),
        ([good, "", {"id": "a", "question": "q2", "answers": ["x"]}], r"q.jsonl:3: duplicate id 'a' \(first at .*q.jsonl:1\)"),
        ([{"id": "a b", "question": "q", "answers": ["x"]}], r"q.jsonl:1: id 'a b' contains whitespace"),
        ([good, "{not json"], r"q.jsonl:2: malformed JSON"),
    ]
    for lines, pattern in cases:
        with pytest.raises(DataError, match=pattern) as e:
            load_questions(str(_byo(tmp_path, lines)))
        assert "\n" not in str(e.value)  # one line
    with pytest.raises(ConfigError, match=r"missing.jsonl': no such file \(give a JSONL"):
        load_questions(str(tmp_path / "missing.jsonl"))
    monkeypatch.chdir(tmp_path)  # a relative path names the folder it was looked for in
    with pytest.raises(ConfigError, match=rf"^questions 'nope.jsonl': no such file \(relative to the working directory "
                                          rf"{re.escape(str(tmp_path))}\) \(give a JSONL"):
        load_questions("nope.jsonl")



def test_byo_question_without_passages_names_its_line(tmp_path, byo_corpus):
    """A question that retrieves nothing (no word shared with the corpus, or only stop words) stops the run with
    the file and line of that question, not only the retrieval guard's qid."""
    from tasks.rag import build_qa_docs

    qs = _byo(tmp_path, [{"id": "a", "question": "Where is Berlin?", "answers": ["Germany"]},
                         {"id": "b", "question": "zqxj wvut?", "answers": ["x"]}])
    with pytest.raises(DataError, match=r"q.jsonl:2: question 'zqxj wvut\?' got no passages from bm25 over corpus "
                                        r".*passages.jsonl \(1 of 2 questions got none\)") as e:
        build_qa_docs("byo", questions=str(qs), corpus=str(byo_corpus), cache_dir=tmp_path / "cache")
    assert "\n" not in str(e.value)

def test_byo_task_end_to_end(tmp_path, byo_corpus):
    qs = _byo(tmp_path, [
        {"id": "nobel", "question": "Who received the first Nobel Prize in Physics?", "answers": ["Wilhelm Rontgen"],
         "gold_docids": ["p7"]},
        {"question": "What is Tokyo the capital of?", "answers": ["Japan"]},
        {"id": 7, "question": "Where is Berlin?", "answers": ["Germany"], "gold_docids": ["p2"]},
    ])
    assert {qa_split_of(q) for q in ("Who received the first Nobel Prize in Physics?", "What is Tokyo the capital of?",
                                     "Where is Berlin?")} == {"test"}
    meta = {"questions": str(qs), "corpus": str(byo_corpus), "cache_dir": str(tmp_path / "cache")}
    tasks = _tasks(["rag_qa_bm25", "rag_qa_hybrid"], **meta)
    docs = _docs(tasks["rag_qa_bm25"])
    assert [d["qid"] for d in docs] == ["nobel", "q1", "7"]  # the id, else q<row index>
    assert docs[0]["ctxs"][0]["docid"] == "p7" and docs[0]["gold_docids"] == ["p7"] and docs[1]["gold_docids"] == []
    assert docs[1]["ctxs"][0]["title"] == "Tokyo" and docs[2]["ctxs"][0]["docid"] == "p2"
    out = tasks["rag_qa_bm25"].process_results(docs[0], [" Wilhelm Rontgen"])
    assert out["gold_at_k"] == 1.0 and out["em"] == 1.0
    hyb = _docs(tasks["rag_qa_hybrid"])
    assert [d["qid"] for d in hyb] == ["nobel", "q1", "7"] and hyb[0]["ctxs"][0]["docid"] == "p7"
    # gold ids the corpus does not hold: one line naming the file and line
    bad = _byo(tmp_path, [{"id": "q1", "question": "Where is Berlin?", "answers": ["Germany"], "gold_docids": ["p99"]}], "bad.jsonl")
    with pytest.raises(DataError, match=r"bad.jsonl:1: gold_docids \['p99'\] are not in corpus .*passages.jsonl \(12 passages\)"):
        _tasks(["rag_qa_bm25"], **{**meta, "questions": str(bad)})
    with pytest.raises(ConfigError, match=r"read your own questions and corpus: --metadata"):
        _tasks(["rag_qa_bm25"], cache_dir=str(tmp_path))


def test_questions_on_a_task_that_is_not_byo_is_an_error(tmp_path, byo_corpus):
    """``questions`` on nq_open_bm25 (or the group rag_qa, or wiki_lm_bm25) used to be ignored: NQ-open was scored."""
    from tasks.utils import load_wiki_lm

    qs = _byo(tmp_path, [{"id": "b", "question": "Where is Berlin?", "answers": ["Germany"]}])
    expected = (r"^{task}: task metadata questions='.*q.jsonl' is read only by the bring-your-own tasks rag_qa_bm25, "
                r"rag_qa_dense, rag_qa_hybrid \(and your own tasks that include one: dataset byo\); {task} scores its own questions and would ignore it: run --tasks rag_qa_bm25 "
                r"\(or rag_qa_dense, rag_qa_hybrid\) with your questions, or drop 'questions' \(a 'corpus' override is fine\)$")
    for names, task in ((["nq_open_bm25"], "nq_open_bm25"), (["rag_qa"], "nq_open_bm25")):
        with pytest.raises(ConfigError, match=expected.format(task=task)):
            _tasks(names, questions=str(qs), corpus=str(byo_corpus), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match=expected.format(task="wiki_lm_bm25")):
        load_wiki_lm(questions=str(qs))


@pytest.fixture
def rag_log():
    """Every record of ``tasks.rag`` at INFO and above (a handler on that logger: lm-eval's set-up may stop propagation)."""
    import logging

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    lg, handler = logging.getLogger("tasks.rag"), Keep(logging.INFO)
    level = lg.level
    lg.addHandler(handler)
    lg.setLevel(logging.INFO)
    yield records
    lg.removeHandler(handler)
    lg.setLevel(level)


POOL_QUESTIONS = [{"id": "fr", "question": "Which city is the capital of France?", "answers": ["Paris"]},
                  {"id": "mx", "question": "Where is Mexico?", "answers": ["North America"]}]


def test_byo_pool_is_logged_and_short_retrievals_warned(tmp_path, byo_corpus, rag_log):
    """One INFO line says how many questions went to the dev/few-shot pool; one WARNING says how many questions got
    fewer than hits passages (BM25 finds only passages sharing a word with the question) and the fewest."""
    import logging

    from tasks.rag import build_qa_docs

    assert [qa_split_of(r["question"]) for r in POOL_QUESTIONS] == ["dev", "fewshot"]
    qs = _byo(tmp_path, [*POOL_QUESTIONS, {"id": "b", "question": "Where is Berlin?", "answers": ["Germany"]},
                         {"id": "t", "question": "What is Tokyo the capital of?", "answers": ["Japan"]}])
    docs = build_qa_docs("byo", questions=str(qs), corpus=str(byo_corpus), cache_dir=tmp_path / "cache")
    assert [(d["qid"], len(d["ctxs"])) for d in docs] == [("b", 1), ("t", 3)]
    info = [r.getMessage() for r in rag_log if r.levelno == logging.INFO]
    assert info == [f"questions {qs}: 2 of 4 held out as the dev/few-shot pool (1 dev: fr; 1 few-shot: mx): one "
                    "question in ten, by hash of its text, as for every QA task (tasks/README.md, \"Splits\"; the "
                    "results record their ids: tokrag_data.questions.held_out); 2 are in split 'test' (a limit scores "
                    "the first N of them)"]  # the held-out ids named (s55 f3)
    warn = [r.getMessage() for r in rag_log if r.levelno == logging.WARNING]
    assert len(warn) == 1 and warn[0].startswith(
        f"questions {qs}: 2 of 2 questions got fewer than hits=5 passages from bm25 over corpus {byo_corpus} (fewest: 1; "
        "BM25 returns only passages that share a word, not a stop word, with the question)")


def test_byo_all_questions_in_the_pool_says_where_they_went(tmp_path, byo_corpus):
    from tasks.rag import build_qa_docs

    qs = _byo(tmp_path, POOL_QUESTIONS, "pool.jsonl")
    with pytest.raises(DataError) as e:
        build_qa_docs("byo", questions=str(qs), corpus=str(byo_corpus), cache_dir=tmp_path / "cache")
    assert str(e.value) == (
        f"dataset 'byo', split 'test': no questions: of the 2 questions in {qs}, 0 are test, 1 dev and 1 few-shot (one "
        "question in ten, by hash of its text, goes to the dev/few-shot pool; tasks/README.md, 'Splits'), so every one "
        "went to the pool; score every question of the file with --metadata '{\"split\": \"all\"}', or add "
        "questions (about nine in ten are scored), or evaluate the dev ones with "
        "--metadata '{\"split\": \"dev\"}'")


def test_byo_noise_follows_the_passages_a_question_has(tmp_path, byo_corpus):
    """noise=0.5 on a question with one passage keeps it (it used to be replaced: 100% noise); on three passages
    it replaces round(1.5) = 2."""
    from tasks.rag import build_qa_docs

    qs = _byo(tmp_path, [{"id": "b", "question": "Where is Berlin?", "answers": ["Germany"], "gold_docids": ["p2"]},
                         {"id": "t", "question": "What is Tokyo the capital of?", "answers": ["Japan"]}])
    docs = build_qa_docs("byo", questions=str(qs), corpus=str(byo_corpus), cache_dir=tmp_path / "cache", noise=0.5)
    assert [(c["docid"], c["source"]) for c in docs[0]["ctxs"]] == [("p2", "retrieved")]
    assert [c["source"] for c in docs[1]["ctxs"]].count("noise") == 2 and len(docs[1]["ctxs"]) == 3
