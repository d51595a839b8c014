"""Shared helpers of the leaderboard tests: toy specs written into a temporary folder."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "leaderboard_fixtures"
TOY = "tests.leaderboard_fixtures.toy_lm:ToyLM"


def write_spec(folder: Path, *, name: str = "toy", methods: list[dict] | None = None, tasks=None, limit: int = 12,
               seeds=(1,), delay: float = 0.0, weights: Path | None = None, include: Path | None = None,
               extra: dict | None = None) -> Path:
    """A toy spec: ToyLM methods on toy_qa (+ its 67% noise variant)."""
    folder.mkdir(parents=True, exist_ok=True)
    methods = methods or [
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
    ]
    shared = {"model_args": {"pretrained": str(weights or FIX / "toy_weights.bin"), "k": 3},
              "gen_kwargs": {"max_gen_toks": 8}, "limit": limit}
    if delay:
        shared["model_args"]["delay"] = delay
    spec = {"name": name, "include_path": str(include or FIX / "tasks"), "reference": "standard", "shared": shared,
            "tasks": tasks or ["toy_qa", "toy_qa_noise67"], "seeds": list(seeds), "methods": methods,
            "bootstrap": {"iters": 500, "seed": 7}}
    spec.update(extra or {})
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def run_toy_spec(root: Path, **spec_kw):
    """Write the toy spec (:func:`write_spec` with ``spec_kw``) into ``root`` and run every cell into
    ``root/runs``; returns ``(spec, runs_dir)``. Module-scoped fixtures call it once and tests copy the runs."""
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    spec = load_spec(write_spec(root, **spec_kw))
    run_spec(spec, root / "runs", progress=False)
    return spec, root / "runs"


def finished_toy_runs(root: Path, *, tasks: list[str], limit: int, methods: list[dict] | None = None) -> Path:
    """Copy the fixture tasks into ``root/tasks`` (a test may edit its copy) and run the toy spec over ``tasks`` from
    there (:func:`write_spec` into ``root/s``) into ``root/runs``; returns ``root``. For module-scoped fixtures;
    tests take a copy with :func:`copy_toy_runs`."""
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    shutil.copytree(FIX / "tasks", root / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    spec = load_spec(write_spec(root / "s", include=root / "tasks", tasks=tasks, limit=limit, methods=methods))
    run_spec(spec, root / "runs", progress=False)
    return root


def copy_toy_runs(finished: Path, tmp_path: Path, *, tasks: list[str], limit: int,
                  methods: list[dict] | None = None) -> tuple[Path, Path]:
    """Copy the tasks and runs of :func:`finished_toy_runs` into ``tmp_path`` and write the same spec there, over the
    copied tasks; returns ``(spec path, runs folder)``."""
    shutil.copytree(finished / "tasks", tmp_path / "tasks")
    shutil.copytree(finished / "runs", tmp_path / "runs")
    spec = write_spec(tmp_path / "s", include=tmp_path / "tasks", tasks=tasks, limit=limit, methods=methods)
    return spec, tmp_path / "runs"


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old``, which the file must contain (asserted), by ``new`` in ``path``."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def rescore_cli(spec: Path, runs: Path, out: Path, *more: str) -> int:
    """``tokrag leaderboard rescore SPEC --runs-dir RUNS --out OUT ...`` in this process; its exit code."""
    from leaderboards.cli import main as lb_main

    return lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--out", str(out), *more])


SEED_METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
                {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
                {"name": "sample", "model": TOY, "model_args": {"mode": "sample"}}]


def run_two_seed_spec(root: Path, monkeypatch, frozen: dict | None = None):
    """The toy spec with :data:`SEED_METHODS` (``sample`` differs between seeds) over seeds 1 and 2, closed book
    ``none``, references ``standard`` and ``none``, run once with the run keys pinned on ``monkeypatch`` (other work
    may edit the source they hash; keep it active while the tests read the runs, or pin the same ``frozen`` keys
    again: :func:`pin_cell_keys`); returns ``(spec, runs_dir)``. The session's ``two_seed_runs`` fixture
    (tests/conftest.py) runs it once per process for the modules that read it."""
    pin_cell_keys(monkeypatch, frozen=frozen)
    return run_toy_spec(root, methods=SEED_METHODS, seeds=(1, 2),
                        extra={"closed_book": "none", "reference": ["standard", "none"]})


def subprocess_env(cache: Path) -> dict[str, str]:
    """Environment of a runner subprocess: repo importable, shared cache, one thread."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TOKRAG_CACHE_DIR"] = str(cache)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def runner_cmd(spec: Path, runs: Path, *extra: str) -> list[str]:
    """``python -m leaderboards.cli run SPEC --runs-dir RUNS --no-progress ...``."""
    return [sys.executable, "-m", "leaderboards.cli", "run", str(spec), "--runs-dir", str(runs), "--no-progress", *extra]


