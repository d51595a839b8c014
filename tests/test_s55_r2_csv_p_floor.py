"""The CSV's smallest p-values (s55 r2, review of f2 3adc3a7).

3adc3a7 writes a p that underflowed to 0.0 (more than 1074 discordant questions all one way) as the number ``1e-300``,
an upper bound, but wrote every p between 0 and 1e-300 as itself: 1070 discordant questions all one way (exact p
2/2^1070, a subnormal double) read ``1.58e-322``, below the ``1e-300`` of the stronger comparison beside it (1100
questions), so sorting or ranking the column put the two in the wrong order, and the column held the subnormal
numbers that csv_p's own docstring says Excel reads as 0. Every p (and Holm's p) under 1e-300 is now written
``1e-300``, the same upper bound; and the Holm cell's ``_p_holm_bound`` flag, which says whether the Holm value is an
upper bound, is ``true`` where the cell is that bound (it said ``false``: exact).

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs.
"""

from __future__ import annotations

import csv
import io
import sys

import pandas as pd

from leaderboards.report import compute, csv_p, render_csv
from tests.s51_f4_synthetic import synthetic


def test_csv_p_is_an_upper_bound_that_never_inverts_the_order():
    ps = [2.0 * 2.0 ** -m for m in range(990, 1101)]  # from 2.0e-298 down to 0.0 (underflow from m = 1075)
    assert ps[-1] == 0.0 and 0.0 < ps[1070 - 990] < sys.float_info.min  # 2/2^1070: subnormal, not 0
    written = [float(csv_p(p)) for p in ps]
    assert all(w == 1e-300 for w, p in zip(written, ps) if p < 1e-300)  # the bound, for every p under it
    assert all(w == float(f"{p:.2e}") for w, p in zip(written, ps) if p >= 1e-300)  # the others: 3 significant digits
    assert all(a >= b for a, b in zip(written, written[1:]))  # a smaller p is never written as a larger number
    assert min(written) == 1e-300 and all(w >= sys.float_info.min for w in written)  # no subnormal, never 0
    assert csv_p(2.0 * 2.0 ** -1070) == "1e-300"  # was '1.58e-322', below the underflowed p's 1e-300
    assert (csv_p(0.0), csv_p(1.5e-300), csv_p(3.01e-36), csv_p(0.093750)) == ("1e-300", "1.50e-300", "3.01e-36", "0.093750")


def test_the_csv_orders_an_underflowed_and_a_subnormal_p_as_their_evidence(tmp_path):
    n = 1100
    data = compute(*synthetic(tmp_path, {"standard": {"em": [1] * n}, "none": {"em": [0] * n},
                                         "other": {"em": [1] * 30 + [0] * (n - 30)}}), timings=False)
    paired = {r["method"]: r["paired"]["standard"]["em"] for r in data["rows"] if r["method"] != "standard"}
    # none: 1100 discordant questions all one way (p underflowed to 0.0); other: 1070 (p = 2/2^1070, subnormal)
    assert (paired["none"]["n_plus"], paired["none"]["n_minus"], paired["none"]["p"]) == (0, 1100, 0.0)
    assert (paired["other"]["n_minus"], paired["other"]["p"]) == (1070, 2.0 * 2.0 ** -1070)
    assert 0.0 < paired["other"]["p_holm"] < 1e-300 and "p_holm_bound" not in paired["other"]  # the JSON's exact values
    text = render_csv(data)
    line = {r["method"]: r for r in csv.DictReader(io.StringIO(text))}
    cols = ("delta_em_vs_standard_p", "delta_em_vs_standard_p_holm", "delta_em_vs_standard_p_holm_bound")
    # was ('1e-300', '1e-300', 'false') and ('1.98e-322', '3.95e-322', 'false')
    assert tuple(line["none"][c] for c in cols) == ("1e-300", "1e-300", "true")
    assert tuple(line["other"][c] for c in cols) == ("1e-300", "1e-300", "true")
    frame = pd.read_csv(io.StringIO(text)).set_index("method")
    assert str(frame[cols[0]].dtype) == str(frame[cols[1]].dtype) == "float64"
    # the weaker comparison is never written with the smaller p
    assert frame.loc["other", cols[0]] >= frame.loc["none", cols[0]] > 0
    assert frame.loc["other", cols[1]] >= frame.loc["none", cols[1]] > 0
