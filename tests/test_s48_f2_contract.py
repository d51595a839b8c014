"""The fairness contract says where a setting stated for the whole model applied, as the run folders record it.

The committed nq-wiki-12k-v2 report listed ``apply_chat_template: True`` for SmolLM2 although its wiki_lm_bm25 cells
(then ``loglikelihood_rolling``) never saw a chat: lm-eval gives a rolling request the document text alone
(``ConfigurableTask.construct_requests``: ``arguments = (doc_to_target(doc),)``), the rendered context is dropped. And
the Gemma contract printed the spec's subset text, "... and the first 100 paragraphs of wiki_lm_bm25", for a model
that ran only nq_oracle_bm25 and nq_oracle_bm25_noise60. Likewise ``model_args.k: 5`` stood for tasks whose questions
carry fewer passages (wiki_lm_bm25 its own 3, a gold-only task 1).

Synthetic finished cells shaped as the runner writes them (``results.json``: ``configs.<task>.output_type``,
``n-samples``, ``config.tokrag_prompt``; samples with their ``doc``), fed to ``report.compute``: no model runs.
"""

from __future__ import annotations

from leaderboards.report import compute, render_markdown
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import FIX, TOY, write_spec

ROLLING_NOTE = "not on toy_lm: loglikelihood_rolling, whose requests carry the text without the context lm-eval renders"
OUTPUT_TYPE = {"toy_qa": "generate_until", "toy_lm": "loglikelihood_rolling", "wiki_lm_bm25": "loglikelihood"}
PASSAGES = {"toy_qa": 5, "toy_lm": 3, "wiki_lm_bm25": 3}


def _spec(tmp_path, chat_tasks=None, seeds=(1,)):
    """Model ``chat`` (chat template, a system instruction, k 5) on toy_qa (generates), toy_lm (loglikelihood_rolling)
    and wiki_lm_bm25 (plain text), or ``chat_tasks``; model ``plain`` on toy_qa alone, under a subset text that names
    the three tasks; ``seeds``."""
    chat = {"apply_chat_template": True, "system_instruction": "Be brief.", "model_args": {"k": 5}}
    models = [{"name": "chat", "shared": chat, **({"tasks": chat_tasks} if chat_tasks else {})},
              {"name": "plain", "shared": {"model_args": {"k": 5}}, "tasks": ["toy_qa"]}]
    path = write_spec(tmp_path, limit=4, seeds=seeds,
                      tasks=["toy_qa", {"task": "toy_lm", "limit": 2}, {"task": "wiki_lm_bm25", "limit": 2}],
                      methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
                               {"name": "none", "model": TOY, "model_args": {"mode": "none"}}],
                      extra={"models": models, "bootstrap": {"iters": 100, "seed": 7},
                             "subset": "the first 4 questions of toy_qa and the first 2 texts of toy_lm and wiki_lm_bm25"})
    return load_spec(path)


def _loaded(spec, skip=()):
    """A finished cell per cell of ``spec`` (None for the cell ids in ``skip``), as the runner's folders hold them."""
    out = {}
    for cell in spec.cells():
        t, n = cell.task.task, cell.limit
        doc = {"ctxs": [{"docid": f"d{i}", "text": "x"} for i in range(PASSAGES[t])]}
        if t == "toy_qa":
            samples = [{"doc_id": i, "doc": dict(doc, qid=f"q{i}"), "filter": "none", "em": 1.0, "answer_match": 1.0,
                        "arguments": [["ctx", {"until": ["\n"], "max_gen_toks": 8, "do_sample": False}]]} for i in range(n)]
            res = {"em,none": 1.0, "answer_match,none": 1.0}
        else:
            samples = [{"doc_id": i, "doc": doc, "filter": "none", "word_perplexity": [-6.0, 3], "arguments": [["a b c"]]}
                       for i in range(n)]
            res = {"word_perplexity,none": 7.389}
        results = {"results": {t: res}, "configs": {t: {"output_type": OUTPUT_TYPE[t]}},
                   "n-samples": {t: {"original": 12, "effective": n}},
                   "config": {"limit": n, "tokrag_prompt": {"apply_chat_template": cell.apply_chat_template,
                                                             "system_instruction": cell.system_instruction}}}
        data = {"samples": {t: samples}, "results": results, "cost": {}, "provenance": {}, "config": {}}
        out[cell.cell_id] = (cell, f"key-{cell.cell_id}", None if cell.cell_id in skip else data)
    return out


