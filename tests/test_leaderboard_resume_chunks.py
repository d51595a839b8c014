"""A killed leaderboard cell resumes from its request journal (``leaderboards/runner.py``, ``_Journal``).

A cell journals every chunk of ``progress_chunk * batch_size`` requests as it is computed; the next attempt
replays the journaled chunks (stored responses, re-attached traces, restored random states) and computes the
rest, so a kill loses at most the chunk in progress and the finished folder is byte-identical to an
uninterrupted cell's. "Killed" here is the model's request method raising on its n-th call (what a kill does
to the journal: the chunks before are written, the one in progress is not); one test SIGKILLs a real runner
process (``pytest -m reliability``). Also: ``run --jobs N --max-cells M`` starts at most M cells in all.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from leaderboard_helpers import REPO, TOY, report_bytes, runner_cmd, subprocess_env, tiny_llama, write_spec

from leaderboards.keys import cell_keys
from leaderboards.report import build_report
from leaderboards.runner import _model_class, cell_is_done, run_spec
from leaderboards.spec import load_spec

JOURNAL = "journal.jsonl"  # leaderboards.runner.JOURNAL, spelled out: these tests must also run (and fail) on the runner before it


class _Killed(RuntimeError):
    """Raised by a request method in place of a kill."""


class _Calls:
    """Counts the calls to ``cls.name`` (the original request method the runner's chunk wrapper calls, once per
    chunk) and raises :class:`_Killed` on call number ``fail_at`` (once)."""

    def __init__(self, monkeypatch, cls, name: str) -> None:
        self.n, self.fail_at = 0, None
        orig = getattr(cls, name)

        def method(lm, requests, *args, **kw):
            self.n += 1
            if self.n == self.fail_at:
                self.fail_at = None
                raise _Killed(f"{name} killed on its call {self.n}")
            return orig(lm, requests, *args, **kw)

        monkeypatch.setattr(cls, name, method)


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Pin the provenance commit and each spec's run keys (computed once per spec file): other work may commit to
    the repository, or edit the source the keys hash, while a test kills and resumes a cell, which would move the
    resumed attempt to another run folder."""
    import leaderboards.runner

    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    frozen: dict = {}

    def keys(spec, runs=None):
        if spec.path not in frozen:
            frozen[spec.path] = cell_keys(spec)
        return frozen[spec.path]

    monkeypatch.setattr(leaderboards.runner, "cell_keys", keys)


def _cells(spec, runs: Path) -> dict[str, Path]:
    import leaderboards.runner

    return {c.cell_id: runs / k for c, k, _ in leaderboards.runner.cell_keys(spec)}


def _cost(d: Path) -> dict:
    return json.loads((d / "cost.json").read_text())


def _metrics(d: Path) -> str:
    return json.dumps(json.loads((d / "results.json").read_text())["results"], sort_keys=True)


def _samples(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("samples_*.jsonl"))}


def _journal(d: Path) -> list[dict]:
    """The journal's chunk lines (after its header line)."""
    return [json.loads(x) for x in _lines(d)]


def _lines(d: Path) -> list[str]:
    """The journal's chunk lines as text (its first line is the header)."""
    return (d / JOURNAL).read_text().splitlines()[1:]


def _rewrite(d: Path, lines: list[str]) -> None:
    """Replace the journal's chunk lines (its header line kept)."""
    header = (d / JOURNAL).read_text().splitlines()[0]
    (d / JOURNAL).write_text("\n".join([header, *lines]) + "\n")


def _assert_same_cell(a: Path, b: Path) -> None:
    """``b`` (killed and resumed) has ``a``'s (uninterrupted) samples bytes, metrics and counted cost."""
    assert _samples(a) and _samples(a) == _samples(b)
    assert _metrics(a) == _metrics(b)
    ca, cb = _cost(a), _cost(b)
    for k in ("forward_passes", "generated_tokens", "prompt_tokens", "branch_tokens", "n_samples"):
        assert ca[k] == cb[k], k
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())  # no journal left, same files
    assert set(json.loads((a / "DONE").read_text())) == set(json.loads((b / "DONE").read_text()))


# --------------------------------------------------------------------------- a real method (tiny Llama), generation and scoring

