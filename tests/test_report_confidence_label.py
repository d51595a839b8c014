"""The CI confidence level printed exactly by the tables and the page (one helper, ``report.confidence_label``):
0.975 -> "97.5%" and 0.995 -> "99.5%"; before, rounded to a whole percent ("98%", "100%"). 0.95 stays "95%"."""

from __future__ import annotations

import pytest

from leaderboards.page import render_html
from leaderboards.report import confidence_label, tables


@pytest.mark.parametrize("conf,label", [(0.95, "95%"), (0.9, "90%"), (0.975, "97.5%"), (0.995, "99.5%"), (0.999, "99.9%")])
def test_confidence_label_is_exact(conf, label):
    assert confidence_label(conf) == label


def _table_data(conf: float) -> dict:
    return {"metrics": ["em"], "bootstrap": {"confidence": conf, "iters": 1000, "seed": 0}, "multi_model": False,
            "rows": [{"model": None, "method": "m", "task": "t", "noise": None, "n": 3,
                      "metrics": {"em": {"mean": 0.5, "lo": 0.1, "hi": 0.9, "n": 3}}}],
            "references": [], "models": [{"name": None, "label": "", "methods": ["m"], "tasks": ["t"]}],
            "closed_book": None, "primary_metric": "em", "trace_columns": [], "timings": False, "time_basis": None,
            "specific_settings": {}, "mde": []}


@pytest.mark.parametrize("conf,label", [(0.95, "95%"), (0.975, "97.5%"), (0.995, "99.5%")])
def test_tables_and_page_print_the_confidence_exactly(conf, label):
    assert tables(_table_data(conf))[0][1] == f"Results: mean [{label} percentile bootstrap CI over questions, 1000 resamples]"
    data = _table_data(conf)
    piv = {"model": None, "label": "", "columns": [{"task": "t", "metric": "em", "lower_is_better": False}],
           "rows": [{"method": "m", "values": {"t": {"mean": 0.5, "lo": 0.1, "hi": 0.9}}, "average": 0.5}],
           "best": {}, "average_over": ["t"], "average_metric": "em"}
    data.update(spec="s", description="", pivot=[piv], method_args={}, notes="", units={}, provenance=[], cells={})
    data["models"][0].update(contract=[], method_args=[], notes="")
    html = render_html(data, [])
    assert f'title="{label} CI [0.100, 0.900]"' in html
