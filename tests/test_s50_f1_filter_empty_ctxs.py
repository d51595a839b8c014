"""rag-selfrag-filter on a doc whose passage list is empty (``ctxs: []``) and that has no ``query_field`` (s50 f1).

On a ``loglikelihood_rolling`` doc (and an empty ``loglikelihood`` context) the filter refused it for its missing
question, and so did the pre-load check of the lm-eval hook and the leaderboard (``first_doc_without_query``), although
the critic judges no passage; rag-none, rag-standard, tokrag, CAD, AdaCAD, REPLUG and the entropy ensemble score it
closed book. The filter does too now, and the pre-load check lets it through. SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import json

import lm_eval
import pytest
from lm_eval.api.instance import Instance
from lm_eval.tasks import TaskManager

from tests.eval_helpers import stop_at_model_load
from tokrag_model.methods.none import RagNoneLM
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM, first_doc_without_query
from tokrag_model.methods.standard import RagStandardLM

TEXT = "The river runs to the sea. Mountains rise above the clouds in the north."
TASK = """task: lm_no_passages
dataset_path: json
dataset_kwargs: {data_files: {test: DOCS}}
test_split: test
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: "{{text}}"
metric_list: [{metric: word_perplexity}]
metadata: {version: 1.0}
"""
DOC = {"qid": "p0", "text": TEXT, "ctxs": []}  # passages retrieved, none attached; no query field
# word_perplexity of DOC's text closed book (SmolLM2-135M-Instruct, CPU, float32: exp(74.1043 nats / 14 words));
# the 4th decimal may differ across CPUs
PPL = 198.9722


@pytest.fixture
def task_dir(tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "docs.jsonl").write_text(json.dumps(DOC) + "\n", encoding="utf-8")
    (folder / "lm_no_passages.yaml").write_text(TASK.replace("DOCS", str(folder / "docs.jsonl")), encoding="utf-8")
    return folder


def test_the_filter_scores_an_empty_passage_list_closed_book_as_rag_standard(backbone, task_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ppl, traces = {}, {}
    for cls in (RagNoneLM, RagStandardLM, SelfRAGFilterLM):
        lm = cls.with_backbone(backbone, device="cpu")
        out = lm_eval.simple_evaluate(model=lm, tasks=["lm_no_passages"], log_samples=True,
                                      task_manager=TaskManager(include_path=str(task_dir), include_defaults=False))
        ppl[cls.METHOD] = out["results"]["lm_no_passages"]["word_perplexity,none"]
        (sample,) = out["samples"]["lm_no_passages"]
        traces[cls.METHOD] = sample["arguments"][0][-1]["tokrag_trace"]  # in memory: [(text, {"tokrag_trace": ...})]
    # the old code: ConfigError "the critic needs a question, but a language-modelling doc ... has no 'question' field"
    assert ppl["rag-selfrag-filter"] == pytest.approx(ppl["rag-standard"], rel=1e-6)
    assert ppl["rag-standard"] == pytest.approx(ppl["rag-none"], rel=1e-6)
    assert ppl["rag-none"] == pytest.approx(PPL, rel=1e-3)
    assert traces["rag-selfrag-filter"]["windows"] == [{"critic": {}, "selection": "threshold", "kept_rate": None,
                                                        "critic_auc": None, "passages": [], "dropped": [],
                                                        "closed_book": True}]


def test_an_empty_loglikelihood_context_with_an_empty_passage_list(backbone):
    """An empty ``loglikelihood`` context is the first window's prefix token too: scored as rag-standard scores it."""
    req = [Instance("loglikelihood", DOC, ("", TEXT), 0, metadata=("t", 0, 1))]
    (want, _), = RagStandardLM.with_backbone(backbone, device="cpu").loglikelihood(req, disable_tqdm=True)
    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu")
    (got, _), = lm.loglikelihood([Instance("loglikelihood", DOC, ("", TEXT), 0, metadata=("t", 0, 1))],
                                 disable_tqdm=True)
    assert got == pytest.approx(want, rel=1e-6) and want == pytest.approx(-74.1043, rel=1e-4)


def test_the_pre_load_check_accepts_what_the_model_accepts(task_dir, monkeypatch):
    """``lm_eval --model rag-selfrag-filter`` on the task reaches the model load (the old code refused it before, for
    the missing question); a doc with passages and no query is still refused (first_doc_without_query)."""
    from tokrag_model.eval_cli import main

    class Reached(Exception):
        pass

    def reached(*args, **kwargs):
        raise Reached

    stop_at_model_load(monkeypatch, reached)
    with pytest.raises(Reached):
        main(["--model", "rag-selfrag-filter", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--include_path", str(task_dir), "--tasks", "lm_no_passages"])
    with_passage = dict(DOC, ctxs=[{"docid": "d0", "text": "Rivers flow downhill.", "rank": 1}])
    assert first_doc_without_query([DOC], "question", "rag-selfrag-filter") is None
    assert first_doc_without_query([DOC, with_passage], "question", "rag-selfrag-filter") == (1, with_passage)
