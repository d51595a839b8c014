"""Review of s56 f3 (0cdf5f5, 193a50a): the benchmarks' ``provenance`` records the tokrag checkout the run *started*
with, not the one found when its last line is printed. A reference run takes about an hour and tokrag_analysis hours;
a commit or an edit of the checkout meanwhile was recorded as if it had produced the figures. Now each script takes
:func:`benchmarks._cli.checkout` as it starts; when the checkout is another one at the end, the line records both
(``tokrag_commit`` / ``tokrag_changes`` of the start, ``*_at_end`` of the end) and one warning line goes to stderr.

Also: ``python benchmarks/lmeval_startup.py`` puts only ``benchmarks/`` on ``sys.path``; where the repository root is
not on it otherwise (tokrag installed as a wheel, not ``pip install -e``), its ``from benchmarks._cli import ...``
raised ModuleNotFoundError after minutes of measurements. It now puts the root on the path, as leaderboard.py and
reference_cells.py do, and imports the helper before its first measurement.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]
_GIT_ID = ["-c", "user.name=r3", "-c", "user.email=r3@example.invalid", "-c", "commit.gpgsign=false"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *_GIT_ID, "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def small_checkout(tmp_path, monkeypatch):
    """A git checkout with one commit, standing in for tokrag's source tree (tokrag_model.provenance.SOURCE_ROOT)."""
    import tokrag_model.provenance as tp

    repo = tmp_path / "src tree"  # a space in the path, as a user's folder may have
    (repo / "tokrag_model").mkdir(parents=True)
    (repo / "tokrag_model" / "m.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "tokrag_model/m.py")
    _git(repo, "commit", "-qm", "first")
    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    monkeypatch.setattr(tp, "SOURCE_ROOT", repo)
    return repo


def test_a_commit_during_the_run_is_recorded_beside_the_start(small_checkout, capsys) -> None:
    """Real git: the commit and the edit made between checkout() and provenance() are the *_at_end values; the
    start's commit stays tokrag_commit; one warning line names both."""
    from benchmarks._cli import checkout, provenance

    first = _git(small_checkout, "rev-parse", "HEAD")
    started = checkout()
    assert started == {"tokrag_commit": first, "tokrag_changes": None}
    (small_checkout / "tokrag_model" / "m.py").write_text("x = 2\n")
    _git(small_checkout, "commit", "-qam", "second")
    (small_checkout / "tokrag_model" / "m.py").write_text("x = 3\n")  # and an edit not committed
    second = _git(small_checkout, "rev-parse", "HEAD")
    assert second != first

    prov = provenance("cpu", {"model": "w0"}, started)
    assert prov["tokrag_commit"] == first and prov["tokrag_changes"] is None
    assert prov["tokrag_commit_at_end"] == second + "+dirty"
    assert prov["tokrag_changes_at_end"] is not None and len(prov["tokrag_changes_at_end"]) == 16
    assert prov["fingerprints"] == {"model": "w0"} and prov["device"] == "cpu"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert ": warning: the tokrag checkout changed during the run" in err[0]
    assert f"({first} at the start, {second}+dirty (changes {prov['tokrag_changes_at_end']}) now)" in err[0]


def test_an_unchanged_checkout_adds_no_key_and_no_warning(small_checkout, capsys) -> None:
    from benchmarks._cli import checkout, provenance

    (small_checkout / "tokrag_model" / "m.py").write_text("x = 5\n")  # dirty, the same at the start and the end
    started = checkout()
    prov = provenance(None, None, started)
    assert {k: prov[k] for k in ("tokrag_commit", "tokrag_changes")} == started
    assert started["tokrag_commit"] == _git(small_checkout, "rev-parse", "HEAD") + "+dirty"
    assert not any(k.endswith("_at_end") for k in prov)
    assert capsys.readouterr().err == ""
    # without ``started`` (a caller that took none): the checkout now, as before
    assert {k: provenance()[k] for k in ("tokrag_commit", "tokrag_changes")} == started


def _moving_commit(monkeypatch):
    """$TOKRAG_GIT_COMMIT is the commit (as on CI): 'start0' when the script starts; move() makes it 'end0'."""
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "start0")
    return lambda: monkeypatch.setenv("TOKRAG_GIT_COMMIT", "end0")


