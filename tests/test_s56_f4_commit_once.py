"""The tokrag commit and changes fingerprint are read from git once per process (s56 f4, audit a1 F1).

Before, ``tokrag_model.provenance`` ran ``git rev-parse`` / ``git status`` / ``git diff`` at each record, so when the
checkout moved during a run (another commit, an edit) the results' ``tokrag_versions.tokrag_commit`` (written after the
evaluation), the task's ``tokrag_data.tokrag.commit`` (task build) and a leaderboard cell's ``provenance.json``
``git_commit`` (attempt start) named different trees. Now the first read is kept (:func:`imported_tree`), made early
(the lm-eval start-up hook, the import of ``tokrag_model.base``). git is faked here: no repository moves, no timing.
"""

from __future__ import annotations

import subprocess

import pytest

from tokrag_model import provenance

A = "a" * 40
B = "b" * 40


class FakeGit:
    """``subprocess.run`` for the git commands of :mod:`tokrag_model.provenance`: the checkout's HEAD, whether a tracked
    file is modified, and which file, as :attr:`head` / :attr:`edited` say now; counts the git calls."""

    def __init__(self) -> None:
        self.head, self.edited, self.calls = A, None, 0

    def __call__(self, args, **kwargs):
        assert args[0] == "git", args
        self.calls += 1
        text = kwargs.get("text", False)
        if "rev-parse" in args:
            out = self.head + "\n"
        elif "status" in args:
            out = f" M {self.edited}\n" if self.edited else ""
        elif "diff" in args:
            out = f"{self.edited}\0" if self.edited else ""
        else:  # ls-files: no untracked files
            out = ""
        return subprocess.CompletedProcess(args, 0, out if text else out.encode(), "" if text else b"")


@pytest.fixture()
def git(monkeypatch, tmp_path) -> FakeGit:
    """A checkout at commit A (a ``.git`` beside the packages), never read before in this process, whose git is
    :class:`FakeGit`; ``$TOKRAG_GIT_COMMIT`` unset."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "tokrag_model").mkdir()
    (tmp_path / "tokrag_model" / "cad.py").write_text("x = 1\n")
    fake = FakeGit()
    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    monkeypatch.setattr(provenance, "SOURCE_ROOT", tmp_path)
    monkeypatch.setattr(provenance, "_IMPORTED_TREE", {}, raising=False)
    monkeypatch.setattr(provenance.subprocess, "run", fake)
    return fake


def move(git: FakeGit, root) -> None:
    """The checkout moves while the run goes on: a new commit, then an edit of a tracked file."""
    git.head, git.edited = B, "tokrag_model/cad.py"
    (root / "tokrag_model" / "cad.py").write_text("x = 2\n")


def records() -> dict:
    """What each recorder of a run writes: the model's ``tokrag_versions`` (commit, changes), the task's
    ``tokrag_data.tokrag`` and a leaderboard cell's ``git_commit``."""
    from leaderboards.runner import git_commit as runner_git_commit

    return {"commit": provenance.tokrag_commit(), "changes": provenance.tokrag_changes(),
            "task": provenance.tokrag_source()["commit"], "cell": runner_git_commit()}


def test_records_name_the_tree_of_the_first_read(git) -> None:
    first = records()
    assert first == {"commit": A, "changes": None, "task": A, "cell": A}
    calls = git.calls
    move(git, provenance.SOURCE_ROOT)
    assert records() == first  # before: commit/task/cell B+dirty, changes a fingerprint of the edit
    assert git.calls == calls  # git is not asked again


def test_the_start_up_hook_reads_the_tree_before_the_move(git) -> None:
    from tokrag_model import _lmeval_hook

    _lmeval_hook._after_registry()  # lm-eval's model registry imported: the run starts
    move(git, provenance.SOURCE_ROOT)  # the tree moves before anything is recorded
    assert records() == {"commit": A, "changes": None, "task": A, "cell": A}


def test_first_read_of_a_dirty_tree_keeps_its_changes(git) -> None:
    git.edited = "tokrag_model/cad.py"
    first = records()
    assert first["commit"] == first["task"] == first["cell"] == A + "+dirty"
    assert first["changes"] is not None and len(first["changes"]) == 16
    git.edited = None  # the edit is committed meanwhile
    git.head = B
    assert records() == first


def test_another_repository_is_read_now_and_the_override_still_wins(git, tmp_path_factory, monkeypatch) -> None:
    assert provenance.git_commit() == A
    move(git, provenance.SOURCE_ROOT)
    other = tmp_path_factory.mktemp("other")
    assert provenance.git_commit(other) == B + "+dirty"  # an explicit other repository: read now
    assert provenance.git_commit(provenance.SOURCE_ROOT) == A  # the source tree given explicitly: the first read
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "ci-build-7")
    assert provenance.tokrag_commit() == provenance.git_commit() == "ci-build-7"
    assert provenance.tokrag_changes() is None
    monkeypatch.delenv("TOKRAG_GIT_COMMIT")
    assert provenance.tokrag_commit() == A  # the override gone: the process's first read again
