"""The noise share a leaderboard reports is the share of passages its tasks actually replace at the contract's k.

A contract ``k`` sets the task's ``hits`` (leaderboards.spec.task_hits) and tasks.rag.n_noise replaces a whole number
of those passages: at k=2 ``_noise20`` replaces none (the clean task) and ``_noise40/60/80`` one of two; at k=3
``_noise20`` and ``_noise40`` one of three, ``_noise60`` and ``_noise80`` two. The report's noise column and the
robustness curve showed the nominal 0.2/0.4/0.6/0.8, and nothing said so.
"""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib.axes
import pytest

from leaderboards.plots import make_plots
from leaderboards.report import compute, tables
from leaderboards.spec import load_spec

NOISE = ["nq_oracle_bm25_noise20", "nq_oracle_bm25_noise40", "nq_oracle_bm25_noise60", "nq_oracle_bm25_noise80"]
SPEC = """\
name: noisek
reference: rag-standard
shared:
  model_args: {pretrained: smollm2-135m-instruct}
  gen_kwargs: {max_gen_toks: 4}
  limit: 20
models:
  - {name: two, shared: {model_args: {k: 2}}}
  - {name: three, shared: {model_args: {k: 3}}}
  - {name: five, shared: {model_args: {k: 5}}}
tasks: [nq_oracle_bm25, %s]
methods:
  - {name: rag-none, model: rag-none}
  - {name: rag-standard, model: rag-standard}
""" % ", ".join(NOISE)
SHARES = {"two": [0.0, 0.0, 0.5, 0.5, 0.5], "three": [0.0, 1 / 3, 1 / 3, 2 / 3, 2 / 3], "five": [0.0, 0.2, 0.4, 0.6, 0.8]}


@pytest.fixture()
def spec_path(tmp_path: Path) -> Path:
    p = tmp_path / "noisek.yaml"
    p.write_text(SPEC, encoding="utf-8")
    return p


def _noise(data: dict, model: str, method: str = "rag-standard") -> list[float]:
    return [r["noise"] for r in data["rows"] if r["model"] == model and r["method"] == method]


def test_rows_carry_the_share_actually_replaced(spec_path: Path) -> None:
    data = compute(load_spec(spec_path), {}, timings=False)
    for model, shares in SHARES.items():
        for method in ("rag-none", "rag-standard"):
            assert _noise(data, model, method) == pytest.approx(shares, abs=1e-12), (model, method)
    nominal = {r["task"]: r.get("noise_nominal") for r in data["rows"] if r["model"] == "three"}
    assert nominal == {"nq_oracle_bm25": None, **dict(zip(NOISE, [0.2, 0.4, 0.6, 0.8]))}
    assert not any("noise_nominal" in r for r in data["rows"] if r["model"] == "five")  # k=5: rows as before
    results = next(t for t in tables(data) if t[0] == "results")
    noise_col = results[2].index("noise")
    assert [r[noise_col] for r in results[3] if r[0] == "three"][:5] == ["0.00", "0.33", "0.33", "0.67", "0.67"]
    assert any("nominal" in line and "three nq_oracle_bm25_noise20 0.20 -> 0.33" in line for line in results[4])


def test_robustness_curve_plots_the_actual_share(spec_path: Path, tmp_path: Path, monkeypatch) -> None:
    data = compute(load_spec(spec_path), {}, timings=False)
    for r in data["rows"]:  # as if every cell had run
        r["metrics"] = {"answer_match": {"mean": 0.5, "lo": 0.4, "hi": 0.6, "n": 20}}
    xs: list[list[float]] = []
    real = matplotlib.axes.Axes.plot

    def spy(self, x, *a, **kw):
        xs.append(list(x))
        return real(self, x, *a, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    files = dict(make_plots(data, tmp_path))
    assert {"robustness_nq_oracle_bm25_two.png", "robustness_nq_oracle_bm25_three.png"} <= set(files)
    curves = [x for x in xs if len(x) == 5]  # one per model and method, in model order
    assert curves[0] == pytest.approx(sorted(SHARES["two"]))
    assert curves[2] == pytest.approx(sorted(SHARES["three"]))
    assert curves[4] == pytest.approx(SHARES["five"])


def test_spec_load_warns_once_per_contract(spec_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="leaderboards.spec"):
        load_spec(spec_path)
    msgs = [r.getMessage() for r in caplog.records if "nominal share" in r.getMessage()]
    assert len(msgs) == 2  # k=2 and k=3; none for k=5
    two, three = msgs
    assert "k=2 (model two)" in two and "nq_oracle_bm25_noise20 0.2 -> 0.00 (0 of 2)" in two
    assert "nq_oracle_bm25_noise20 replaces 0 of 2 passages: identical to the clean task" in two
    assert "nq_oracle_bm25_noise40, nq_oracle_bm25_noise60 and nq_oracle_bm25_noise80 all replace 1 of 2 passages" in two
    assert "k=3 (model three)" in three and "nq_oracle_bm25_noise40 0.4 -> 0.33 (1 of 3)" in three
    assert "nq_oracle_bm25_noise20 and nq_oracle_bm25_noise40 both replace 1 of 3 passages" in three
    assert "nq_oracle_bm25_noise60 and nq_oracle_bm25_noise80 both replace 2 of 3 passages" in three
    assert "identical to the clean task" not in three


def test_shipped_k5_specs_warn_nothing(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="leaderboards.spec"):
        for p in sorted((Path(__file__).resolve().parents[1] / "leaderboards" / "specs").glob("*.yaml")):
            load_spec(p)
    assert not [r for r in caplog.records if "nominal share" in r.getMessage()]
