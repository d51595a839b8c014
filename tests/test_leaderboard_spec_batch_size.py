"""A spec's ``batch_size`` refused ``"4"``, ``4.0`` and ``"auto"``, which lm-eval's ``--batch_size`` takes on tokrag's
models (:func:`tokrag_model.args.to_batch_size`, cac21f1). Now the spec takes the same values with the same reading (a
whole number is that number, ``auto`` / ``auto:N`` are 1), so ``4``, ``"4"`` and ``4.0`` are one cell with one run
folder, and refuses the same others in one line naming the key."""

from __future__ import annotations

import pytest

from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import FIX, write_spec

SHARED = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
          "limit": 12}


def _spec(tmp_path, value, name="toy"):
    return load_spec(write_spec(tmp_path / name, tasks=["toy_qa"], extra={"shared": {**SHARED, "batch_size": value}}))


@pytest.mark.parametrize("value, read", [(4, 4), ("4", 4), (4.0, 4), ("4.0", 4), (" 8 ", 8), ("auto", 1),
                                         ("AUTO", 1), ("auto:4", 1), ("auto:2.5", 1)])
def test_the_values_lm_evals_flag_takes_are_read_as_the_model_reads_them(tmp_path, value, read):
    cells = _spec(tmp_path, value).cells()
    assert {c.batch_size for c in cells} == {read} and all(type(c.batch_size) is int for c in cells)


def test_one_number_written_three_ways_is_one_cell_with_one_run_folder(tmp_path):
    keys = [[k for _, k, _ in cell_keys(_spec(tmp_path, v, name=f"s{i}"))] for i, v in enumerate((4, "4", 4.0))]
    assert keys[0] == keys[1] == keys[2]
    assert [k for _, k, _ in cell_keys(_spec(tmp_path, "auto", name="auto"))] == \
        [k for _, k, _ in cell_keys(_spec(tmp_path, 1, name="one"))]


@pytest.mark.parametrize("value", [2.5, "2.5", 0, "0", -1, True, None, "nan", "inf", "autotune", "auto:x", "two", ""])
def test_the_values_lm_evals_flag_refuses_are_refused_in_one_line(tmp_path, value):
    with pytest.raises(ConfigError) as exc:
        _spec(tmp_path, value)
    text = str(exc.value)
    assert text.startswith(f"leaderboard spec {tmp_path / 'toy' / 'toy.yaml'}: shared.batch_size must be an integer "
                           f">= 1, got {value!r}: give a whole number such as 4") and "\n" not in text
