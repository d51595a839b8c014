"""Task data loading, YAML configs, stop sequences, and the noise / counterfactual logic (no retrieval)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from retrieval.errors import ConfigError, OfflineError
from tasks import TASK_DIR, add_include_path, data
from tasks.rag import answer_kind, n_noise, pick_substitute, substitute_pool, swap_answer

REPO = Path(__file__).resolve().parents[1]


def _load_yaml(path: Path) -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    cfg = yaml.load(path.read_text(), Loader=Loader)  # noqa: S506
    inc = cfg.pop("include", None)
    if inc:
        base = yaml.load((path.parent / inc).read_text(), Loader=Loader)  # noqa: S506
        base.update(cfg)
        cfg = base
    return cfg


TASK_YAMLS = sorted(p for p in TASK_DIR.rglob("*.yaml"))


def test_every_yaml_has_metadata_version() -> None:
    assert len(TASK_YAMLS) >= 24
    for path in TASK_YAMLS:
        cfg = _load_yaml(path)
        assert isinstance(cfg.get("metadata", {}).get("version"), (int, float)), path


def test_task_names() -> None:
    names = {t for p in TASK_YAMLS if isinstance(t := _load_yaml(p).get("task"), str)}
    expected = {"nq_open_bm25", "nq_open_dense", "nq_open_hybrid", "webq_bm25", "webq_dense", "nq_oracle_bm25",
                "nq_oracle_dense", "nq_oracle_gold", "wiki_lm_bm25", "nq_oracle_bm25_counterfactual",
                "nq_oracle_gold_counterfactual"}
    expected |= {f"{b}_noise{n}" for b in ("nq_oracle_bm25", "nq_oracle_dense", "nq_open_bm25") for n in (20, 40, 60, 80)}
    expected.add("nq_oracle_bm25_noise100")  # every passage is noise: a method should fall back to the LM
    assert expected <= names
    group = _load_yaml(TASK_DIR / "qa" / "rag_qa.yaml")
    assert group["group"] == "rag_qa" and set(group["task"]) <= names


def test_add_include_path() -> None:
    assert add_include_path(None) == [str(TASK_DIR)]
    assert add_include_path([str(TASK_DIR)]) == [str(TASK_DIR)]
    assert add_include_path("/x") == [str(TASK_DIR), "/x"]  # ours first: a user's copy of our task overrides it (ae440ba)


def test_stop_sequences_never_cut_gold_answers(data_dir: Path) -> None:
    """No stop string of the QA prompt occurs in any NQ-open / WebQuestions gold answer, nor in '1.5'/'U.S.'."""
    until = _load_yaml(TASK_DIR / "qa" / "nq_oracle_bm25.yaml")["generation_kwargs"]["until"]
    assert "\n\n" in until
    answers = ["1.5", "U.S.", "Washington, D.C.", "3.14 m", "St. Louis"]
    answers += [a for r in data.load_nq_open(data_dir) for a in r["answers"]]
    answers += [a for r in data.load_webq(data_dir) for a in r["answers"]]
    assert len(answers) > 8000
    cut = [(a, s) for a in answers for s in until if s in a]
    assert cut == []


def test_loaders_real_data(data_dir: Path) -> None:
    nq = data.load_nq_open(data_dir)
    assert len(nq) == 3610
    assert nq[0]["qid"] == "nq-dev-0000" and nq[0]["answers"]
    oracle = data.load_nq_oracle(data_dir)
    assert len(oracle) == 2655
    by_q = {r["question"]: r for r in nq}
    # oracle qids are the NQ-open ids of the same question, so results can be joined across tasks
    assert all(by_q[r["question"]]["qid"] == r["qid"] for r in oracle)
    assert oracle[0]["question"] == "who got the first nobel prize in physics"
    assert oracle[0]["gold"]["title"] == "List of Nobel laureates in Physics"
    assert oracle[0]["gold_docids"][0].startswith("nq-")
    webq = data.load_webq(data_dir)
    assert len(webq) == 2032 and webq[0] == {"qid": "wqs000000", "question": "what does jamaican people speak?",
                                               "answers": ["Jamaican Creole English Language", "Jamaican English"]}


def test_relative_data_dir_is_resolved_against_cwd(data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(data_dir.parent)
    rel = os.path.relpath(data_dir, data_dir.parent)
    rows = data.load_webq(rel)
    monkeypatch.chdir(tmp_path)  # later chdir does not matter: rows are already loaded
    assert len(rows) == 2032


def test_missing_folder_and_offline_hub(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        data.load_nq_open(tmp_path / "nope")
    with pytest.raises(ConfigError, match="nq_open/NQ-open.dev.jsonl"):
        data.load_nq_open(tmp_path)
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    with pytest.raises(OfflineError, match="TOKRAG_DATA_DIR"):
        data.load_webq(None, hub_id=f"nonexistent-org/{tmp_path.name}")
    with pytest.raises(ConfigError, match="not on the hub"):
        data.load_nq_oracle(None)


@pytest.mark.parametrize(
    ("answer", "kind"),
    [("June 1, 1969", "date"), ("1969", "date"), ("in 1997", "date"), ("1.5", "numeric"), ("3,000", "numeric"),
     ("12 million", "numeric"), ("seven", "numeric"), ("30 km", "numeric"), ("Paris", "other"),
     ("Wilhelm Conrad Röntgen", "other")],
)
def test_answer_kind(answer: str, kind: str) -> None:
    assert answer_kind(answer) == kind


def test_swap_answer_whole_words_case_insensitive() -> None:
    title, text, n = swap_answer("Paris", "Paris is big. PARIS! Parisian food. The paris area.", ["paris"], "Rome")
    assert (title, text, n) == ("Rome", "Rome is big. Rome! Parisian food. The Rome area.", 4)
    # longest answer first: 'New York City' is replaced as a whole
    _, text, n = swap_answer("", "New York City and New York", ["New York", "New York City"], "Boston")
    assert (text, n) == ("Boston and Boston", 2)


def test_counterfactual_substitute_same_kind_and_deterministic(data_dir: Path) -> None:
    rows = data.load_nq_oracle(data_dir)
    pool = substitute_pool([(r["qid"], r["answers"][0]) for r in rows])
    swapped = 0
    for r in rows[:300]:
        sub = pick_substitute(r["qid"], r["answers"], pool, seed=1234)
        assert sub is not None
        assert answer_kind(sub) == answer_kind(r["answers"][0])
        assert sub not in r["answers"]
        assert sub == pick_substitute(r["qid"], r["answers"], pool, seed=1234)
        _, text, n = swap_answer(r["gold"]["title"], r["gold"]["text"], r["answers"], sub)
        if n:
            swapped += 1
            assert sub in text
    assert swapped >= 295
    subs = [pick_substitute(r["qid"], r["answers"], pool, seed=7) for r in rows[:50]]
    assert subs != [pick_substitute(r["qid"], r["answers"], pool, seed=1234) for r in rows[:50]]


@pytest.mark.parametrize(("fraction", "k", "n"), [(0.2, 5, 1), (0.4, 5, 2), (0.6, 5, 3), (0.8, 5, 4), (0.5, 5, 3), (0.0, 5, 0)])
def test_n_noise(fraction: float, k: int, n: int) -> None:
    assert n_noise(fraction, k) == n


@pytest.mark.parametrize(("fraction", "k", "n"), [(0.5, 1, 0), (0.8, 1, 0), (0.8, 2, 1), (0.9, 5, 4)])
def test_n_noise_below_one_keeps_one_of_the_questions_passages(fraction: float, k: int, n: int) -> None:
    """k is the number of passages the question has (fewer than hits when BM25 finds fewer): a fraction below 1
    never replaces them all (noise 0.5 on a one-passage question used to replace it: 100% noise)."""
    assert n_noise(fraction, k) == n


def test_add_noise_follows_the_passages_a_question_has() -> None:
    from retrieval import Corpus, Passage
    from tasks.rag import add_noise

    corpus = Corpus([Passage(f"n{i}", f"T{i}", f"filler passage number {i}") for i in range(20)], source="mem")
    one = [{"docid": "g", "title": "G", "text": "Paris is the capital of France.", "score": 3.0, "rank": 1,
            "source": "retrieved"}]
    assert add_noise(one, corpus, "q1", ["Paris"], ["g"], 0.5, 1234) == one  # the gold passage stays
    two = one + [{"docid": "x", "title": "X", "text": "Lyon is a city.", "score": 1.0, "rank": 2, "source": "retrieved"}]
    out = add_noise(two, corpus, "q1", ["Paris"], ["g"], 0.8, 1234)
    assert len(out) == 2 and [c["source"] for c in out].count("noise") == 1


def test_a_corpus_too_small_for_the_noise_names_itself_and_the_fix() -> None:
    from retrieval import Corpus, Passage
    from tasks.rag import add_noise

    corpus = Corpus([Passage(f"n{i}", f"T{i}", f"filler passage number {i}") for i in range(3)], name="tiny", source="mem")
    two = [{"docid": d, "title": d, "text": f"text {d}", "score": 1.0, "rank": i + 1, "source": "retrieved"}
           for i, d in enumerate(["n0", "n1"])]
    with pytest.raises(ConfigError, match=r"^corpus mem has too few passages \(3\) to draw 2 noise passages for question q1 "
                                          r".*use a larger corpus or a task without noise$"):
        add_noise(two, corpus, "q1", ["Paris"], [], 0.5, 1234)


def test_n_noise_rejects_bad_fraction() -> None:
    with pytest.raises(ConfigError, match="noise"):
        n_noise(1.5, 5)


NOISE_SCRIPT = r"""
import json, sys
from retrieval import has_answer, named_corpus
from tasks import data
from tasks.rag import add_noise
corpus = named_corpus("nq-dpr-1k", sys.argv[1])
rows = data.load_nq_oracle(sys.argv[1])[:30]
dpr = [p for p in corpus if p.docid.startswith("dpr-")]
out = []
for i, r in enumerate(rows):
    ctxs = [{"docid": r["gold_docids"][0], "title": r["gold"]["title"], "text": r["gold"]["text"], "score": 9.0, "rank": 1, "source": "retrieved"}]
    ctxs += [{"docid": p.docid, "title": p.title, "text": p.text, "score": 1.0, "rank": j + 2, "source": "retrieved"} for j, p in enumerate(dpr[i:i + 4])]
    row = {f: add_noise(ctxs, corpus, r["qid"], r["answers"], r["gold_docids"], float(f), 1234) for f in ("0.2", "0.4", "0.6", "0.8", "1.0")}
    for f in ("0.2", "0.4", "0.6", "0.8", "1.0"):
        for c in row[f]:
            c["has_answer"] = has_answer(c["text"], r["answers"])
    row.update(gold=r["gold_docids"][0], orig=[dict(c, has_answer=has_answer(c["text"], r["answers"])) for c in ctxs])
    out.append(row)