MC_TASK = """\
# The docs of tokrag_model_mini as a multiple-choice task: 2 loglikelihood requests per question.
task: tokrag_model_mini_mc
custom_dataset: !function utils.load
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{question}}?\\nAnswer:"
doc_to_choice: !function utils.choices
doc_to_target: 0
metric_list:
  - {metric: acc, aggregation: mean, higher_is_better: true}
metadata: {version: 0}
"""


def _real_spec(root: Path):
    """tokrag (traces on) over tokrag_model_mini (3 questions, generate_until, 4 new tokens) and its multiple-choice
    twin (2 questions x 2 choices: 4 loglikelihood requests), one request per chunk, on a tiny random Llama of 2
    layers (``tiny_llama``: the journal's subject is the real method's requests, traces and random states, not
    SmolLM2-135M-Instruct's answers, which made it 30 CPU-s)."""
    model = tiny_llama(root / "tiny model", layers=2)
    tasks = root / "tasks"
    shutil.copytree(REPO / "tests" / "fixtures" / "tokrag_model_task", tasks / "mini")
    (tasks / "mini" / "tokrag_model_mini_mc.yaml").write_text(MC_TASK)
    with (tasks / "mini" / "utils.py").open("a") as f:
        f.write("\n\ndef choices(doc):\n    return [doc['answers'][0], 'Paris']\n")
    return load_spec(write_spec(
        root, name="resume", include=tasks, tasks=["tokrag_model_mini", {"task": "tokrag_model_mini_mc", "limit": 2}], limit=3,
        methods=[{"name": "standard", "model": "tokrag", "model_args": {"k": 2}}],
        extra={"shared": {"model_args": {"pretrained": str(model)}, "limit": 3}, "progress_chunk": 1}))


@pytest.mark.slow
def test_a_killed_cell_resumes_from_its_journal_byte_identical_to_an_uninterrupted_one(tmp_path, monkeypatch, caplog):
    """Each cell is killed after 2 of its chunks; the next run replays those 2 (the original request method is
    not called for them), computes the rest, and writes the uninterrupted cell's samples, metrics, counted cost
    and report; ``resumed_requests`` says 2, ``wall_s`` counts the replayed chunks' seconds."""
    spec = _real_spec(tmp_path)
    cls = _model_class("tokrag")
    gen, ll = _Calls(monkeypatch, cls, "generate_until"), _Calls(monkeypatch, cls, "loglikelihood")
    run_spec(spec, tmp_path / "ref", progress=False)
    assert (gen.n, ll.n) == (3, 4)  # one call per request: 3 questions; 2 questions x 2 choices
    ref = _cells(spec, tmp_path / "ref")
    gen_cell, mc_cell = ref["standard/tokrag_model_mini/seed1"], ref["standard/tokrag_model_mini_mc/seed1"]
    assert {_cost(d)["resumed_requests"] for d in ref.values()} == {0}
    assert not list((tmp_path / "ref").glob(f"*/{JOURNAL}"))
    # not vacuous: three different answers, each to its 4-token budget (a replay that lost or swapped one shows)
    answers = [json.loads(x)["resps"][0][0] for x in _samples(gen_cell)["samples_tokrag_model_mini.jsonl"].splitlines()]
    assert len(answers) == 3 and all(answers) and len(set(answers)) == 3, answers
    assert _cost(gen_cell)["generated_tokens"] == 12

    runs = tmp_path / "runs"
    got = _cells(spec, runs)
    # 1: the generation cell dies in its third chunk; its first two are in the journal, with their traces
    gen.n, ll.n, gen.fail_at, ll.fail_at = 0, 0, 3, 3
    with pytest.raises(_Killed):
        run_spec(spec, runs, progress=False)
    d = got["standard/tokrag_model_mini/seed1"]
    lines = _journal(d)
    assert not (d / "DONE").exists() and [len(e["fingerprints"]) for e in lines] == [1, 1]
    assert {e["type"] for e in lines} == {"generate_until"} and all(e["stats"]["forward_passes"] > 0 for e in lines)
    assert all(e["appended"][0][0]["tokrag_trace"]["tokens"] for e in lines)
    # 2: it resumes (one call for its last request) and finishes; the scoring cell dies in its third chunk
    gen.n = 0
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    with pytest.raises(_Killed):
        run_spec(spec, runs, progress=False)
    assert gen.n == 1 and ll.n == 3
    assert "standard | tokrag_model_mini | seed 1: resuming, 2 of 3 requests from the journal" in caplog.text
    assert cell_is_done(d) and not (d / JOURNAL).exists()
    # 3: the scoring cell resumes: 2 calls for 4 requests
    ll.n = 0
    run_spec(spec, runs, progress=False)
    assert gen.n == 1 and ll.n == 2
    assert "standard | tokrag_model_mini_mc | seed 1: resuming, 2 of 4 requests from the journal" in caplog.text

    for ref_dir, new_dir in ((gen_cell, got["standard/tokrag_model_mini/seed1"]),
                             (mc_cell, got["standard/tokrag_model_mini_mc/seed1"])):
        _assert_same_cell(ref_dir, new_dir)
        assert _cost(new_dir)["resumed_requests"] == 2
    # the trace tokrag attached is in the samples (replayed for the first two questions)
    first = json.loads(_samples(got["standard/tokrag_model_mini/seed1"])["samples_tokrag_model_mini.jsonl"].splitlines()[0])
    assert first["arguments"][0][2]["tokrag_trace"]["method"] == "tokrag"
    assert report_bytes(build_report(spec, runs, tmp_path / "rep", timings=False)) == \
        report_bytes(build_report(spec, tmp_path / "ref", tmp_path / "rep_ref", timings=False))


