"""``leaderboard_helpers.tiny_llama``, the random Llama that tests run the real methods on where SmolLM2's answers are
not their subject (s60 r5, review of t1's 585ebf6 / a66bf63).

Drawn with Llama's std 0.02, the model's greedy next byte after every prompt of tests/fixtures/tokrag_model_task
was ``\\n``: each generation ended at once with ``''`` and Tok-RAG's two branches agreed at every step. The killed-cell
journal test (test_leaderboard_resume_chunks) then compared three empty answers, so a replay that lost or swapped a
generation's text passed; the device-placement test (test_device_placement) never reached the attention and
hidden-state reads Tok-RAG makes while generating (``decoder.last_query_attention``), which SmolLM2 reached. These
tests hold the model to what those tests need: distinct answers that run to their budget, Tok-RAG testing and
emitting both branches' tokens, and the same files on every call without touching the caller's random state.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import torch
from leaderboard_helpers import REPO, tiny_llama

from lm_eval.api.instance import Instance


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _mini_docs() -> list[dict]:
    """The 3 questions (with their 2 passages) of tests/fixtures/tokrag_model_task, the journal test's task."""
    spec = importlib.util.spec_from_file_location("_r5_mini_utils", REPO / "tests" / "fixtures" / "tokrag_model_task" / "utils.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.load()["test"])


def _tokrag_generations(folder: Path, docs: list[dict], budget: int, **model_args):
    """Tok-RAG's greedy generations (``until: ["\\n"]``) over ``docs`` on the model in ``folder``: ``(outputs,
    traces)``."""
    from tokrag_model.base import Backbone
    from tokrag_model.methods import MODELS

    lm = MODELS["tokrag"].with_backbone(Backbone.load(str(folder)), batch_invariant=False, **model_args)
    reqs = [Instance("generate_until", d, (f"Question: {d['question']}?\nAnswer:",
                                           {"until": ["\n"], "max_gen_toks": budget, "do_sample": False}), i)
            for i, d in enumerate(docs)]
    out = lm.generate_until(reqs, disable_tqdm=True)
    return out, [r.args[-1]["tokrag_trace"] for r in reqs]


def test_the_same_files_on_every_call_and_the_callers_random_state_is_kept(tmp_path):
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    a = tiny_llama(tmp_path / "a", layers=2)
    after = torch.get_rng_state()
    b = tiny_llama(tmp_path / "with space" / "b", layers=2)
    assert torch.equal(after, state)  # the helper's seed 0 does not leak into the caller's draws
    assert set(_files(a)) >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert _files(a) == _files(b)


def test_tokrag_answers_on_it_differ_run_to_the_budget_and_test_both_branches(tmp_path):
    """The journal test's model (2 layers) on its 3 questions, Tok-RAG at k=2, 4 new tokens."""
    out, traces = _tokrag_generations(tiny_llama(tmp_path / "m", layers=2), _mini_docs(), 4, k=2)
    assert len(out) == 3 and all(out) and len(set(out)) == 3, out
    assert [t["stop_reason"] for t in traces] == ["budget"] * 3
    assert [len(t["tokens"]) for t in traces] == [4, 4, 4]
    branches = {tok[0] for t in traces for tok in t["tokens"]}
    assert {"R", "L"} <= branches, branches  # the test ran (S_R, S_L) and each branch won at least once
    assert sum(t["n_pure"] for t in traces) > 0 and sum(t["n_rag"] for t in traces) > 0


def test_tokrag_on_the_device_placement_model_reads_attention_while_generating(tmp_path, monkeypatch):
    """test_device_placement's model (4 layers, tied head) and requests: Tok-RAG, fixed and dynamic layer, tests a
    generated token, so ``last_query_attention`` (the RAG query's attention at the fusion layer) runs."""
    import test_device_placement as dp
    from tokrag_model.decoder import MultiContextDecoder

    calls = []
    orig = MultiContextDecoder.last_query_attention

    def counted(self, batch, row, layer):
        calls.append(layer)
        return orig(self, batch, row, layer)

    monkeypatch.setattr(MultiContextDecoder, "last_query_attention", counted)
    folder = tiny_llama(tmp_path / "m", layers=4, tied=True)
    for kwargs in ({}, {"layer": "dynamic"}):
        calls.clear()
        out, traces = _tokrag_generations(folder, dp.DOCS, 3, batch_size=2, **kwargs)
        assert all(out) and [t["stop_reason"] for t in traces] == ["budget"] * 2, (kwargs, out)
        tested = [tok for t in traces for tok in t["tokens"] if tok[0] in ("R", "L")]
        assert tested and len(calls) == len(tested), (kwargs, traces)