def report_bytes(out: Path) -> dict[str, bytes]:
    """Every file of a report folder, by name."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def child_pids(pid: int) -> list[int]:
    """Child pids of ``pid`` (Linux: /proc/<pid>/task/<tid>/children)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def pin_cell_keys(monkeypatch, modules=None, frozen: dict | None = None) -> None:
    """Compute each spec's run keys once per spec file and selection (other work may edit the source the keys hash
    meanwhile) and pin the git commit recorded, for ``modules`` (default: leaderboards.runner, .report, .rescore).
    ``frozen``: the table of keys computed so far (filled here; pass an earlier call's to pin the same keys again)."""
    import leaderboards.report
    import leaderboards.rescore
    import leaderboards.runner
    from leaderboards.keys import cell_keys

    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    frozen = {} if frozen is None else frozen

    def keys(spec, runs=None):
        at = (spec.path, tuple(sorted(spec.selection.items())), str(runs))  # a selection has its own cells
        if at not in frozen:
            frozen[at] = cell_keys(spec, runs)
        return frozen[at]

    for module in modules or (leaderboards.runner, leaderboards.report, leaderboards.rescore):
        monkeypatch.setattr(module, "cell_keys", keys)


def runs_without(runs: Path, dest: Path, *cells: str) -> Path:
    """A copy of ``runs`` in which ``cells`` (cell ids) are unfinished (no DONE)."""
    import json
    import shutil

    shutil.copytree(runs, dest, ignore=shutil.ignore_patterns("*.lock"))
    for done in dest.glob("*/DONE"):
        if json.loads(done.read_text())["cell_id"] in cells:
            done.unlink()
    return dest


def reverse_fewshot_pool(monkeypatch) -> None:
    """Task code whose few-shot pool changed (tasks.data.load_qa_split gives the ``fewshot`` split reversed) while the
    docs did not: the rescore tests' "earlier task code built other prompts"."""
    import tasks.data

    load = tasks.data.load_qa_split

    def other_pool(dataset, split, *a, **k):
        rows = load(dataset, split, *a, **k)
        return rows[::-1] if split == "fewshot" else rows

    monkeypatch.setattr(tasks.data, "load_qa_split", other_pool)


def tiny_llama(folder: Path, *, context: int = 8192, layers: int = 1, tied: bool = False) -> Path:
    """A random Llama (``layers`` layers, hidden size 16, ``context`` positions, weights drawn with std 0.2 from seed
    0) with a byte-level tokenizer (one token per UTF-8 byte, no merges; ``<s>``/``</s>`` its BOS/EOS), saved to
    ``folder``: a real model folder for the tokrag methods that loads and generates in a moment, for tests whose
    subject is a cell's records, journal or key rather than SmolLM2's answers. ``tied``: the LM head is the input
    embedding, as SmolLM2's. Returns ``folder``; the same files (bytes) on every call.

    The std is 0.2, not Llama's 0.02: at 0.02 attention is near uniform and every prompt's greedy next byte was
    ``\n``, so each generation of a ``until: ["\n"]`` task ended at once with ``''`` and Tok-RAG's two branches
    agreed at every step (its test, attention and hidden-state reads never ran while generating). At 0.2 the
    generations of different questions differ, run to their token budget, and Tok-RAG tests (and emits) both
    branches' tokens (tests/test_s60_r5_tiny_llama.py). The seed is drawn in a forked torch random state: the
    caller's is left as it was."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(["<unk>", "<s>", "</s>", *sorted(byte_chars)])}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>").save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=context,
                         bos_token_id=1, eos_token_id=2, tie_word_embeddings=tied, initializer_range=0.2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(folder)
    return folder
