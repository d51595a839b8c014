"""``tokrag leaderboard run --estimate``: the model column and the "at most" total line (s57 h2; new user n1's code
observations 2 and 3). For a spec without ``models:`` (the ci spec) the model column showed ``-`` although the
contract names the model (``shared.model_args.pretrained``); it now shows that ``pretrained``. The total line read
"(at most: the count of 10 cells is its limit, its task's size unknown until a cell of it finishes)"; it now reads
"(at most: 10 cells count their limit as their number of questions; a task's size is known once a cell of that task
finishes)", in the singular for one cell."""

from __future__ import annotations

from leaderboards.estimate import estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import FIX, TOY, write_spec

WEIGHTS = str(FIX / "toy_weights.bin")


def _rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith("model ")) + 2  # the header, then its rule
    rows = []
    for t in lines[start:]:
        if t.startswith("total"):
            break
        rows.append(t.split())
    return rows


def test_without_models_the_column_names_the_contracts_pretrained(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4))
    est = estimate(spec, tmp_path / "runs", fallback=2.0)
    assert [(b["model"], b["method"], b["pretrained"]) for b in est["by_method"]] == [
        (None, "standard", WEIGHTS), (None, "none", WEIGHTS)]
    assert [r[:4] for r in _rows(render(est))] == [[WEIGHTS, "standard", "1", "4"], [WEIGHTS, "none", "1", "4"]]
    assert all(c["pretrained"] == WEIGHTS for c in est["cells"])


def test_with_models_the_column_names_the_model_entry(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"models": [{"name": "toy1"}]}))
    est = estimate(spec, tmp_path / "runs", fallback=2.0)
    assert [r[:2] for r in _rows(render(est))] == [["toy1", "standard"], ["toy1", "none"]]


def test_the_at_most_line_in_the_plural_and_the_singular(tmp_path):
    spec = load_spec(write_spec(tmp_path / "two", tasks=["toy_qa"], limit=10**6))
    text = render(estimate(spec, tmp_path / "two" / "runs", fallback=1.0))
    assert ("total: 2000000 questions (at most: 2 cells count their limit as their number of questions; a task's size "
            "is known once a cell of that task finishes), ") in text, text
    one = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec = load_spec(write_spec(tmp_path / "one", tasks=["toy_qa"], limit=10**6, methods=one))
    text = render(estimate(spec, tmp_path / "one" / "runs", fallback=1.0))
    assert ("total: 1000000 questions (at most: 1 cell counts its limit as its number of questions; a task's size is "
            "known once a cell of that task finishes), ") in text, text