# --------------------------------------------------------------------------- the toy model (fast)

def _toy(root: Path, mode: str = "first", trace: str = "tokens", limit: int = 4):
    """One ToyLM cell on toy_qa, ``limit`` questions, one request per chunk."""
    return load_spec(write_spec(root, tasks=["toy_qa"], limit=limit, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": mode, "trace": trace}}]))


def _killed_toy(root: Path, monkeypatch, fail_at: int, **kw):
    """An uninterrupted run into ``root/ref`` and a run into ``root/runs`` killed on call ``fail_at``;
    returns ``(spec, calls, reference cell folder, killed cell folder)``."""
    spec = _toy(root, **kw)
    return _reference_and_killed(spec, TOY, root, monkeypatch, fail_at)


def _reference_and_killed(spec, model: str, root: Path, monkeypatch, fail_at: int):
    """Run the one-cell ``spec`` of ``model`` uninterrupted into ``root/ref``, then into ``root/runs`` killed on its
    ``generate_until`` call ``fail_at``; returns ``(spec, calls, reference cell folder, killed cell folder)``."""
    calls = _Calls(monkeypatch, _model_class(model), "generate_until")
    run_spec(spec, root / "ref", progress=False)
    calls.n, calls.fail_at = 0, fail_at
    with pytest.raises(_Killed):
        run_spec(spec, root / "runs", progress=False)
    calls.n = 0
    (cell_id,) = [c.cell_id for c in spec.cells()]
    return spec, calls, _cells(spec, root / "ref")[cell_id], _cells(spec, root / "runs")[cell_id]


def test_a_sampling_model_resumes_with_the_random_state_it_had(tmp_path, monkeypatch):
    """ToyLM ``mode=sample`` draws from Python's ``random`` (seeded by lm-eval): the journal records the random
    states after each chunk, so the live chunks after a replay draw what the uninterrupted run drew."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 6, mode="sample", trace="", limit=8)
    assert len(_journal(got)) == 5 and all(e["rng"] for e in _journal(got))
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 3 and _cost(got)["resumed_requests"] == 5
    _assert_same_cell(ref, got)
    answers = {json.loads(x)["resps"][0][0] for x in next(iter(_samples(got).values())).splitlines()}
    assert len(answers) > 1  # it did sample


def test_a_journal_line_whose_fingerprint_differs_is_not_replayed_from_there(tmp_path, monkeypatch, caplog):
    """A request that differs from the journal's (here: its second line's fingerprint edited) cuts the journal
    there: the first chunk is replayed, the second on are computed and journaled again."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    lines = _lines(got)
    assert len(lines) == 3
    second = json.loads(lines[1])
    second["fingerprints"] = ["0" * 64]
    _rewrite(got, [lines[0], json.dumps(second), lines[2]])
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 3 and _cost(got)["resumed_requests"] == 1
    assert "resuming, 1 of 4 requests from the journal" in caplog.text
    assert "the journal differs from its request 2 on" in caplog.text
    _assert_same_cell(ref, got)


def test_a_torn_last_line_is_ignored(tmp_path, monkeypatch):
    """A kill while a line was written leaves part of it: the complete lines before it are replayed."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    whole = (got / JOURNAL).read_text()
    with (got / JOURNAL).open("a") as f:
        f.write(whole.splitlines()[1][:57])  # a third of a line, no newline
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 1 and _cost(got)["resumed_requests"] == 3
    _assert_same_cell(ref, got)


def test_an_unreadable_line_cuts_the_journal_there(tmp_path, monkeypatch):
    """A line that is not a journal entry (here: JSON of another shape) and everything after it are dropped."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    lines = _lines(got)
    _rewrite(got, [lines[0], '{"schema": 2}', lines[2]])
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 3 and _cost(got)["resumed_requests"] == 1
    _assert_same_cell(ref, got)


def test_a_folder_of_another_configuration_is_redone_not_resumed(tmp_path, monkeypatch):
    """The journal is used only when the folder's config.json has the cell's key and material."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    cfg = json.loads((got / "config.json").read_text())
    cfg["limit"] = 3
    (got / "config.json").write_text(json.dumps(cfg))
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 4 and _cost(got)["resumed_requests"] == 0
    _assert_same_cell(ref, got)


@pytest.mark.parametrize("damage", ["cut", "empty"])
def test_an_unreadable_config_json_discards_the_journal_with_a_warning(tmp_path, monkeypatch, caplog, damage):
    """s50 b2 D5: a config.json cut in half or emptied beside a journal of 3 requests: the cell was recomputed from
    the start without a word (a torn journal header gets a WARNING). Now one WARNING names the file and says the
    journal is not replayed; the cell is still recomputed, equal to the uninterrupted one."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    text = (got / "config.json").read_text()
    (got / "config.json").write_text(text[:len(text) // 2] if damage == "cut" else "")
    caplog.set_level(logging.WARNING, logger="leaderboards.runner")
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 4 and _cost(got)["resumed_requests"] == 0
    (cell,) = spec.cells()
    warned = [r.getMessage() for r in caplog.records if "config.json" in r.getMessage()]
    assert len(warned) == 1, caplog.text
    assert warned[0].startswith(f"{cell.label}: {got / 'config.json'} is unreadable (")
    assert warned[0].endswith(f"); the request journal {got / JOURNAL} is not replayed (discarded), the cell is computed "
                              "from the start")
    _assert_same_cell(ref, got)


def test_cost_adds_the_replayed_chunks_to_the_live_ones(tmp_path, monkeypatch):
    """forward passes and tokens: the journal's deltas of the replayed chunks + the live ones; wall_s: this
    attempt's seconds + the replayed chunks' seconds (at least what the journal recorded for them); model_s too."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 3, limit=4)
    lines = _journal(got)
    assert [e["stats"]["forward_passes"] for e in lines] == [1 + len(e["responses"][0].split()) for e in lines]
    journaled_s = sum(e["wall_s"] for e in lines)
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 2
    cost = _cost(got)
    assert cost["resumed_requests"] == 2 and cost["forward_passes"] == _cost(ref)["forward_passes"]
    assert cost["wall_s"] >= round(journaled_s, 3)
    assert round(journaled_s, 3) <= cost["model_s"] <= cost["wall_s"]  # the replayed chunks' seconds are model time


@pytest.mark.reliability
def test_a_sigkilled_runner_loses_at_most_the_chunk_in_progress(tmp_path):
    """A real runner process (``python -m leaderboards.cli run``) is SIGKILLed once its cell has journaled 3 chunks;
    the next run replays at least those 3 and writes the uninterrupted cell's samples, metrics and counts."""
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=12, delay=0.3, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "sample", "trace": "tokens"}}])
    spec = load_spec(spec_path)
    (got,) = _cells(spec, tmp_path / "runs").values()
    proc = subprocess.Popen(runner_cmd(spec_path, tmp_path / "runs"), env=subprocess_env(tmp_path / "cache"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while not ((got / JOURNAL).is_file() and (got / JOURNAL).read_bytes().count(b"\n") >= 1 + 3):  # header + 3
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the runner journaled nothing in 300 s"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert not (got / "DONE").exists()
    journaled = (got / JOURNAL).read_bytes().count(b"\n") - 1
    assert 3 <= journaled < 12
    run_spec(spec, tmp_path / "runs", progress=False)
    assert _cost(got)["resumed_requests"] == journaled
    run_spec(spec, tmp_path / "ref", progress=False)
    (ref,) = _cells(spec, tmp_path / "ref").values()
    _assert_same_cell(ref, got)


# --------------------------------------------------------------------------- --max-cells with --jobs

def test_max_cells_counts_the_cells_of_every_jobs_process(tmp_path, monkeypatch):
    """``run --jobs 2 --max-cells 2`` runs 2 cells in all: the helper process used to get no --max-cells and
    ran every cell the main process left."""
    spec = load_spec(write_spec(tmp_path))  # 2 methods x 2 tasks
    monkeypatch.setenv("PYTHONPATH", subprocess_env(tmp_path / "cache")["PYTHONPATH"])
    summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=2, max_cells=2)
    done = [c for c, d in _cells(spec, tmp_path / "runs").items() if cell_is_done(d)]
    assert len(done) == 2 and set(summary.ran) <= set(done)
    assert not list(Path(tmp_path / "runs").glob(f"*/{JOURNAL}"))
    rest = run_spec(spec, tmp_path / "runs", progress=False, max_cells=1)  # one process: as before
    assert len(rest.ran) == 1 and sorted(rest.skipped) == sorted(done)


# --------------------------------------------------------------------------- what must not be replayed

TOYS = '''
"""ToyLM variants for tests/test_leaderboard_resume_chunks.py."""
import random

from tests.leaderboard_fixtures.toy_lm import ToyLM


class InstanceRngToy(ToyLM):
    """mode=sample drawn from a generator the model owns (an engine seeded once, like vLLM's seed=): its
    answers depend on the requests it saw before, so it says so."""
    JOURNAL_REPLAY_SAFE = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._rng = random.Random(1234)

    def _answer(self, doc):
        return super()._answer(doc) if self._rng.random() < 0.5 else "I do not know"


class MutatingToy(ToyLM):
    """Pops 'until' from each request's gen_kwargs in place (as lm-eval's anthropic payload builder does)."""

    def generate_until(self, requests, disable_tqdm=False):
        out = super().generate_until(requests, disable_tqdm)
        for req in requests:
            req.args[1].pop("until", None)
        return out
'''


@pytest.fixture(scope="module")
def toys(tmp_path_factory):
    """The module ``lb_resume_toys`` (:data:`TOYS`) importable, for ``model: lb_resume_toys:<class>``."""
    import sys

    folder = tmp_path_factory.mktemp("toys")
    (folder / "lb_resume_toys.py").write_text(TOYS)
    sys.path.insert(0, str(folder))
    yield "lb_resume_toys"
    sys.path.remove(str(folder))
    sys.modules.pop("lb_resume_toys", None)


def _killed(root: Path, monkeypatch, model: str, fail_at: int, limit: int = 8, mode: str = "first"):
    """As :func:`_killed_toy`, for the model class ``model``."""
    spec = load_spec(write_spec(root, tasks=["toy_qa"], limit=limit, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": model, "model_args": {"mode": mode, "trace": "tokens"}}]))
    return _reference_and_killed(spec, model, root, monkeypatch, fail_at)


def test_a_model_that_keeps_its_own_state_is_redone_not_replayed(tmp_path, monkeypatch, caplog, toys):
    """A model whose answers depend on the requests it saw (its own random.Random) would answer the live requests
    after a replay differently (it never saw the replayed ones): a class without ``JOURNAL_REPLAY_SAFE = True`` keeps
    no journal and its interrupted cell is redone from the start, with an INFO line saying why."""
    spec, calls, ref, got = _killed(tmp_path, monkeypatch, f"{toys}:InstanceRngToy", 6)
    journaled = (got / JOURNAL).exists()
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    run_spec(spec, tmp_path / "runs", progress=False)
    _assert_same_cell(ref, got)  # the replay gave other answers
    assert not journaled and calls.n == 8 and _cost(got)["resumed_requests"] == 0
    assert (f"the interrupted attempt's folder is deleted and the cell redone from the start: model class "
            f"{toys}.InstanceRngToy does not declare JOURNAL_REPLAY_SAFE = True") in caplog.text


def test_which_model_classes_declare_replay_safe():
    """tokrag's methods (their base class) and the toy model do, rag-selfrag-filter included (its critic cache is
    keyed on the doc's whole passage list: tests/test_method_selfrag_filter.py); lm-eval's own models do not."""
    from leaderboards.runner import replay_safe

    def safe(name: str) -> bool:
        return replay_safe(object.__new__(_model_class(name)))

    assert safe(TOY) and safe("tokrag") and safe("rag-standard") and safe("rag-selfrag-filter")
    assert not safe("hf")


@pytest.mark.parametrize("what", ["versions", "resolved_config", "machine"])
def test_a_journal_written_in_another_environment_is_discarded(tmp_path, monkeypatch, caplog, what):
    """The journal's header records what outputs depend on beyond the key (library versions, the device the model
    resolved to, the machine): a journal written under another is discarded with a WARNING naming what differed."""
    import leaderboards.runner as runner

    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    if what == "versions":
        versions = runner.library_versions()
        monkeypatch.setattr(runner, "library_versions", lambda: {**versions, "torch": "9.9.9"})
        said = "versions: torch"
    elif what == "resolved_config":
        cls = _model_class(TOY)
        init = cls.__init__

        def on_gpu(self, *a, **kw):
            init(self, *a, **kw)
            self.resolved_config = {**self.resolved_config, "device": "cuda:1"}

        monkeypatch.setattr(cls, "__init__", on_gpu)
        said = "resolved_config: device None -> 'cuda:1'"
    else:
        monkeypatch.setattr(runner, "_machine", lambda device=None: {"arch": "riscv64"}, raising=False)
        said = "machine: arch"
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 4 and _cost(got)["resumed_requests"] == 0
    assert "the journal was written in another environment (" + said in caplog.text
    _assert_same_cell(ref, got)


def test_provenance_lists_every_attempt_and_no_resume_redoes_the_cell(tmp_path, monkeypatch, caplog):
    """provenance.json ``attempts``: each attempt's start, commit, versions digest, the requests journaled when it
    started and (the last) how many it replayed. ``run --no-resume`` deletes an interrupted cell's journal."""
    from leaderboards.cli import main

    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    run_spec(spec, tmp_path / "runs", progress=False)
    attempts = json.loads((got / "provenance.json").read_text())["attempts"]
    assert [a["journaled_requests"] for a in attempts] == [0, 3] and attempts[-1]["resumed_requests"] == 3
    assert {a["git_commit"] for a in attempts} == {"test-commit"} and len({a["versions_sha256"] for a in attempts}) == 1
    assert [len(json.loads((ref / "provenance.json").read_text())["attempts"])] == [1]

    _, calls, _, got = _killed_toy(tmp_path / "again", monkeypatch, 4)
    assert len(_journal(got)) == 3
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    assert main(["run", str(spec.path).replace(str(tmp_path), str(tmp_path / "again")), "--runs-dir",
                 str(tmp_path / "again" / "runs"), "--no-progress", "--no-resume"]) == 0
    assert calls.n == 4 and _cost(got)["resumed_requests"] == 0
    assert "the cell redone from the start: run --no-resume" in caplog.text


def test_a_model_that_edits_a_requests_arguments_in_place_is_not_journaled(tmp_path, monkeypatch, caplog, toys):
    """``gen_kwargs.pop("until")`` on the request's own dict: the journal compared the arguments before and after the
    call through references to the same dicts and journaled the chunk; a replay then left "until" in the samples'
    arguments. Now the arguments are compared as JSON text taken before the call: the journal stops there."""
    caplog.set_level(logging.WARNING, logger="leaderboards.runner")
    spec, calls, ref, got = _killed(tmp_path, monkeypatch, f"{toys}:MutatingToy", 3)
    run_spec(spec, tmp_path / "runs", progress=False)
    _assert_same_cell(ref, got)  # the replayed samples kept "until"
    assert "a request whose arguments the model changed cannot be journaled; the journal stops here" in caplog.text
    assert calls.n == 8 and _cost(got)["resumed_requests"] == 0


# --------------------------------------------------------------------------- kill windows

def test_a_kill_before_DONE_keeps_the_journal_and_a_leftover_journal_after_DONE_is_ignored(tmp_path, monkeypatch):
    """The journal was deleted before DONE was written: a kill in between lost the whole cell. Now DONE comes first;
    a journal left in a finished folder (a kill right after DONE) is ignored."""
    import leaderboards.runner as runner
    from leaderboards.runner import load_cell

    spec = _toy(tmp_path)
    calls = _Calls(monkeypatch, _model_class(TOY), "generate_until")
    run_spec(spec, tmp_path / "ref", progress=False)
    write = runner.atomic_write_json

    def killed_at_done(path, obj, *a, **kw):
        if Path(path).name == "DONE":
            raise _Killed("killed before DONE")
        return write(path, obj, *a, **kw)

    monkeypatch.setattr(runner, "atomic_write_json", killed_at_done)
    with pytest.raises(_Killed):
        run_spec(spec, tmp_path / "runs", progress=False)
    monkeypatch.setattr(runner, "atomic_write_json", write)
    (ref,), (got,) = _cells(spec, tmp_path / "ref").values(), _cells(spec, tmp_path / "runs").values()
    assert len(_journal(got)) == 4
    calls.n = 0
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 0 and _cost(got)["resumed_requests"] == 4
    _assert_same_cell(ref, got)

    (got / JOURNAL).write_text('{"schema": 2}\n')  # what a kill between DONE and the journal's deletion leaves
    assert cell_is_done(got) and load_cell(got)["cost"]["resumed_requests"] == 4
    assert run_spec(spec, tmp_path / "runs", progress=False).skipped == [c.cell_id for c in spec.cells()]


def test_a_kill_while_an_earlier_attempts_files_are_deleted_leaves_the_folder_resumable(tmp_path, monkeypatch):
    """The clean-up of a resumed folder deleted config.json with the rest: a kill right after made the folder
    unresumable (the whole cell redone). config.json is no longer deleted there (it is rewritten atomically)."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    unlink = Path.unlink

    def killed_after_config(self, *a, **kw):
        unlink(self, *a, **kw)
        if self.name == "config.json":
            raise _Killed("killed after deleting config.json")

    monkeypatch.setattr(Path, "unlink", killed_after_config)
    try:
        run_spec(spec, tmp_path / "runs", progress=False)
    except _Killed:
        pass
    monkeypatch.setattr(Path, "unlink", unlink)
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls.n == 1 and _cost(got)["resumed_requests"] == 3
    _assert_same_cell(ref, got)


def test_the_run_summary_counts_live_forward_passes_and_replayed_requests_apart(tmp_path, monkeypatch):
    """``forward_passes`` in the summary counted the journal's replayed chunks as if computed."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    replayed_passes = sum(e["stats"]["forward_passes"] for e in _journal(got))
    summary = run_spec(spec, tmp_path / "runs", progress=False)
    assert summary.replayed_requests == 3 and summary.as_dict()["replayed_requests"] == 3
    assert summary.forward_passes == _cost(got)["forward_passes"] - replayed_passes > 0


def test_a_changed_chunk_size_is_named_in_the_log(tmp_path, monkeypatch, caplog):
    """The log line said "(another request)" whatever differed; it says what did."""
    spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
    bigger = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 2}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first", "trace": "tokens"}}]))
    assert bigger.path == spec.path and _cells(bigger, tmp_path / "runs") == _cells(spec, tmp_path / "runs")  # pinned
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    run_spec(bigger, tmp_path / "runs", progress=False)
    assert ("the journal differs from its request 1 on (the journal's chunk has 1 requests, this one 2: another "
            "progress_chunk or batch_size)") in caplog.text


# --------------------------------------------------------------------------- the --max-cells folder of --jobs

def test_the_shared_max_cells_folder_is_a_helper_option_not_an_environment_variable(tmp_path, monkeypatch):
    """Any run obeyed ``$TOKRAG_LEADERBOARD_CELL_BUDGET`` (every claim used: rc 0, nothing run, no word); the
    helpers now get the folder as the hidden option ``--cell-budget-dir``, and a missing folder is an error."""
    from retrieval.errors import ConfigError

    spec = _toy(tmp_path)
    used = tmp_path / "budget"
    used.mkdir()
    (used / "limit").write_text("1")
    (used / "claim-0").touch()
    monkeypatch.setenv("TOKRAG_LEADERBOARD_CELL_BUDGET", str(used))
    assert len(run_spec(spec, tmp_path / "runs", progress=False).ran) == 1
    with pytest.raises(ConfigError, match=r"^run --cell-budget-dir .*missing: not the shared --max-cells folder"):
        run_spec(spec, tmp_path / "runs2", progress=False, cell_budget_dir=tmp_path / "missing")


def test_the_max_cells_folder_lives_in_the_runs_folder_and_dead_runs_ones_are_removed(tmp_path, monkeypatch):
    """It was made in /tmp before the try: a killed main process or a helper that failed to start left it there.
    Now it is ``<runs>/.max-cells-<host>-<pid>-<random>``, removed at the end, and a run removes this host's whose
    process is dead; another host's (a runs folder shared over NFS) are never touched."""
    import socket

    host = socket.gethostname()
    spec = load_spec(write_spec(tmp_path))  # 2 methods x 2 tasks
    monkeypatch.setenv("PYTHONPATH", subprocess_env(tmp_path / "cache")["PYTHONPATH"])
    runs = tmp_path / "runs"
    runs.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale, alive = runs / f".max-cells-{host}-{gone.pid}-00ff00ff", runs / f".max-cells-{host}-{os.getppid()}-0a0b0c0d"
    elsewhere = runs / f".max-cells-other-host-{gone.pid}-01020304"  # its pid means nothing here
    for d in (stale, alive, elsewhere):
        d.mkdir()
        (d / "limit").write_text("1")
    cmds = []
    popen = subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda cmd, *a, **kw: cmds.append(cmd) or popen(cmd, *a, **kw))
    run_spec(spec, runs, progress=False, jobs=2, max_cells=2)
    (helper,) = [c for c in cmds if "leaderboards.cli" in c]
    used = Path(helper[helper.index("--cell-budget-dir") + 1])
    assert used.parent == runs and re.fullmatch(rf"\.max-cells-{re.escape(host)}-{os.getpid()}-[0-9a-f]{{8}}", used.name)
    assert sorted(p.name for p in runs.glob(".max-cells-*")) == sorted([alive.name, elsewhere.name])


def test_a_max_cells_folder_removed_under_a_process_means_no_more_cells(tmp_path, caplog):
    """A helper whose shared folder was removed (its main process died and a clean-up ran) starts no more cells
    and says why, instead of a FileNotFoundError traceback."""
    from leaderboards.runner import _CellBudget

    folder = tmp_path / "budget"
    folder.mkdir()
    (folder / "limit").write_text("2")
    budget = _CellBudget.shared(folder)
    assert budget.take() is True
    shutil.rmtree(folder)
    caplog.set_level(logging.WARNING, logger="leaderboards.runner")
    assert budget.take() is False
    assert "is gone; this process starts no more cells" in caplog.text


def test_the_journal_header_names_gpus_only_for_a_model_on_cuda(monkeypatch):
    """The header's machine comes from the model's device, not from whether the process initialised CUDA: a CPU cell
    run after a GPU cell in one process gave another header than the same cell run first, and never resumed."""
    import torch

    from leaderboards import runner

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)  # a GPU cell ran earlier in this process
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H200")
    assert "cuda" not in runner._machine("cpu") and "cuda" not in runner._machine(None)
    assert runner._machine("cuda:0")["cuda"] == ["NVIDIA H200"]