sys.stdout.write(json.dumps(out, sort_keys=True))
"""


def test_noise_fraction_nested_and_byte_identical_across_processes(data_dir: Path) -> None:
    outs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        res = subprocess.run([sys.executable, "-c", NOISE_SCRIPT, str(data_dir)],
                             capture_output=True, env=env, cwd=REPO)
        assert res.returncode == 0, res.stderr.decode()[-2000:]
        outs.append(res.stdout)
    assert outs[0] == outs[1] and len(outs[0]) > 1000
    rows = json.loads(outs[0])
    for row in rows:
        prev: set[int] = set()
        for frac, n in (("0.2", 1), ("0.4", 2), ("0.6", 3), ("0.8", 4), ("1.0", 5)):
            ctxs = row[frac]
            assert len(ctxs) == 5
            noisy = {i for i, c in enumerate(ctxs) if c["source"] == "noise"}
            assert len(noisy) == n  # the fraction of the k passages
            assert prev <= noisy  # nested levels
            prev = noisy
            assert all(ctxs[i]["rank"] == i + 1 for i in range(5))
            assert len({c["docid"] for c in ctxs}) == 5
            assert all(ctxs[i]["docid"] != row["gold"] and not ctxs[i]["has_answer"] for i in noisy)
            assert all(ctxs[i] == row["orig"][i] for i in range(5) if i not in noisy)


def test_register_task_path_lets_lm_eval_find_tasks_without_include_path(tmp_path: Path) -> None:
    script = (
        "import tasks; tasks.register_task_path()\n"
        "from lm_eval.tasks import TaskManager\n"
        "tm = TaskManager(include_defaults=False)\n"
        "print(sorted(n for n in tm.all_tasks if n.startswith(('nq_', 'webq', 'wiki_lm', 'rag_qa'))))\n"
        "tm2 = TaskManager(None, tasks.include_path(), False)\n"  # positional, already included: no duplicate
        "print(len(tm2.all_tasks) == len(tm.all_tasks))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TOKRAG_NO_TASK_PATH"}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    names, same = res.stdout.strip().splitlines()
    assert "'nq_oracle_bm25'" in names and "'wiki_lm_bm25'" in names and "'rag_qa'" in names
    assert same == "True"


def test_process_results_first_nonempty_line_and_retrieval_metrics() -> None:
    from tasks.utils import answer_line, process_results_qa

    assert answer_line("\n  Paris \nRome") == "Paris"
    assert answer_line("") == "" and answer_line(None) == ""
    doc = {
        "answers": ["U.S.", "United States"],
        "gold_docids": ["g1"],
        "ctxs": [{"docid": "d1", "text": "nothing here"}, {"docid": "g1#cf", "text": "moved to the United States in 1990"}],
        "counterfactual_answer": "Canada",
    }
    out = process_results_qa(doc, ["\nThe U.S.\nCanada is next"])
    # 'the us' == 'us' after SQuAD normalisation; only the first non-empty line counts (so no cf_match)
    assert out == {"em": 1.0, "f1": 1.0, "answer_match": 1.0, "answer_recall": 1.0, "gold_at_k": 1.0, "cf_match": 0.0,
                   "empty_pred": 0.0, "overlong_pred": 0.0}
    out = process_results_qa({**doc, "gold_docids": [], "ctxs": doc["ctxs"][:1]}, ["Canada, probably"])
    # f1: pred [canada, probably] vs [us] / [united, states]: 0; no gold ids -> no gold_at_k key
    assert out == {"em": 0.0, "f1": 0.0, "answer_match": 0.0, "answer_recall": 0.0, "cf_match": 1.0,
                   "empty_pred": 0.0, "overlong_pred": 0.0}


@pytest.mark.parametrize(
    ("generation", "empty", "overlong"),
    [("\n\n", 1.0, 0.0), ("", 1.0, 0.0), (" ...\nParis", 1.0, 0.0),  # first non-empty line is punctuation only
     (" The answer is:", 0.0, 0.0), (" Paris", 0.0, 0.0),
     (" one two three four five six seven eight nine ten", 0.0, 0.0),  # exactly the budget: 10 words
     (" The first Nobel Prize in Physics was awarded to Wilhelm Röntgen in 1901", 0.0, 1.0),  # 12 normalised words
     ("\nParis\nthe capital of France is a very long sentence on a second line", 0.0, 0.0)],  # only line 1 counts
)
def test_prediction_hygiene_metrics(generation: str, empty: float, overlong: float) -> None:
    from tasks.utils import process_results_qa

    out = process_results_qa({"answers": ["Paris"], "ctxs": []}, [generation])
    assert (out["empty_pred"], out["overlong_pred"]) == (empty, overlong)


def test_hub_id_metadata_reaches_the_loader(monkeypatch) -> None:
    from tasks.utils import load_qa

    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    with pytest.raises(OfflineError, match="nonexistent-org/webq-copy"):
        load_qa(dataset="webq", retriever="bm25", hub_id="nonexistent-org/webq-copy", version=1.0)


def test_qa_splits_are_fixed_disjoint_and_shared_across_the_nq_family(data_dir: Path) -> None:
    """test / dev / fewshot never share a qid or a question, within a data set and across NQ-open and its
    oracle subset; the sizes are the documented ones (tasks/README.md)."""
    sizes = {}
    parts: dict[str, dict[str, list[dict]]] = {}
    for ds in ("nq_open", "nq_oracle", "webq"):
        parts[ds] = {s: data.load_qa_split(ds, s, data_dir) for s in data.SPLITS}
        sizes[ds] = tuple(len(parts[ds][s]) for s in data.SPLITS)
        for i, a in enumerate(data.SPLITS):
            for b in data.SPLITS[i + 1:]:
                assert not {r["qid"] for r in parts[ds][a]} & {r["qid"] for r in parts[ds][b]}, (ds, a, b)
                assert not {r["question"].strip() for r in parts[ds][a]} & {r["question"].strip() for r in parts[ds][b]}
    assert sizes == {"nq_open": (3230, 272, 108), "nq_oracle": (2383, 188, 84), "webq": (2032, 135, 54)}
    # the NQ family: an oracle question is in the same part as in NQ-open, so no nq_open_* test question is
    # an nq_oracle_* example or dev question and vice versa
    for s in data.SPLITS:
        nq_q = {r["question"] for r in parts["nq_open"][s]}
        assert {r["question"] for r in parts["nq_oracle"][s]} <= nq_q
    nq_test = {r["question"] for r in parts["nq_open"]["test"]}
    assert not nq_test & {r["question"] for s in ("dev", "fewshot") for r in parts["nq_oracle"][s]}
    # hand-checked values of the rule: H % 10 and (H // 10) % 4 of sha256("tokrag-split:" + question)
    import hashlib

    q = parts["nq_oracle"]["fewshot"][0]["question"]
    h = int.from_bytes(hashlib.sha256(f"tokrag-split:{q}".encode()).digest()[:8], "big")
    assert h % 10 == 0 and (h // 10) % 4 == 0 and data.qa_split_of(q) == "fewshot"
    assert data.qa_split_of("who got the first nobel prize in physics") == "test"
    # WebQuestions' pool is devtest.json (train split): test.json is whole, the pool ids are devtest's
    assert all(r["qid"].startswith("wqr") for s in ("dev", "fewshot") for r in parts["webq"][s])
    with pytest.raises(ConfigError, match="split='validation'"):
        data.load_qa_split("nq_open", "validation", data_dir)


def test_webq_without_a_training_file_holds_a_hash_slice_of_test_apart(data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "webquestions").mkdir()
    (tmp_path / "webquestions" / "test.json").symlink_to(data_dir / "webquestions" / "test.json")
    parts = {s: data.load_qa_split("webq", s, tmp_path) for s in data.SPLITS}
    assert sum(len(p) for p in parts.values()) == 2032
    assert len(parts["test"]) < 2032 - 150 and parts["dev"] and parts["fewshot"]
    assert all(data.qa_split_of(r["question"]) == s for s, p in parts.items() for r in p)


def test_byo_gold_ids_are_checked_by_the_retrieval_check(data_dir: Path, tmp_path: Path) -> None:
    """Bring-your-own gold ids go through ``retrieval.corpus.check_gold_ids``, as ``tokrag retrieve eval``'s: a named
    corpus is named (it was its data folder, which says nothing of which corpus lacks the id)."""
    from retrieval import named_corpus
    from retrieval.errors import DataError
    from tasks.byo import check_gold_ids, load_questions

    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "paris", "question": "Where is Paris?", "answers": ["France"], "gold_docids": ["dpr-0"]})
                  + "\n" + json.dumps({"question": "Who?", "answers": ["x"], "gold_docids": ["p99"]}) + "\n")
    rows = load_questions(str(qs))
    corpus = named_corpus("nq-dpr-1k", data_dir)
    with pytest.raises(DataError) as exc:
        check_gold_ids(rows, corpus)
    assert str(exc.value) == (f"{qs}:2: gold_docids ['p99'] are not in corpus nq-dpr-1k ({len(corpus)} passages); "
                              "fix the ids or pass the corpus that holds them")
    check_gold_ids(rows[:1], corpus)  # dpr-0 is a passage of it
