"""The tasks through lm-eval's own Python API (TaskManager without the 14.7k built-in tasks).

Small slices: ``--metadata`` ``{"corpus": "nq-dpr-1k", "max_docs": N}`` (the gold passages of the first
200 NQ-oracle questions + 1,000 DPR passages), BM25 only (no model weights needed).
"""

from __future__ import annotations

import json
import math

import pytest

from retrieval import has_answer
from tasks import TASK_DIR

SLICE = {"corpus": "nq-dpr-1k", "max_docs": 40}


def _task_dict(names: list[str], **meta):
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata={**SLICE, **meta})
    return tm.load(names)["tasks"]


def _docs(task) -> list[dict]:
    return [dict(d) for d in task.test_docs()]


@pytest.fixture(scope="module")
def qa_tasks():
    return _task_dict(["nq_oracle_bm25", "nq_oracle_bm25_noise40", "nq_oracle_gold", "nq_oracle_gold_counterfactual",
                       "nq_oracle_bm25_counterfactual"])


def test_docs_fields_and_prompt(qa_tasks) -> None:
    task = qa_tasks["nq_oracle_bm25"]
    docs = _docs(task)
    assert len(docs) == 40
    d = docs[0]
    assert set(d) >= {"qid", "question", "answers", "gold_docids", "ctxs"}
    assert d["qid"] == "nq-dev-1763" and d["answers"] == ["Wilhelm Conrad Röntgen"]
    assert [c["rank"] for c in d["ctxs"]] == [1, 2, 3, 4, 5]
    assert d["ctxs"][0]["docid"] == d["gold_docids"][0]  # BM25 finds this gold passage first
    prompt = task.fewshot_context(d, num_fewshot=0)  # description + doc_to_text: the prompt before issue 10
    assert prompt == "Answer the question with a short answer.\nQuestion: who got the first nobel prize in physics\nAnswer:"
    assert d["prompt"] == "instruct" and task.doc_to_text(d) == "Question: who got the first nobel prize in physics\nAnswer:"
    assert d["ctxs"][0]["text"][:30] not in prompt  # the models prepend the passages, not the task
    assert task.config.generation_kwargs["until"] == ["\n\n", "Question:"]
    assert task.VERSION == 5.0


def test_noise_variant_through_lm_eval(qa_tasks) -> None:
    base = _docs(qa_tasks["nq_oracle_bm25"])
    noisy = _docs(qa_tasks["nq_oracle_bm25_noise40"])
    assert [d["qid"] for d in base] == [d["qid"] for d in noisy]
    for b, n in zip(base, noisy):
        changed = [i for i in range(5) if n["ctxs"][i]["source"] == "noise"]
        assert len(changed) == 2  # 40% of k=5
        assert all(n["ctxs"][i] == b["ctxs"][i] for i in range(5) if i not in changed)
        assert not any(has_answer(n["ctxs"][i]["text"], n["answers"]) for i in changed)
    # a second build (fresh TaskManager, run cache hit) is byte-identical
    again = _docs(_task_dict(["nq_oracle_bm25_noise40"])["nq_oracle_bm25_noise40"])
    assert json.dumps(again, sort_keys=True).encode() == json.dumps(noisy, sort_keys=True).encode()


def test_gold_and_counterfactual(qa_tasks) -> None:
    gold = _docs(qa_tasks["nq_oracle_gold"])
    assert all(len(d["ctxs"]) == 1 and d["ctxs"][0]["docid"] == d["gold_docids"][0] for d in gold)
    assert all(has_answer(d["ctxs"][0]["text"], d["answers"]) for d in gold)
    cf = _docs(qa_tasks["nq_oracle_gold_counterfactual"])
    assert len(cf) == 40
    for d in cf:
        (ctx,) = d["ctxs"]
        assert ctx["source"] == "counterfactual" and d["counterfactual_answer"] not in d["answers"]
        assert d["counterfactual_answer"] in ctx["text"] or d["counterfactual_answer"] in ctx["title"]
    first = cf[0]
    assert first["ctxs"][0]["text"].startswith("The first Nobel Prize in Physics was awarded in 1901 to ")
    assert "Röntgen" not in first["ctxs"][0]["text"]
    cfb = _docs(qa_tasks["nq_oracle_bm25_counterfactual"])
    for d in cfb:
        srcs = [c["source"] for c in d["ctxs"]]
        assert srcs.count("counterfactual") == 1 and len(srcs) == 5


class ExtractiveOracle:
    """A stand-in LM for plumbing checks: answers a gold answer iff a passage contains one, else 'unknown'."""

    def __new__(cls):
        from lm_eval.api.model import LM

        class _LM(LM):
            def loglikelihood(self, requests):
                raise NotImplementedError

            def loglikelihood_rolling(self, requests):
                raise NotImplementedError

            def generate_until(self, requests):
                out = []
                for req in requests:
                    doc = req.doc
                    hit = any(has_answer(c["text"], doc["answers"]) for c in doc["ctxs"])
                    out.append(" " + doc["answers"][0] + "\n" if hit else " unknown")
                return out

        return _LM()


