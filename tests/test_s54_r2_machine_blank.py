"""A baseline's ``machines.<cell>`` field written blank by hand (``"torch_num_threads": ""``, a placeholder) was kept
as text by check's by-value comparison (s54 f2, 92fd925): the cell counted as run on another machine, and the NOTE
read ``the baseline on cpu AMD EPYC (AVX2),  threads, ...`` (a blank CPU model likewise differed while its label said
``CPU model not recorded``; /work/scratch/s54/r2/probe_threads.py, probe_threads.txt). Blank text is not recorded, as
``null`` is: the fields both sides recorded are compared."""

from __future__ import annotations

import leaderboards.check as C
from leaderboards.provenance_view import setting_label, settings_differ

BASE = {"device": "cpu", "cpu_model": "AMD EPYC", "cpu_capability": "AVX2", "torch": "2.13.0+cpu"}


def test_a_blank_machine_field_is_not_recorded():
    runs = C._setting({**BASE, "torch_num_threads": 2})
    for blank in ("", "  "):
        hand = C._setting({**BASE, "torch_num_threads": blank})
        assert hand == {**runs, "torch_num_threads": None}
        assert setting_label(hand) == "cpu AMD EPYC (AVX2), threads not recorded, torch 2.13.0+cpu"  # was ',  threads,'
        assert not settings_differ([runs, hand])  # was: another machine
        model = C._setting({**BASE, "cpu_model": blank, "torch_num_threads": 2})
        assert model["cpu_model"] is None and not settings_differ([runs, model])
    # text that is no count is still a difference, shown as written; a count as text is the count
    assert settings_differ([runs, C._setting({**BASE, "torch_num_threads": "auto"})])
    assert C._setting({**BASE, "torch_num_threads": " 2 "}) == runs
