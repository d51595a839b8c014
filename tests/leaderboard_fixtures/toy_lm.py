"""A tiny deterministic lm-eval model for the leaderboard tests (no weights, no torch).

``ToyLM`` answers from the retrieved passages the way a RAG method would, so that methods,
noise levels and seeds give different (but exactly reproducible) numbers:

* ``mode=first``: the answer phrase of the first passage (``... is ANSWER.``) among the first ``k``;
* ``mode=vote``: the most frequent answer phrase among the first ``k`` passages (ties: first seen);
* ``mode=none``: a fixed wrong guess (no retrieval);
* ``mode=sample``: ``first`` with probability 0.5 else ``none``, drawn from Python's ``random``
  (seeded by lm-eval from the cell's seed).

It counts ``stats`` like the real models (``forward_passes`` = prompt pass + one per generated word,
``generated_tokens`` = words, ``prompt_tokens`` = words of the prompt), exposes ``reset_stats()``,
``fingerprint`` (SHA-256 of the ``pretrained`` file) and ``resolved_config``; ``delay`` (seconds per
request) makes it slow enough for kill-and-resume tests; ``fail_on`` (a qid) raises inside the cell. The environment
variable ``TOYLM_HOLD`` (a file path; not a model argument, so no run key changes when the file appears) makes every
request after the process's first wait (up to 120 s) until that file exists: a test holds two runner processes inside
their cells whatever the machine's load. A process that starts to wait creates ``<TOYLM_HOLD>.waiting-<pid>`` first.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import re
import time
from collections import Counter
from pathlib import Path

from lm_eval.api.model import LM

_ANS = re.compile(r"\bis ([^.]+)\.")


class ToyLM(LM):
    JOURNAL_REPLAY_SAFE = True  # its answers depend on the request and Python's global random only

    def __init__(self, pretrained: str | None = None, mode: str = "first", k: int = 3, delay: float = 0.0,
                 fail_on: str | None = None, trace: str = "", batch_size: int | str = 1, device: str | None = None,
                 **_: object) -> None:
        super().__init__()
        if mode not in {"first", "vote", "none", "sample"}:
            raise ValueError(f"ToyLM: unknown mode {mode!r}")
        if trace not in {"", "tokens", "tokens4", "weights", "critic"}:
            raise ValueError(f"ToyLM: unknown trace {trace!r}")
        self.trace = trace
        self.mode, self.k, self.delay, self.fail_on = mode, int(k), float(delay), fail_on
        hold = os.environ.get("TOYLM_HOLD")
        self.hold, self._answered = Path(hold) if hold else None, 0
        self.fingerprint = hashlib.sha256(Path(pretrained).read_bytes()).hexdigest()[:16] if pretrained else "none"
        self.resolved_config = {"pretrained": pretrained, "mode": mode, "k": int(k), "batch_size": int(batch_size)}
        self.reset_stats()

    def reset_stats(self) -> None:
        self.stats = {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}

    def _answer(self, doc: dict) -> str:
        if self.fail_on is not None and doc.get("qid") == self.fail_on:
            raise RuntimeError(f"ToyLM: asked to fail on {self.fail_on}")
        phrases = [m.group(1) for c in (doc.get("ctxs") or [])[: self.k] if (m := _ANS.search(c["text"]))]
        mode = self.mode
        if mode == "sample":
            mode = "first" if random.random() < 0.5 else "none"
        if mode == "none" or not phrases:
            return "I do not know"
        if mode == "first":
            return phrases[0]
        return Counter(phrases).most_common(1)[0][0] if len(set(phrases)) < len(phrases) else phrases[0]

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        for req in requests:
            context, gen_kwargs = req.args
            if self.delay:
                time.sleep(self.delay)
            if self.hold is not None and self._answered:
                if not self.hold.exists():  # says it waits: a test can tell which processes are held
                    self.hold.with_name(f"{self.hold.name}.waiting-{os.getpid()}").touch()
                deadline = time.monotonic() + 120
                while not self.hold.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            self._answered += 1
            ans = self._answer(req.doc)
            words = ans.split()[: int(gen_kwargs.get("max_gen_toks", 256))]
            if self.trace:
                req.arguments = (*req.args, {"tokrag_trace": self._trace(req.doc, words)})
            self.stats["prompt_tokens"] += len(context.split())
            self.stats["generated_tokens"] += len(words)
            self.stats["forward_passes"] += 1 + len(words)
            out.append(" ".join(words))
        return out

    def _trace(self, doc: dict, words: list[str]) -> dict:
        """A deterministic trace of the kind the real methods log (see the module docstring)."""
        ctxs = (doc.get("ctxs") or [])[: self.k]
        if self.trace in ("tokens", "tokens4"):
            text = " ".join(c["text"] for c in ctxs)
            toks = []
            for i, w in enumerate(words):
                b = "R" if w in text else "L"
                t = [b, round(0.9 - 0.1 * i, 4), round(0.5 + 0.1 * i, 4), 12]
                toks.append(t + [w if i == 0 else " " + w] if self.trace == "tokens" else t)
            return {"method": "toy", "tokens": toks}
        if self.trace == "weights":  # weights 1/2, 1/3, 1/6 over the first three passages
            w = [1 / 2, 1 / 3, 1 / 6][: len(ctxs)]
            return {"method": "toy", "weights": w, "top1_weight": max(w), "weight_entropy": -sum(x * math.log(x) for x in w)}
        gold = set(doc.get("gold_docids") or [])
        kept = [c for c in ctxs if c["docid"] in gold]
        return {"method": "toy", "kept_rate": len(kept) / len(ctxs), "critic_auc": 1.0 if 0 < len(kept) < len(ctxs) else None}

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("ToyLM only generates")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        """-2 nats per whitespace word (``mode=none``: -3): word perplexity e^2 (e^3), hand-checkable."""
        per_word = 3.0 if self.mode == "none" else 2.0
        out = []
        for req in requests:
            (text,) = req.args
            n = len(text.split())
            self.stats["prompt_tokens"] += n
            self.stats["forward_passes"] += 1
            out.append(-per_word * n)
        return out