def test_the_contract_says_which_tasks_a_setting_reached(tmp_path):
    spec = _spec(tmp_path)
    cells = {c.cell_id: c for c in spec.cells()}
    # loglikelihood_rolling: run without it (s50 f4: lm-eval drops a rolling request's chat; it only split the key)
    assert cells["chat/standard/toy_lm/seed1"].apply_chat_template is False
    assert cells["chat/standard/wiki_lm_bm25/seed1"].apply_chat_template is False  # plain text: run without it
    data = compute(spec, _loaded(spec), timings=False)
    chat, plain = (m["contract"] for m in data["models"])
    assert "apply_chat_template: True" in chat and "system_instruction: Be brief." in chat  # as the contract says
    assert "apply_chat_template.toy_lm: false (loglikelihood_rolling: lm-eval scores the text alone)" in chat
    assert "system_instruction.toy_lm: null (loglikelihood_rolling: lm-eval scores the text alone)" in chat
    assert "apply_chat_template.wiki_lm_bm25: false (plain-text language-modelling task)" in chat
    assert "system_instruction.wiki_lm_bm25: null (plain-text language-modelling task)" in chat
    assert chat[:2] == ["model_args.k: 5", "model_args.pretrained: " + spec.shared["model_args"]["pretrained"]]
    assert chat[2] == "passages per question as attached (from the samples), fewer than k 5: 3 on toy_lm, wiki_lm_bm25"
    assert "subset: the first 4 questions of toy_qa and the first 2 texts of toy_lm and wiki_lm_bm25" in chat  # all its tasks
    assert ("subset, as run (from the results): the first 4 of 12 documents of toy_qa (lm-eval limit, in each task's "
            "order), identical for every method") in plain
    assert not [x for x in plain if "toy_lm" in x or "wiki_lm" in x]  # only the task its cells ran
    assert not [x for x in plain if x.startswith(("apply_chat_template", "system_instruction", "passages"))]
    assert data["contract"] == chat[:len(data["contract"])]  # the JSON's first contract, said as run too
    md = render_markdown(data)
    assert "- apply_chat_template: True\n" in md and "- subset, as run (from the results): the first 4 of 12" in md
    # a rolling task's cells that ran with them (a folder of a runner before s50 f4) are said as run
    loaded = _loaded(spec)
    for cell, _, cell_data in loaded.values():
        if cell.task.task == "toy_lm":
            cell_data["results"]["config"]["tokrag_prompt"].update(apply_chat_template=True, system_instruction="Be brief.")
    data = compute(spec, loaded, timings=False)
    chat = data["models"][0]["contract"]
    where = f"(as run, from the results: on toy_qa; {ROLLING_NOTE})"  # wiki_lm_bm25: its own line says so
    assert f"apply_chat_template: True {where}" in chat and "apply_chat_template: True" not in chat
    assert f"system_instruction: Be brief. {where}" in chat
    assert f"- apply_chat_template: True {where}\n" in render_markdown(data)


def test_a_task_without_results_is_named_and_a_setting_that_reached_every_task_is_left_as_it_was(tmp_path):
    spec = _spec(tmp_path)
    wiki = {f"chat/{m}/wiki_lm_bm25/seed1" for m in ("standard", "none")}
    chat = compute(spec, _loaded(spec, skip=wiki), timings=False)["models"][0]["contract"]
    assert "apply_chat_template: True" in chat  # toy_qa with it, toy_lm without it as its own line says (s50 f4)
    assert chat[2] == "passages per question as attached (from the samples), fewer than k 5: 3 on toy_lm"
    lm = {f"chat/{m}/toy_lm/seed1" for m in ("standard", "none")}  # toy_qa applied, wiki_lm_bm25 as its line says
    chat = compute(spec, _loaded(spec, skip=lm), timings=False)["models"][0]["contract"]
    assert "apply_chat_template: True" in chat and "system_instruction: Be brief." in chat
    assert chat[2] == "passages per question as attached (from the samples), fewer than k 5: 3 on wiki_lm_bm25"
    only_qa = _spec(tmp_path / "qa", chat_tasks=["toy_qa"])
    chat = compute(only_qa, _loaded(only_qa), timings=False)["models"][0]["contract"]
    assert "apply_chat_template: True" in chat and "system_instruction: Be brief." in chat
    assert not [x for x in chat if x.startswith("passages")]  # toy_qa's 5


def _one_model(tmp_path):
    """One model (no ``models:``): chat template, a system instruction and k 3 on toy_qa (5 passages) and wiki_lm_bm25
    (plain text, 3 passages), the contract that lists wiki_lm_bm25 without both."""
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 4, "apply_chat_template": True, "system_instruction": "Be brief."}
    path = write_spec(tmp_path, limit=4, tasks=["toy_qa", {"task": "wiki_lm_bm25", "limit": 2}],
                      extra={"shared": shared, "bootstrap": {"iters": 100, "seed": 7}})
    return load_spec(path)


