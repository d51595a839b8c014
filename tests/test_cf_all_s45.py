"""nq_oracle_bm25_counterfactual_all (task metadata ``counterfactual_scope: all``, tasks/rag.py build_qa_docs): after
the gold passage, every other attached passage that holds a gold answer is swapped with the same substitute, so no
attached passage keeps the true answer. nq_oracle_bm25_counterfactual swaps the gold passage (and its whitespace twins)
only: 48 of the first 300 test questions (420 of 2,382) kept the true answer in another top-5 passage
(tasks/README.md, "What the counterfactual tasks do not control", (1)). Real data (TOKRAG_DATA_DIR)."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest

from retrieval import has_answer
from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tasks.rag import build_qa_docs, holds_normalised_gold

N = 486  # the first 300 test questions of the brief, and up to nq-dev-3047 (test question 486: 'album Ringo. Starr')


def _holds(c: dict, answers: list[str]) -> bool:
    """The README's rule, written out: DPR has_answer over the title or the text, or the metrics' rule over both."""
    return (has_answer(c["text"], answers) or has_answer(c["title"], answers)
            or holds_normalised_gold(f"{c['title']}\n{c['text']}", answers))


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _build(**kw) -> tuple[list[dict], list[str]]:
    handler = _Warnings()
    log = logging.getLogger("tasks.rag")
    log.addHandler(handler)
    try:
        docs = build_qa_docs("nq_oracle", counterfactual=True, max_docs=N, **kw)
    finally:
        log.removeHandler(handler)
    return docs, handler.messages


@pytest.fixture(scope="module")
def built(data_dir):
    return _build(), _build(counterfactual_scope="all")


def _listed(messages: list[str]) -> set[str]:
    """The qids the 'keep a gold answer' WARNING names."""
    lines = [m for m in messages if "questions keep a gold answer" in m]
    assert len(lines) <= 1
    return set(lines[0].rsplit(": ", 1)[1].split(", ")) if lines else set()


def _fields(docs: list[dict]) -> str:
    rows = [(d["qid"], d["question"], d["answers"], d["gold_docids"], d["counterfactual_answer"], d["scored_by"],
             [(c["docid"], c["title"], c["text"], c["rank"], c["source"], round(c["score"], 3)) for c in d["ctxs"]])
            for d in docs]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()


def test_no_attached_passage_keeps_a_gold_answer_except_those_the_warning_lists(built) -> None:
    (old, old_warn), (new, new_warn) = built
    assert [d["qid"] for d in new] == [d["qid"] for d in old] and len(new) == N
    kept_old = [d["qid"] for d in old[:300] if any(_holds(c, d["answers"]) for c in d["ctxs"])]
    assert len(kept_old) == 48  # the README's figure for the old task
    kept = [d["qid"] for d in new if any(_holds(c, d["answers"]) for c in d["ctxs"])]
    assert kept == ["nq-dev-3047"]  # its gold passage's 'album Ringo. Starr co-wrote' (a sentence stop): kept, as before
    assert set(kept) <= _listed(new_warn) == {"nq-dev-3047"}
    assert any("keep a gold answer (SQuAD-normalised) in an attached passage" in m for m in new_warn)
    assert _listed(old_warn) == {"nq-dev-3047"}
    # every swapped passage: the same substitute, a '#cf' id, a retriever score; cf_swapped counts them
    for d, o in zip(new, old):
        swapped = [c for c in d["ctxs"] if c["source"] == "counterfactual"]
        assert d["cf_swapped"] == len(swapped) >= 1
        assert [c["docid"].removesuffix("#cf") for c in d["ctxs"]] == [c["docid"].removesuffix("#cf") for c in o["ctxs"]]
        assert all(c["docid"].endswith("#cf") and isinstance(c["score"], float) for c in swapped)
        assert all(d["counterfactual_answer"] in f"{c['title']}\n{c['text']}" for c in swapped)
        assert [c["rank"] for c in d["ctxs"]] == list(range(1, len(d["ctxs"]) + 1))
        for c, oc in zip(d["ctxs"], o["ctxs"]):  # a passage not swapped is the old task's, score included
            if c["source"] != "counterfactual" or oc["source"] == "counterfactual":
                assert c == oc
    extra = [(d, sum(c["source"] == "counterfactual" for c in d["ctxs"]) - sum(c["source"] == "counterfactual"
                                                                                for c in o["ctxs"])) for d, o in zip(new, old)]
    assert sum(1 for d, e in extra[:300] if e) == 48 and sum(e for _, e in extra[:300]) == 78


def test_nq_dev_1824_rank_2_lithium_is_swapped(built) -> None:
    (old, _), (new, _) = built
    o = next(d for d in old if d["qid"] == "nq-dev-1824")
    d = next(d for d in new if d["qid"] == "nq-dev-1824")
    assert d["answers"] == o["answers"] and "Lithium" in d["answers"]
    assert (o["ctxs"][1]["title"], o["ctxs"][1]["docid"], o["ctxs"][1]["source"]) == ("Lithium", "wiki-Lithium", "retrieved")
    two = d["ctxs"][1]
    assert (two["docid"], two["source"], two["title"]) == ("wiki-Lithium#cf", "counterfactual", d["counterfactual_answer"])
    assert not _holds(two, d["answers"]) and "lithium" not in two["text"].lower()
    assert d["cf_swapped"] == 4  # the gold passage, 'Lithium', 'Graphite' and 'Pyroxene' (both name lithium)


def test_the_old_task_s_docs_are_unchanged(built) -> None:
    """The fields of the old task's first 300 docs hash as they did with the code before counterfactual_scope (f31f8d1),
    and they carry no cf_swapped."""
    (old, _), _ = built
    assert _fields(old[:300]) == "40b5a3ba469d545228cd744510969d1d1633c867fa8f4f0181565170e851e4d1"
    assert not any("cf_swapped" in d for d in old)
    gold_only = build_qa_docs("nq_oracle", counterfactual=True, gold_only=True, max_docs=50)
    assert build_qa_docs("nq_oracle", counterfactual=True, gold_only=True, counterfactual_scope="all", max_docs=50) == [
        dict(d, cf_swapped=1) for d in gold_only]  # one passage: nothing else to swap


def test_bad_scope_is_a_one_line_error() -> None:
    from tasks.utils import qa_arguments

    meta = {"dataset": "nq_oracle", "counterfactual": True}
    for value in ("most", "ALL", True, 1):
        with pytest.raises(ConfigError, match=r"^task metadata counterfactual_scope=.*: expected 'gold' \(default: .*\) or 'all' "
                                              r"\(every attached passage that holds a gold answer\)$") as err:
            qa_arguments({**meta, "counterfactual_scope": value}, "t")
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"^task metadata counterfactual_scope='all' needs counterfactual: true \(e\.g\. the "
                                          r"task nq_oracle_bm25_counterfactual_all\)$"):
        qa_arguments({"dataset": "nq_oracle", "counterfactual_scope": "all"}, "t")
    with pytest.raises(ConfigError, match=r"^t: unknown task metadata key 'counterfactual_scop' \(did you mean 'counterfactual_scope'\?\)"):
        qa_arguments({**meta, "counterfactual_scop": "all"}, "t")
    kw = qa_arguments({**meta, "counterfactual_scope": "all"}, "t")[0]
    assert kw["counterfactual_scope"] == "all"
    assert qa_arguments({**meta, "counterfactual_scope": "gold"}, "t")[0]["counterfactual_scope"] == "gold"


def test_task_is_registered_and_checked_before_the_model_loads() -> None:
    import yaml
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_selected_tasks
    from tasks.task_index import task_yaml

    path = task_yaml("nq_oracle_bm25_counterfactual_all", [TASK_DIR])
    assert path is not None and path.name == "nq_oracle_bm25_counterfactual_all.yaml"
    meta = yaml.safe_load(path.read_text())["metadata"]
    old = yaml.safe_load((TASK_DIR / "qa" / "nq_oracle_bm25_counterfactual.yaml").read_text())["metadata"]
    assert meta["version"] == 1.0 and meta["counterfactual_scope"] == "all"
    assert {k: v for k, v in meta.items() if k not in ("version", "counterfactual_scope")} == {
        k: v for k, v in old.items() if k != "version"}  # the same settings as the old task otherwise
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    check_selected_tasks(manager, ["nq_oracle_bm25_counterfactual_all"], None)
    with pytest.raises(ConfigError, match=r"^task metadata counterfactual_scope='some': expected 'gold'"):
        check_selected_tasks(manager, ["nq_oracle_bm25_counterfactual_all"], {"counterfactual_scope": "some"})


def test_through_lm_eval(data_dir) -> None:
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata={"max_docs": 20})
    task = tm.load(["nq_oracle_bm25_counterfactual_all"])["tasks"]["nq_oracle_bm25_counterfactual_all"]
    docs = [dict(d) for d in task.test_docs()]
    assert task.VERSION == 1.0 and len(docs) == 20
    assert not any(_holds(c, d["answers"]) for d in docs for c in d["ctxs"])
    assert [d["cf_swapped"] for d in docs] == [sum(c["source"] == "counterfactual" for c in d["ctxs"]) for d in docs]
