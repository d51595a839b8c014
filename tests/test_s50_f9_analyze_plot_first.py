"""``tokrag analyze`` wrote results.json, then drew auc_by_layer.png straight into the file (s50 b2 D1): a run stopped
or failing while it drew left the new results.json beside the earlier run's plot (or a truncated PNG). Now the plot
is drawn first, in memory, and both files are then renamed in back to back. Fake model (tests.analyze_fakes)."""

from __future__ import annotations

import pytest

from test_analyze_review_fixes import _record  # noqa: F401  (the fake's records)


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


def test_a_run_that_fails_while_drawing_leaves_the_earlier_results_and_plot(fake, tmp_path, monkeypatch):
    from tasks import analyze

    out = tmp_path / "an"
    argv = ["--data", "wiki", "--split", "dev", "--out", str(out), "--bootstrap", "5"]
    assert analyze.main(argv + ["--n", "4"]) == 0
    earlier = {name: (out / name).read_bytes() for name in ("results.json", "auc_by_layer.png")}
    assert earlier["auc_by_layer.png"][:8] == b"\x89PNG\r\n\x1a\n"

    def fail(*a, **k):
        raise RuntimeError("no space left on device")

    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", fail)  # the drawing fails (or a kill lands there)
    with pytest.raises(RuntimeError, match="no space left"):
        analyze.main(argv + ["--n", "2"])  # another sample count: another results.json
    assert {name: (out / name).read_bytes() for name in earlier} == earlier  # old code: a new results.json