def test_simple_evaluate_records_metrics_with_stderr() -> None:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata=SLICE)
    res = simple_evaluate(model=ExtractiveOracle(), tasks=["nq_oracle_bm25"], task_manager=tm, limit=30,
                          log_samples=True, bootstrap_iters=100)
    r = res["results"]["nq_oracle_bm25"]
    samples = res["samples"]["nq_oracle_bm25"]
    recall = [s["answer_recall"] for s in samples]
    assert len(samples) == 30
    # the oracle answers exactly when the answer is in the passages: EM == F1 == answer match == recall
    for m in ("em", "f1", "answer_match"):
        assert r[f"{m},none"] == pytest.approx(sum(recall) / 30)
    n_hit = sum(recall)
    p = n_hit / 30
    assert 0 < n_hit < 30
    assert r["answer_recall_stderr,none"] == pytest.approx(math.sqrt(p * (1 - p) * 30 / 29 / 30))
    assert "gold_at_k,none" in r and r["gold_at_k,none"] >= 0.8
    assert res["versions"]["nq_oracle_bm25"] == 5.0


def test_webq_bm25_docs_have_no_gold_ids() -> None:
    task = _task_dict(["webq_bm25"], max_docs=15)["webq_bm25"]
    docs = _docs(task)
    assert len(docs) == 15 and docs[0]["qid"] == "wqs000000"
    assert all(d["gold_docids"] == [] and len(d["ctxs"]) == 5 for d in docs)
    out = task.process_results(docs[0], [" Jamaican English"])
    assert out["answer_match"] == 1.0 and out["em"] == 1.0 and "gold_at_k" not in out


def test_fewshot_examples_come_from_the_disjoint_pool_and_split_dev(data_dir) -> None:
    """--num_fewshot draws from the task's fewshot split: no test qid or question is ever an example; with
    metadata split=dev the task evaluates the dev pool (with passages), still disjoint from the examples."""
    from tasks.data import load_qa_split

    task = _task_dict(["nq_oracle_bm25"])["nq_oracle_bm25"]
    assert task.config.fewshot_split == "fewshot"
    shots = [dict(d) for d in task.fewshot_docs()]
    assert [s["qid"] for s in shots] == [r["qid"] for r in load_qa_split("nq_oracle", "fewshot", data_dir)]
    assert all(set(s) == {"qid", "question", "answers"} for s in shots)  # question/answer pairs, no passages
    every_test = load_qa_split("nq_oracle", "test", data_dir) + load_qa_split("nq_open", "test", data_dir)
    test_qids, test_qs = {r["qid"] for r in every_test}, {r["question"] for r in every_test}
    assert not test_qids & {s["qid"] for s in shots} and not test_qs & {s["question"] for s in shots}
    task.set_fewshot_seed(1234)
    for d in _docs(task)[:10]:
        ctx = task.fewshot_context(d, num_fewshot=2)
        used = [s for s in shots if f"Question: {s['question']}\n" in ctx]
        assert len(used) == 2 and all(s["answers"][0] in ctx for s in used)
        used.sort(key=lambda s: ctx.index(f"Question: {s['question']}\n"))
        # instruction once, then the examples (question/answer pairs), then the question (tasks/README.md)
        assert ctx == ("Answer the question with a short answer.\n"
                       + "".join(f"Question: {s['question']}\nAnswer: {s['answers'][0]}\n\n" for s in used)
                       + f"Question: {d['question']}\nAnswer:")
    dev_task = _task_dict(["nq_oracle_bm25"], split="dev")["nq_oracle_bm25"]
    dev = _docs(dev_task)
    assert [d["qid"] for d in dev] == [r["qid"] for r in load_qa_split("nq_oracle", "dev", data_dir)[:40]]
    assert all(len(d["ctxs"]) == 5 for d in dev)
    assert not {d["qid"] for d in dev} & (test_qids | {s["qid"] for s in shots})


def test_base_prompt_metadata() -> None:
    """prompt=base: no instruction line, Question:/Answer: few-shot; an unknown prompt is a one-line error."""
    task = _task_dict(["nq_oracle_gold"], prompt="base", max_docs=3)["nq_oracle_gold"]
    task.set_fewshot_seed(1234)
    d = _docs(task)[0]
    assert d["prompt"] == "base" and d["instruction"] == "" and task.config.metadata["prompt"] == "base"
    assert _task_dict(["nq_oracle_gold"], max_docs=1)["nq_oracle_gold"].config.metadata["prompt"] == "instruct"
    assert task.fewshot_context(d, num_fewshot=0) == "Question: who got the first nobel prize in physics\nAnswer:"
    ctx = task.fewshot_context(d, num_fewshot=1)
    assert ctx.startswith("Question: ") and ctx.count("\nAnswer: ") == 1 and "Answer the question" not in ctx
    from retrieval.errors import ConfigError
    from tasks.utils import load_qa

    with pytest.raises(ConfigError, match="prompt='chat': expected one of instruct, base"):
        load_qa(dataset="nq_oracle", gold_only=True, prompt="chat", max_docs=2)


def test_lm_eval_custom_dataset_hint_is_not_printed() -> None:
    """lm-eval warns "<task>: Custom kwargs can be passed to `--metadata` ... For example
    --metadata='{"max_seq_lengths":[4096, 8192]}'" whenever a task with a custom_dataset builds its data: every
    tokrag task, so every lm_eval run printed it (right above our one-line errors). The start-up hook drops it;
    other lm-eval task warnings still print."""
    import subprocess
    import sys

    code = ("import lm_eval.api.registry, lm_eval.api.task as t\n"
            "t.eval_logger.warning('nq_oracle_bm25: Custom kwargs can be passed to `--metadata` in console (as json "
            "string) or to the TaskManager.\\nFor example --metadata=max_seq_lengths')\n"
            "t.eval_logger.warning('another lm-eval warning')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "max_seq_lengths" not in proc.stderr and "another lm-eval warning" in proc.stderr
