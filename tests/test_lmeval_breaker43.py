"""Breaker 43's defects in ``lm_eval --model <tokrag model>`` use.

1. ``--use_cache PATH`` handed one task's answers to another with the same questions: lm-eval's ``CachingLM`` keyed a
   response by the request's arguments (context, generation kwargs), and a tokrag context holds the passages slot,
   not the passages (``nq_oracle_bm25`` got ``nq_oracle_bm25_noise100``'s answers). The key now covers the doc and the
   model configuration (:meth:`tokrag_model.base.RAGMethodLM.response_cache_args`); the same requests again still
   hit the cache (resume).
2. ``wiki_lm_bm25 --num_fewshot 2`` drew its examples from the scored test documents (the task has no few-shot split):
   word perplexity 33.2 -> 6.7. Refused before the model loads for every task of ours without a few-shot pool.
3. ``--model_args max_gen_toks=64`` with a QA task (whose generation_kwargs set 32) was refused only after the model
   load; now before it.
"""

from __future__ import annotations

import sqlite3

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CacheHook, CachingLM

from tokrag_model.methods import MODELS

QUESTION = "who got the first nobel prize in physics"
GOLD = [{"docid": "d1", "title": "Nobel Prize", "text": "The first Nobel Prize in Physics went to Wilhelm Roentgen.",
         "rank": 1}]
NOISE = [{"docid": "d9", "title": "Paris", "text": "Paris is the capital and most populous city of France.", "rank": 1}]


def _doc(ctxs: list[dict]) -> dict:
    return {"qid": "q0", "question": QUESTION, "answers": ["Wilhelm Roentgen"], "ctxs": ctxs}


def _requests(kind: str, ctxs: list[dict]) -> list[Instance]:
    doc = _doc(ctxs)
    if kind == "generate_until":
        args = (f"Question: {QUESTION}?\nAnswer:", {"until": ["\n"], "max_gen_toks": 4, "do_sample": False})
    elif kind == "loglikelihood":
        args = (f"Question: {QUESTION}?\nAnswer:", " Wilhelm Roentgen")
    else:
        args = ("The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Roentgen.",)
    return [Instance(kind, doc, args, 0)]


class _Counting:
    """Counts the requests that reach the model's ``kind`` (the rest came from the cache)."""

    def __init__(self, lm, kind: str):
        self.seen: list[Instance] = []
        real = getattr(lm, kind)

        def counted(requests, *a, **k):
            self.seen.extend(requests)
            return real(requests, *a, **k)

        setattr(lm, kind, counted)


def _through_cache(lm, path: str, kind: str, requests: list[Instance]) -> tuple[list, int]:
    """``kind`` over ``requests`` through lm-eval's ``CachingLM`` at ``path``: (responses, requests the model ran)."""
    counter = _Counting(lm, kind)
    cached = CachingLM(lm, path)
    try:
        return getattr(cached, kind)(requests), len(counter.seen)
    finally:
        cached.dbdict.close()
        lm.__dict__.pop(kind, None)
        lm.set_cache_hook(CacheHook(None))


@pytest.mark.parametrize("kind", ["generate_until", "loglikelihood", "loglikelihood_rolling"])
def test_use_cache_never_hands_one_tasks_passages_answers_to_another(backbone, tmp_path, kind):
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    path = str(tmp_path / "c_rank0.db")
    gold, ran = _through_cache(lm, path, kind, _requests(kind, GOLD))
    assert ran == 1
    noisy, ran = _through_cache(lm, path, kind, _requests(kind, NOISE))  # same question, other passages
    assert ran == 1  # it was 0: the gold task's response was returned
    assert noisy == getattr(lm, kind)(_requests(kind, NOISE))
    again, ran = _through_cache(lm, path, kind, _requests(kind, GOLD))  # the same command again: resumes
    assert (again, ran) == (gold, 0)


def test_use_cache_keys_the_model_configuration(backbone, tmp_path):
    """Two model configurations given the same --use_cache path: the second computes its own answers."""
    path, kind = str(tmp_path / "c_rank0.db"), "generate_until"
    _through_cache(MODELS["rag-standard"].with_backbone(backbone, batch_size=1), path, kind, _requests(kind, GOLD))
    other = MODELS["rag-standard"].with_backbone(backbone, batch_size=1, passage_template="Passage: {text}\n")
    _, ran = _through_cache(other, path, kind, _requests(kind, GOLD))
    assert ran == 1
    _, ran = _through_cache(MODELS["rag-cad"].with_backbone(backbone, batch_size=1), path, kind, _requests(kind, GOLD))
    assert ran == 1


def test_a_finished_response_is_stored_under_the_key_the_cache_reads(backbone, tmp_path):
    """The model's cache hook (what an interrupted run keeps) and the cache's lookup use one key: a run cut after the
    model stored its response still finds it."""
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    path, kind = str(tmp_path / "c_rank0.db"), "generate_until"
    cached = CachingLM(lm, path)
    first = lm.generate_until(_requests(kind, GOLD))  # the model alone, its hook set: as a run cut before the commit
    cached.dbdict.close()
    lm.set_cache_hook(CacheHook(None))
    con = sqlite3.connect(path)
    try:
        assert con.execute("select count(*) from unnamed").fetchone()[0] == 1
    finally:
        con.close()
    again, ran = _through_cache(lm, path, kind, _requests(kind, GOLD))
    assert (again, ran) == (first, 0)


