"""Every method's scoring and generation keep their tensors on the model's device (found on a GPU: issue 13.4).

The first run of benchmarks/gpu_check.sh on a CUDA device crashed in ``loglikelihood_rolling`` with "Expected
all tensors to be on the same device": ``_sum_ll`` compared CUDA log-probs with a CPU index tensor, and Tok-RAG's
``TeacherForced`` kept its query positions (RoPE, causal mask) on the CPU. CI has no GPU, so this module emulates
a second device on the CPU: a ``TorchFunctionMode`` tags each tensor made by a factory without ``device=`` as
*host* and everything else (weights, model outputs, tensors made with ``device=`` or moved with ``.to``) as
*device*, follows the tags through every torch call, and records each op that mixes a non-scalar host tensor
with a device tensor, the case that raises on CUDA. (Indexing a device tensor with a host integer index is
allowed on CUDA and not recorded.)

The methods run over a tiny random Llama (``leaderboard_helpers.tiny_llama``, 4 layers: Tok-RAG's dynamic layer has
layers to choose from; LM head tied to the embedding, as SmolLM2's): where tensors are made is the subject, not
SmolLM2's numbers (which made the module ~30 CPU-s).
"""

from __future__ import annotations

import traceback

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakTensorKeyDictionary

from lm_eval.api.instance import Instance
from leaderboard_helpers import tiny_llama

HOST, DEV = "host", "device"
FACTORIES = {torch.tensor, torch.as_tensor, torch.asarray, torch.arange, torch.zeros, torch.ones, torch.full,
             torch.empty, torch.rand, torch.randn, torch.randint, torch.eye, torch.linspace, torch.from_numpy,
             torch.scalar_tensor}
SCALAR_STRICT = {"cat", "stack", "where", "concat", "concatenate", "hstack", "vstack"}  # 0-dim host tensors fail here too


class DeviceTags(TorchFunctionMode):
    """Records ops that mix host-made and device tensors: ``mixes`` = [(op name, our innermost frame)].

    Only the string ``"cpu"`` (or no device) makes a host tensor: the code under test names the model's device as a
    ``torch.device`` (``self.device``, ``x.device``), which is ``torch.device("cpu")`` here and CUDA on a GPU, so a
    ``torch.device("cpu")`` stands for the model's device in this emulation (treating it as the host flags every
    correct ``device=self.device``)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags = WeakTensorKeyDictionary()
        self.mixes: list[tuple[str, str]] = []

    def _tag(self, t: torch.Tensor) -> str:
        return self.tags.get(t, DEV)  # untagged: parameters, buffers, tensors from before the mode

    def _set(self, out, tag: str) -> None:
        for o in tree_flatten(out)[0]:
            if isinstance(o, torch.Tensor):
                self.tags[o] = tag

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", str(func))
        if func in FACTORIES:
            src = args[0] if args else None
            if func in (torch.as_tensor, torch.asarray) and isinstance(src, torch.Tensor) and kwargs.get("device") is None:
                self._set(out, self._tag(src))
            else:
                dev = kwargs.get("device")
                self._set(out, HOST if dev is None or (isinstance(dev, str) and dev.startswith("cpu")) else DEV)
            return out
        flat = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        if name == "cpu":
            self._set(out, HOST)
            return out
        if name == "to":
            targets = [*args[1:], kwargs.get("device"), kwargs.get("other")]
            moved = [a for a in targets if isinstance(a, (torch.device, str, torch.Tensor))]
            if moved and isinstance(moved[0], str) and moved[0].startswith("cpu"):
                self._set(out, HOST)
            else:
                self._set(out, (self._tag(moved[0]) if isinstance(moved[0], torch.Tensor) else DEV) if moved else self._tag(args[0]))
            return out
        tags = [self._tag(a) for a in flat]
        host = [a for a in flat if self._tag(a) == HOST and (a.dim() > 0 or name in SCALAR_STRICT)]
        if DEV in tags and host:
            index_ok = name == "__getitem__" and all(a is not args[0] and a.dtype != torch.bool for a in host)
            if not index_ok:
                frames = [f for f in traceback.extract_stack()[:-1] if "/tests/" not in f.filename
                          and ("tokrag_model" in f.filename or "/tasks/" in f.filename)]
                where = f"{frames[-1].filename.rsplit('/', 2)[-2]}/{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" \
                    if frames else "?"
                self.mixes.append((name, where))
        self._set(out, DEV if DEV in tags else (HOST if tags or kwargs.get("device") is None else DEV))
        return out


PASSAGES = [("Radium", "Radium is a chemical element with symbol Ra, discovered by Marie and Pierre Curie in 1898."),
            ("Paris", "Paris is the capital and most populous city of France, on the Seine river.")]


def _doc(i: int, question: str, answer: str) -> dict:
    ctxs = [{"docid": f"d{j}", "title": t, "text": x, "score": 12.0 - j, "rank": j + 1} for j, (t, x) in enumerate(PASSAGES)]
    return {"qid": f"q{i}", "question": question, "answers": [answer], "ctxs": ctxs, "scored_by": "bm25"}


DOCS = [_doc(0, "Who discovered radium", "Marie Curie"), _doc(1, "What is the capital of France", "Paris")]
ROLLING = "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Roentgen for the discovery of X-rays."

RUNS = [("rag-none", {}), ("rag-standard", {}), ("rag-replug", {}), ("rag-selfrag-filter", {"selection": "top_m", "top_m": 1}),
        ("rag-cad", {}), ("rag-adacad", {}), ("rag-ensemble-entropy", {}), ("tokrag", {}), ("tokrag", {"layer": "dynamic"})]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 4-layer random Llama (``tiny_llama``, tied LM head) loaded as the methods' backbone, once for the module."""
    from tokrag_model.base import Backbone

    return Backbone.load(str(tiny_llama(tmp_path_factory.mktemp("tiny") / "model", layers=4, tied=True)))