def test_a_plain_text_task_the_contract_lists_without_the_setting_leaves_the_contract_as_it_was(tmp_path):
    """r1 F1: every cell ran as the spec says, wiki_lm_bm25 without the chat template and system instruction, as its
    per-task lines say: the contract is the spec's, byte for byte (it was rewritten to 'as run ...; not on
    wiki_lm_bm25: its cells ran without it', saying the per-task lines' fact twice)."""
    spec = _one_model(tmp_path)
    before = spec.contract_lines()
    assert "apply_chat_template: True" in before and "system_instruction: Be brief." in before
    assert "apply_chat_template.wiki_lm_bm25: false (plain-text language-modelling task)" in before
    data = compute(spec, _loaded(spec), timings=False)
    assert data["contract"] == before
    chat = data["models"][0]["contract"]
    assert chat[:len(before)] == before and chat[len(before):] and \
        all(x.startswith("generation as run (from the samples)") for x in chat[len(before):])


def test_a_plain_text_task_that_ran_with_the_setting_or_a_task_that_ran_without_it_is_said(tmp_path):
    """What differs from the contract's lines is still said: wiki_lm_bm25's cells recording the chat template although
    its line says false, or toy_qa's cells recording none although the model-wide line says True."""
    spec = _one_model(tmp_path)
    loaded = _loaded(spec)
    for cell, _, data in loaded.values():
        if cell.task.task == "wiki_lm_bm25":
            data["results"]["config"]["tokrag_prompt"]["apply_chat_template"] = True
    chat = compute(spec, loaded, timings=False)["models"][0]["contract"]
    assert ("apply_chat_template: True (as run, from the results: on toy_qa; also on wiki_lm_bm25: its cells ran with "
            "it, unlike the contract's apply_chat_template.<task> line)") in chat
    assert "system_instruction: Be brief." in chat  # wiki_lm_bm25 ran without it, as its line says
    loaded = _loaded(spec)
    for cell, _, data in loaded.values():
        if cell.task.task == "toy_qa":
            data["results"]["config"]["tokrag_prompt"]["system_instruction"] = None
    chat = compute(spec, loaded, timings=False)["models"][0]["contract"]
    assert "system_instruction: Be brief. (as run, from the results: not on toy_qa: its cells ran without it)" in chat
    assert "apply_chat_template: True" in chat


def test_the_subset_line_says_identical_for_every_method_only_when_it_is(tmp_path):
    """r1 F2: one method's toy_qa cell with 3 of its 4 documents: the line said 'DIFFERING numbers of documents between
    methods on toy_qa (...), identical for every method'."""
    spec = _spec(tmp_path)
    loaded = _loaded(spec)
    data = loaded["plain/none/toy_qa/seed1"][2]
    data["samples"]["toy_qa"] = data["samples"]["toy_qa"][:3]
    plain = compute(spec, loaded, timings=False)["models"][1]["contract"]
    assert [x for x in plain if x.startswith("subset")] == [
        "subset, as run (from the results): DIFFERING numbers of documents between methods on toy_qa (lm-eval limit, "
        "in each task's order)"]


SUBSET = "the first 4 questions of toy_qa and the first 2 texts of toy_lm and wiki_lm_bm25"
PLAIN_SUBSET = ("subset, as run (from the results): the first 4 of 12 documents of toy_qa (lm-eval limit, in each task's "
                "order), identical for every method")


def _subset_lines(data):
    return [[x for x in m["contract"] if x.startswith("subset")] for m in data["models"]]


def test_the_subset_line_names_the_methods_without_results(tmp_path):
    """s49 f1 (reviewer m2): a partial run (``report --allow-missing``) where a method had no results on a task still
    said the subset was 'identical for every method' (the spec's text, or the as-run line), though that method showed
    no numbers there. A complete run's lines are as before, byte for byte."""
    spec = _spec(tmp_path)
    assert _subset_lines(compute(spec, _loaded(spec), timings=False)) == [[f"subset: {SUBSET}"], [PLAIN_SUBSET]]
    skip = {"plain/none/toy_qa/seed1", "chat/none/toy_qa/seed1", "chat/standard/wiki_lm_bm25/seed1",
            "chat/none/wiki_lm_bm25/seed1"}
    data = compute(spec, _loaded(spec, skip=skip), timings=False)
    assert _subset_lines(data) == [
        [f"subset: {SUBSET} (as run, from the results: no results yet on wiki_lm_bm25; no results yet for none on toy_qa)"],
        [PLAIN_SUBSET + " with results; no results yet for none on toy_qa"]]
    md = render_markdown(data)
    assert f"- {PLAIN_SUBSET} with results; no results yet for none on toy_qa\n" in md
    # a task without any results is named as before (its limit), the tail is unchanged when every method of the
    # tasks with results has results
    only = _spec(tmp_path / "two", chat_tasks=["toy_qa", "toy_lm"])
    chat = _subset_lines(compute(only, _loaded(only, skip={"chat/standard/toy_lm/seed1", "chat/none/toy_lm/seed1"}),
                                 timings=False))[0]
    assert chat == ["subset, as run (from the results): the first 4 of 12 documents of toy_qa; limit 2 on toy_lm (no "
                    "results yet) (lm-eval limit, in each task's order), identical for every method"]
    # methods that differ and a method without results: both said, no 'identical'
    loaded = _loaded(only, skip={"chat/none/toy_lm/seed1"})
    short = loaded["chat/none/toy_qa/seed1"][2]
    short["samples"]["toy_qa"] = short["samples"]["toy_qa"][:3]
    chat = _subset_lines(compute(only, loaded, timings=False))[0]
    assert chat == ["subset, as run (from the results): DIFFERING numbers of documents between methods on toy_qa; the "
                    "first 2 of 12 documents of toy_lm (lm-eval limit, in each task's order); no results yet for none "
                    "on toy_lm"]


