"""NQ-oracle noise and counterfactual tasks on the real data: draws that do not depend on whether the data folder
holds NQ-open, and gold passages whose text differs only in whitespace from another question's (tasks.data /
tasks.rag)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval import has_answer
from retrieval.corpus import nq_oracle_questions
from tasks import data
from tasks.rag import build_qa_docs


@pytest.fixture(scope="module")
def no_nq_open(data_dir: Path, tmp_path_factory) -> Path:
    """A valid data folder for the NQ-oracle tasks without nq_open/ (tasks/README.md "Data location": NQ-open may come
    from the hub; only the oracle file and the corpus need a local folder): links to the real files, nothing copied."""
    root = tmp_path_factory.mktemp("no_nq_open")
    for name in ("nq_open_oracle", "wiki_vital_summaries"):
        (root / name).symlink_to(data_dir / name, target_is_directory=True)
    return root


def _shown(docs: list[dict]) -> list[tuple]:
    return [(d["question"], d["counterfactual_answer"], [(c["docid"], c["title"], c["text"], c["source"]) for c in d["ctxs"]])
            for d in docs]


@pytest.mark.parametrize("variant", [{"noise": 0.4}, {"counterfactual": True}], ids=["noise40", "counterfactual"])
def test_draws_are_the_same_with_and_without_nq_open_in_the_data_folder(data_dir: Path, no_nq_open: Path, variant) -> None:
    """The qid of an oracle question is its NQ-open index only when NQ-open is in the folder (nq-oracle-<row>
    otherwise); the noise passages and counterfactual answers were seeded by it, so the same YAML and seed gave other
    passages (0 of 100 noise40 docs and 0 of 100 counterfactual answers alike). They are seeded by the question now."""
    with_open = build_qa_docs("nq_oracle", data_dir=data_dir, max_docs=12, **variant)
    without = build_qa_docs("nq_oracle", data_dir=no_nq_open, max_docs=12, **variant)
    assert with_open[0]["qid"].startswith("nq-dev-") and without[0]["qid"] == "nq-oracle-0000"  # qids kept as they were
    assert _shown(with_open) == _shown(without)


def test_a_gold_passage_s_whitespace_twin_is_gold(data_dir: Path) -> None:
    """nq-wiki-12k keeps each distinct raw gold text, so 'Rio Bravo (film)' is there twice (one with 'guard.  Inside',
    one 'guard. Inside'): both ids are the question's gold ids, and both are swapped on the counterfactual task (the
    twin, holding the true answer 'Walter Brennan', was left in the top 5)."""
    rows = {r["qid"]: r for r in data.load_nq_oracle(data_dir)}
    assert rows["nq-dev-1608"]["gold_docids"] == ["nq-b40d132a47eb1f95", "nq-e27ce688729b221d"]
    twin = next(r for r in rows.values() if r["gold_docids"][0] == "nq-e27ce688729b221d")
    assert twin["gold_docids"] == ["nq-e27ce688729b221d", "nq-b40d132a47eb1f95"]
    assert data.nq_gold_ids_by_question(data_dir)[rows["nq-dev-1608"]["question"]] == rows["nq-dev-1608"]["gold_docids"]
    # tokrag retrieve eval's nq-oracle topics (retrieval.corpus.nq_oracle_questions) give the same gold ids: they
    # lacked the twin for 27 of 2,655 questions, so gold@k there and in the tasks differed
    topics = {q["question"]: q["gold_docids"] for q in nq_oracle_questions(data_dir)}
    assert topics[rows["nq-dev-1608"]["question"]] == rows["nq-dev-1608"]["gold_docids"]
    assert all(topics[r["question"]] == r["gold_docids"] for r in rows.values())

    test_qids = [r["qid"] for r in data.load_qa_split("nq_oracle", "test", data_dir)]
    clean = build_qa_docs("nq_oracle", data_dir=data_dir, max_docs=test_qids.index("nq-dev-1608") + 1)[-1]
    cf = build_qa_docs("nq_oracle", data_dir=data_dir, max_docs=test_qids.index("nq-dev-1608") + 1, counterfactual=True)[-1]
    assert clean["qid"] == cf["qid"] == "nq-dev-1608" and clean["answers"] == ["Walter Brennan"]
    assert "nq-e27ce688729b221d" in [c["docid"] for c in clean["ctxs"]]  # the twin is retrieved
    assert [c["docid"] for c in cf["ctxs"]] == [c["docid"] + ("#cf" if c["docid"] in cf["gold_docids"] else "")
                                              for c in clean["ctxs"]]
    for c in cf["ctxs"]:
        assert not has_answer(c["title"] + "\n" + c["text"], cf["answers"]), c["docid"]
        if c["source"] == "counterfactual":
            assert cf["counterfactual_answer"] in c["text"]