def _assert_moved(prov: dict, err: str) -> None:
    assert prov["tokrag_commit"] == "start0" and prov["tokrag_commit_at_end"] == "end0"
    assert prov["tokrag_changes"] is None and prov["tokrag_changes_at_end"] is None
    lines = [x for x in err.splitlines() if "warning" in x]
    assert len(lines) == 1 and "(start0 at the start, end0 now)" in lines[0], err


def test_replug_weights_records_the_commit_it_started_with(monkeypatch, capsys) -> None:
    import benchmarks.replug_weights as rw

    move = _moving_commit(monkeypatch)

    def docs(task, n, **override):
        move()  # the checkout changes while the script runs
        noise = override.get("noise") != 0.0
        ctxs = [{"docid": "a", "rank": 1, "score": 20.0, "source": "retrieved"},
                {"docid": "b", "rank": 2, "score": 18.0, "source": "noise" if noise else "retrieved"}]
        return [{"qid": "q1", "ctxs": ctxs, "scored_by": "bm25", "run_fingerprint": "noisy0" if noise else "clean0"}]

    monkeypatch.setattr(rw, "task_docs", docs)
    assert rw.main(["--questions", "1"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out.splitlines()[-1])
    assert out["noise_passages"] == 1 and out["provenance"]["fingerprints"] == {"run": "noisy0", "run_clean": "clean0"}
    _assert_moved(out["provenance"], cap.err)


def test_retrieval_records_the_commit_it_started_with(monkeypatch, capsys, tmp_path) -> None:
    import benchmarks.retrieval as br

    move = _moving_commit(monkeypatch)
    corpus = type("C", (), {"name": "nq-wiki-12k", "fingerprint": "corpus0", "__len__": lambda self: 3})()
    qs = [{"qid": "q1", "question": "who", "gold_docids": ["d1"], "answers": ["x"]}]
    run = SimpleNamespace(fingerprint="bm25run0", ctxs={"q1": [{"docid": "d1", "title": "", "text": "x", "score": 1.0,
                                                                 "rank": 1}]})

    class Searcher:
        def __init__(self, *a, **k): pass
        def batch_search(self, *a, **k): return {}
        def close(self): pass

    def build(*a, **k):
        move()  # during the index build
        return tmp_path

    monkeypatch.setattr(br.signal, "signal", lambda *a: None)
    monkeypatch.setattr(br, "named_corpus", lambda name, data_dir=None: corpus)
    monkeypatch.setattr(br, "nq_oracle_questions", lambda data_dir=None, limit=None: qs)
    monkeypatch.setattr(br, "build_bm25_index", build)
    monkeypatch.setattr(br, "Bm25Searcher", Searcher)
    monkeypatch.setattr(br, "retrieve", lambda *a, **k: run)
    assert br.main(["--no-dense", "--threads", "1"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out.splitlines()[-1])
    assert out["bm25_gold_at_5"] == 1.0 and out["provenance"]["fingerprints"] == {"corpus": "corpus0",
                                                                                    "bm25_run": "bm25run0"}
    _assert_moved(out["provenance"], cap.err)


def test_lmeval_startup_runs_without_the_repository_on_the_path(tmp_path) -> None:
    """As ``python benchmarks/lmeval_startup.py`` with tokrag installed as a wheel: only benchmarks/ on sys.path (no
    editable install's entry, no working directory); its child processes stubbed. The line has its figures and the
    provenance of the commit the script started with (the checkout moves during the measurements)."""
    code = f"""
import importlib.util, json, os, sys
repo = {str(REPO)!r}
sys.path[:] = [os.path.join(repo, "benchmarks")] + [p for p in sys.path if p not in ("", repo)]
for name in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
    del sys.modules[name]
spec = importlib.util.spec_from_file_location("lmeval_startup", os.path.join(repo, "benchmarks", "lmeval_startup.py"))
ls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ls)
os.environ["TOKRAG_GIT_COMMIT"] = "start0"
def fake(env):
    os.environ["TOKRAG_GIT_COMMIT"] = "end0"
    return {{"build_cpu_s": 1.5, "process_cpu_s": 2.0, "entries": 7}}
ls._task_manager = fake
sys.exit(ls.main(["--no-main-job"]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["task_manager_warm"] == {"build_cpu_s": 1.5, "process_cpu_s": 2.0, "entries": 7}
    assert out["provenance"]["device"] is None and out["provenance"]["fingerprints"] == {}
    _assert_moved(out["provenance"], proc.stderr)