# 2. wiki_lm_bm25 --num_fewshot 2: the task has only a test split, so lm-eval drew the examples from the scored documents
@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.mark.parametrize("task", ["wiki_lm_bm25", "wikitext103_bm25_wiki"])
def test_num_fewshot_is_refused_for_a_task_without_a_few_shot_split(manager, task, monkeypatch):
    import tasks.sources
    from retrieval.errors import ConfigError
    from tasks.precheck import check_selected_tasks

    # wikitext103_bm25_wiki's hub data set (checked offline before the model load): tests/test_precheck_s46m2.py's
    monkeypatch.setattr(tasks.sources, "check_hub_source", lambda *args, **kwargs: None)
    import tasks.precheck  # and its prebuilt index: tests/test_fb_wikitext_prebuilt_precheck.py's

    monkeypatch.setattr(tasks.precheck, "check_prebuilt_download", lambda *args, **kwargs: None)
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(manager, ["nq_oracle_bm25", task], {}, num_fewshot=2)
    assert str(exc.value) == (
        f"--num_fewshot 2: task {task} has no few-shot split of its own (its YAML sets none of fewshot_split, "
        "training_split, validation_split), so lm-eval would draw the examples from the test documents it scores and "
        "put scored text into the prompts; drop --num_fewshot for this task")
    check_selected_tasks(manager, [task], {}, num_fewshot=0)
    check_selected_tasks(manager, [task], {})


def test_a_yaml_that_includes_ours_with_its_own_num_fewshot_is_refused_too(manager, tmp_path):
    from lm_eval.tasks import TaskManager

    from retrieval.errors import ConfigError
    from tasks import TASK_DIR
    from tasks.precheck import check_selected_tasks

    (tmp_path / "mine.yaml").write_text(f"include: {TASK_DIR}/wiki_lm/wiki_lm_bm25.yaml\ntask: my_wiki_lm\nnum_fewshot: 1\n")
    tm = TaskManager(include_path=[str(TASK_DIR), str(tmp_path)], include_defaults=False)
    with pytest.raises(ConfigError, match=r"^num_fewshot: 1 \(task config\): task my_wiki_lm has no few-shot split"):
        check_selected_tasks(tm, ["my_wiki_lm"], {})
    (tmp_path / "mine.yaml").write_text(f"include: {TASK_DIR}/wiki_lm/wiki_lm_bm25.yaml\ntask: my_wiki_lm\n"
                                        "fewshot_config: {samples: [{prefix: a, continuation: ' b', ctxs: []}]}\n")
    tm = TaskManager(include_path=[str(TASK_DIR), str(tmp_path)], include_defaults=False)
    check_selected_tasks(tm, ["my_wiki_lm"], {}, num_fewshot=1)  # examples of its own: left to lm-eval


# 3. --model_args max_gen_toks=64 with a QA task: refused before the model load
@pytest.mark.parametrize("model_args, gen_kwargs, refused", [
    ("pretrained=m,max_gen_toks=64", None, "task nq_oracle_bm25's generation_kwargs set max_gen_toks=32"),
    ("pretrained=m,max_gen_toks=64", {"max_gen_toks": 16}, "--gen_kwargs set max_gen_toks=16"),
    ("pretrained=m,max_gen_toks=32", None, None),
    ("pretrained=m,max_gen_toks=64", {"max_gen_toks": 64}, None),
    ("pretrained=m", None, None)])
def test_a_max_gen_toks_model_argument_the_task_overrides(manager, model_args, gen_kwargs, refused):
    from retrieval.errors import ConfigError
    from tasks.precheck import check_run_arguments

    def check(tasks, model="rag-standard"):
        check_run_arguments(manager, tasks, model=model, model_args=model_args, gen_kwargs=gen_kwargs or {})

    check(["wiki_lm_bm25"])  # scoring only: max_gen_toks is never read
    check(["nq_oracle_bm25"], model="hf")  # not a tokrag method: left to it
    if refused is None:
        check(["nq_oracle_bm25"])
        return
    with pytest.raises(ConfigError) as exc:
        check(["wiki_lm_bm25", "nq_oracle_bm25"])
    assert str(exc.value) == (f"--model rag-standard: max_gen_toks=64 (model argument) has no effect: {refused}, which "
                              "win as in lm-eval's hf; pass --gen_kwargs max_gen_toks=64 instead")


# the two refusals through tokrag eval / lm_eval's CLI, before lm-eval builds the model
@pytest.fixture
def no_model(monkeypatch):
    from tests.eval_helpers import stop_at_model_load

    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)


@pytest.mark.parametrize("args, start", [
    (["--tasks", "wiki_lm_bm25", "--num_fewshot", "2"], "--num_fewshot 2: task wiki_lm_bm25 has no few-shot split"),
    (["--tasks", "nq_oracle_bm25", "--model_args", "pretrained=smollm2-135m-instruct,max_gen_toks=64",
      "--apply_chat_template"],
     "--model rag-standard: max_gen_toks=64 (model argument) has no effect: task nq_oracle_bm25's generation_kwargs")])
def test_refused_by_the_cli_before_the_model_loads(no_model, args, start):
    from retrieval.errors import ConfigError
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--limit", "1", *args])
    assert str(exc.value).startswith(start) and "\n" not in str(exc.value), str(exc.value)
