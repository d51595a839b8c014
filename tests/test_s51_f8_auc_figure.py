"""s51 u2 M4: ``tokrag analyze``'s ``auc_by_layer.png`` showed a preset's in-sample dev AUC as ``calibrated: 0.764``
under the title ``Token-level benefit vs detriment (teacher forcing, 95% bootstrap CI)``: no split, no in-sample mark,
while the table row and results.json (``preset_in_sample``) say IN-SAMPLE. Now the title names the split and the
calibrated legend entry reads ``calibrated (in-sample): ...`` when the preset was calibrated on these samples. And a
data set's line with exactly the values of another (the pooled line when the other data set has one class) was drawn
exactly over it, hiding it; now it is dashed and its label names the other. Checked on the figure's matplotlib objects
(the fake 4-layer model of :mod:`tests.analyze_fakes`)."""

from __future__ import annotations

import json

import pytest


def _record(i, sid):
    """One strict token per sample, 4 layers. wiki: even samples benefit, odd ones detriment (an AUC per layer); nq:
    every sample benefit (one class: no AUC, so the pooled line equals wiki's)."""
    from tasks import analyze

    benefit = sid.startswith("nq") or i % 2 == 0
    tr, tp = (1, 2) if benefit else (2, 1)
    s_r = [0.1 * (j + 1) + (0.07 if i % 3 else -0.05) * (j - i % 4) for j in range(4)]
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


@pytest.fixture
def figures(monkeypatch):
    """The figures ``auc_by_layer.png`` is drawn from, kept open (``plt.close`` recorded, then run after the test)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    close, kept = plt.close, []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    yield kept
    for fig in kept:
        close(fig)


def _legend(fig):
    ax = fig.axes[0]
    return ax, [t.get_text() for t in ax.get_legend().get_texts()]


def test_the_figure_names_the_split_and_marks_an_in_sample_calibrated_auc(fake, tmp_path, figures) -> None:
    from tasks import analyze, calibrate

    assert calibrate.main(["--out", str(tmp_path / "cal"), "--n", "4", "--bootstrap", "5"]) == 0
    preset = str(tmp_path / "cal" / "tokrag_preset.json")
    out = tmp_path / "dev"
    assert analyze.main(["--split", "dev", "--out", str(out), "--n", "4", "--bootstrap", "5", "--preset", preset]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["preset_in_sample"] == {"wiki": 4, "nq": 4}
    cal = res["results"]["all"]["policies"]["calibrated"]["strict"]["auc"]
    ax, legend = _legend(figures[-1])
    assert ax.get_title() == "Token-level benefit vs detriment, dev split (teacher forcing, 95% bootstrap CI)"
    assert f"calibrated (in-sample): {cal:.3f}" in legend
    assert not [t for t in legend if t.startswith("calibrated:")]
    assert f"default: {res['results']['all']['policies']['default']['strict']['auc']:.3f}" in legend  # unmarked

    out = tmp_path / "test"  # held-out samples: the calibrated AUC is not marked
    assert analyze.main(["--split", "test", "--out", str(out), "--n", "4", "--bootstrap", "5", "--preset", preset]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["preset_in_sample"] == {}
    ax, legend = _legend(figures[-1])
    assert ax.get_title() == "Token-level benefit vs detriment, test split (teacher forcing, 95% bootstrap CI)"
    assert f"calibrated: {res['results']['all']['policies']['calibrated']['strict']['auc']:.3f}" in legend
    assert not [t for t in legend if "in-sample" in t]


def test_a_line_with_the_values_of_another_stays_visible_and_is_named(fake, tmp_path, figures) -> None:
    """nq has one class (no AUC at any layer), so the pooled ``all`` line has wiki's values at every layer."""
    import numpy as np

    from tasks import analyze

    out = tmp_path / "o"
    assert analyze.main(["--split", "test", "--out", str(out), "--n", "4", "--bootstrap", "5"]) == 0
    res = json.loads((out / "results.json").read_text())
    wiki = [res["results"]["wiki"]["policies"][f"layer{i}"]["strict"]["auc"] for i in range(4)]
    assert wiki == [res["results"]["all"]["policies"][f"layer{i}"]["strict"]["auc"] for i in range(4)]
    assert len(set(wiki)) > 1 and None not in wiki
    assert [res["results"]["nq"]["policies"][f"layer{i}"]["strict"]["auc"] for i in range(4)] == [None] * 4
    ax, _ = _legend(figures[-1])
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    n_wiki, n_all = res["results"]["wiki"]["counts"]["strict"], res["results"]["all"]["counts"]["strict"]
    first, second = f"wiki (n={n_wiki})", f"all, within each data set (n={n_all})"  # drawn in this order
    assert first in lines and lines[first].get_linestyle() == "-"
    label = f"{second}, the same values as 'wiki': drawn dashed over it"
    assert label in lines, sorted(lines)
    assert lines[label].get_linestyle() == "--"  # matplotlib's name of any dash pattern: the line under it shows
    assert np.array_equal(lines[label].get_ydata(), lines[first].get_ydata())
    assert f"nq (n={res['results']['nq']['counts']['strict']})" in lines  # an all-n/a line is no duplicate