@pytest.mark.parametrize("method,kwargs", RUNS, ids=[f"{m}{'-' + '-'.join(map(str, k.values())) if k else ''}" for m, k in RUNS])
def test_scoring_and_generation_keep_tensors_on_the_model_device(tiny, method, kwargs):
    from tokrag_model.methods import MODELS

    mode = DeviceTags()
    with mode:  # built inside the mode too: tensors the method makes at construction are tagged
        lm = MODELS[method].with_backbone(tiny, batch_invariant=False, batch_size=2, **kwargs)
        ll = lm.loglikelihood([Instance("loglikelihood", d, (f"Question: {d['question']}?\nAnswer:", " " + d["answers"][0]), i)
                               for i, d in enumerate(DOCS)], disable_tqdm=True)
        rolling = lm.loglikelihood_rolling([Instance("loglikelihood_rolling", DOCS[0], (ROLLING,), 0),
                                            Instance("loglikelihood_rolling", DOCS[1], (ROLLING[:48],), 1)], disable_tqdm=True)
        gen = [Instance("generate_until", d, (f"Question: {d['question']}?\nAnswer:",
                                              {"until": ["\n"], "max_gen_toks": 3, "do_sample": False}), i)
               for i, d in enumerate(DOCS)]
        out = lm.generate_until(gen, disable_tqdm=True)
    assert len(ll) == 2 and all(x[0] < 0 for x in ll)
    assert len(rolling) == 2 and all(x < 0 for x in rolling)
    assert len(out) == 2 and all(out), out  # the steps after the first ran (an answer ended at once would skip them)
    if method == "tokrag":  # a generated token was tested: the attention and hidden-state reads of that path ran
        assert any(tok[0] in ("R", "L") for r in gen for tok in r.args[-1]["tokrag_trace"]["tokens"])
    assert mode.mixes == [], f"{method}: ops mixing host-made and device tensors (fail on CUDA): {sorted(set(mode.mixes))}"


def test_the_emulated_device_check_sees_a_host_index_compared_with_device_log_probs(tiny):
    """The check itself: the comparison that crashed on the GPU (a host index against the model's log-probs)."""
    mode = DeviceTags()
    lp = tiny.model.lm_head.weight[:3, :5]  # a device tensor (a parameter's view)
    with mode:
        idx = torch.tensor([0, 1, 2])
        _ = lp[torch.arange(3), idx]  # indexing with host indices: allowed on CUDA, not recorded
        assert mode.mixes == []
        _ = lp.argmax(-1) == idx
    assert [m[0] for m in mode.mixes] == ["__eq__"]