def test_the_subset_line_counts_a_method_with_some_of_its_seeds_as_with_results(tmp_path):
    """Seed 2 of one method missing: that method's row shows seed 1's numbers on the same documents (marked partial
    elsewhere), so the subset is identical for every method and the lines are the complete run's; with both of its
    seeds missing it is named."""
    spec = _spec(tmp_path, seeds=(1, 2))
    lines = _subset_lines(compute(spec, _loaded(spec, skip={"plain/none/toy_qa/seed2", "chat/none/toy_lm/seed2"}),
                                  timings=False))
    assert lines == [[f"subset: {SUBSET}"], [PLAIN_SUBSET]]
    lines = _subset_lines(compute(spec, _loaded(spec, skip={"plain/none/toy_qa/seed1", "plain/none/toy_qa/seed2",
                                                           "chat/none/toy_lm/seed1", "chat/none/toy_lm/seed2"}),
                                  timings=False))
    assert lines == [[f"subset: {SUBSET} (as run, from the results: no results yet for none on toy_lm)"],
                     [PLAIN_SUBSET + " with results; no results yet for none on toy_qa"]]


def test_the_passages_line_names_a_task_where_some_documents_carried_fewer_than_k(tmp_path):
    """r1 F3: k 5, toy_qa's documents carry 5 passages but one, which carries 2 (a retrieval that returned fewer):
    the line named only tasks where every document carried fewer."""
    spec = _spec(tmp_path, chat_tasks=["toy_qa"])
    loaded = _loaded(spec)
    for cell, _, data in loaded.values():
        if cell.model.name == "chat":
            first = data["samples"]["toy_qa"][0]
            first["doc"] = dict(first["doc"], ctxs=[{"docid": "a", "text": "x"}, {"docid": "b", "text": "y"}])
    chat, plain = (m["contract"] for m in compute(spec, loaded, timings=False)["models"])
    assert chat[2] == "passages per question as attached (from the samples), fewer than k 5: 2 to 5 on toy_qa"
    assert not [x for x in plain if x.startswith("passages")]  # every document with its 5


def test_lm_eval_gives_a_rolling_request_the_text_alone():
    """What the contract relies on: under apply_chat_template lm-eval renders the chat of a loglikelihood_rolling
    task's document (and the system instruction in it), then builds the request from the text alone."""
    from lm_eval.tasks import TaskManager

    rendered = []

    def chat(history, add_generation_prompt=True):
        rendered.append(history)
        return "<chat>" + " ".join(m["content"] for m in history) + "</chat>"

    task = TaskManager(include_path=str(FIX / "tasks")).load(["toy_lm"])["tasks"]["toy_lm"]
    task.build_all_requests(limit=2, rank=0, world_size=1, apply_chat_template=True, system_instruction="Be brief.",
                            chat_template=chat, tokenizer_name="toy")
    assert rendered and rendered[0][0] == {"role": "system", "content": "Be brief."}
    assert [i.args for i in task.instances] == [("The river runs to the sea.",),
                                               ("Mountains rise above the clouds in the north.",)]


def test_the_subset_line_of_a_model_without_any_results_claims_nothing_identical(tmp_path):
    """s49 f4: a model none of whose cells finished (``report --allow-missing``) was said to have run 'limit 4 on toy_qa
    (no results yet) (lm-eval limit, in each task's order), identical for every method': with no numbers there is
    nothing identical. The other model's lines are unchanged."""
    spec = _spec(tmp_path)
    lines = _subset_lines(compute(spec, _loaded(spec, skip={"plain/standard/toy_qa/seed1", "plain/none/toy_qa/seed1"}),
                                  timings=False))
    assert lines == [[f"subset: {SUBSET}"],
                     ["subset, as run (from the results): limit 4 on toy_qa (no results yet) (lm-eval limit, in each "
                      "task's order)"]]