def test_a_cell_resumed_under_another_thread_count_recomputes_its_chunks(tmp_path, monkeypatch, caplog):
    """On CPU a forward pass's bits depend on torch's thread count (0870fe6): a cell killed at 1 thread and resumed
    at 2 must not combine chunks of both. The journal header's machine holds the thread count (the model's at load,
    else ``torch.get_num_threads()``), so the resumed attempt discards the journal with a WARNING naming it; at the
    same thread count it still resumes."""
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        spec, calls, ref, got = _killed_toy(tmp_path, monkeypatch, 4)
        assert len(_journal(got)) == 3
        torch.set_num_threads(2)
        caplog.set_level(logging.INFO, logger="leaderboards.runner")
        run_spec(spec, tmp_path / "runs", progress=False)
    finally:
        torch.set_num_threads(threads)
    assert calls.n == 4 and _cost(got)["resumed_requests"] == 0
    assert "the journal was written in another environment (machine: torch_num_threads 1 -> 2)" in caplog.text
    _assert_same_cell(ref, got)


def test_the_journal_header_takes_the_thread_count_the_model_recorded_at_load():
    """A model that recorded its thread count at load (``lm.machine``, tokrag's methods) is journaled under that
    count, not the process' count now; one that recorded none under ``torch.get_num_threads()``."""
    from types import SimpleNamespace

    import torch

    from leaderboards.runner import _journal_header

    cpu = {"device": "cpu"}
    loaded = SimpleNamespace(fingerprint="f", resolved_config=cpu, machine={"torch_num_threads": 3})
    assert _journal_header("k", loaded)["machine"]["torch_num_threads"] == 3
    bare = SimpleNamespace(fingerprint="f", resolved_config=cpu)
    assert _journal_header("k", bare)["machine"]["torch_num_threads"] == torch.get_num_threads()
