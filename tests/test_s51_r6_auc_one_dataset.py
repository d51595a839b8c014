"""s51 r6 (review of f8's 9bbefee): ``tokrag analyze --data wiki`` (one data set) drew ``auc_by_layer.png`` without
any reference line: the named policies (``default``, ``dynamic``, ``calibrated``, ``analysis``) were drawn only for
the pooled ``all`` results, which exist only with two or more data sets. So a one-data-set run with ``--preset`` on
its own dev samples showed no ``calibrated (in-sample): ...`` entry (nor any calibrated AUC), though tasks/README
says the figure shows the reference lines and marks the in-sample calibrated AUC. Now a run of one data set draws
them from that data set's results (which are what ``all`` would pool). Read from the figure's matplotlib objects,
with the fake 4-layer model of :mod:`tests.analyze_fakes`."""

from __future__ import annotations

import json

import pytest


def _record(i, sid):
    """One strict token per sample, 4 layers: even samples benefit, odd ones detriment (an AUC at every layer)."""
    from tasks import analyze

    tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
    s_r = [0.1 * (j + 1) + (0.07 if i % 3 else -0.05) * (j - i % 4) for j in range(4)]
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


@pytest.fixture
def figures(monkeypatch):
    """The figures ``auc_by_layer.png`` is drawn from, kept open until the test ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    close, kept = plt.close, []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    yield kept
    for fig in kept:
        close(fig)


def test_one_data_set_figure_has_the_reference_lines_and_the_in_sample_mark(fake, tmp_path, figures) -> None:
    from tasks import analyze, calibrate

    assert calibrate.main(["--data", "wiki", "--out", str(tmp_path / "cal"), "--n", "4", "--bootstrap", "5"]) == 0
    preset = str(tmp_path / "cal" / "tokrag_preset.json")
    out = tmp_path / "dev"
    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", str(out), "--n", "4", "--bootstrap", "5",
                         "--preset", preset]) == 0
    res = json.loads((out / "results.json").read_text())
    assert list(res["results"]) == ["wiki"]  # one data set: no pooled 'all'
    assert res["preset_in_sample"] == {"wiki": 4}
    pols = res["results"]["wiki"]["policies"]
    legend = [t.get_text() for t in figures[-1].axes[0].get_legend().get_texts()]
    assert legend == [f"wiki (n={res['results']['wiki']['counts']['strict']})",
                      f"default: {pols['default']['strict']['auc']:.3f}",
                      f"dynamic: {pols['dynamic']['strict']['auc']:.3f}",
                      f"calibrated (in-sample): {pols['calibrated']['strict']['auc']:.3f}",
                      f"analysis: {pols['analysis']['strict']['auc']:.3f}"]

    out = tmp_path / "test"  # held out: the same lines, the calibrated one unmarked
    assert analyze.main(["--data", "wiki", "--split", "test", "--out", str(out), "--n", "4", "--bootstrap", "5",
                         "--preset", preset]) == 0
    res = json.loads((out / "results.json").read_text())
    legend = [t.get_text() for t in figures[-1].axes[0].get_legend().get_texts()]
    assert f"calibrated: {res['results']['wiki']['policies']['calibrated']['strict']['auc']:.3f}" in legend
    assert not [t for t in legend if "in-sample" in t]
