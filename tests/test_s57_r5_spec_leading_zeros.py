"""Leading zeros in a leaderboard spec that YAML 1.1 and decimal read alike (s57 r5, review of b1's 98f51fa).

98f51fa refused every integer written with a leading zero, as YAML 1.1 reads it as octal. Where one digit follows the
zeros (``07``, ``01``, ``00``) octal and decimal are the same number, so ``seeds: [01, 02]`` or ``k: 05`` loaded
correctly before and were refused after ("write 7 for that number, 7 for the decimal one"). Those load again; ``010``
is still refused. The refusal's decimal number kept no sign: ``-010`` said "10 for the decimal one", now ``-10``.
"""

from __future__ import annotations

import pytest

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

BASE = """name: t
shared:
  model_args: {{pretrained: smollm2-135m-instruct, k: {k}}}
  gen_kwargs: {{max_gen_toks: {toks}}}
  limit: {limit}
tasks: [nq_oracle_bm25]
seeds: [{seeds}]
methods:
  - {{name: rag-standard, model: rag-standard}}
"""


def _spec(tmp_path, k="3", toks="16", limit="4", seeds="1"):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.format(k=k, toks=toks, limit=limit, seeds=seeds))
    return path


def test_one_digit_after_zeros_reads_as_written(tmp_path):
    spec = load_spec(_spec(tmp_path, k="05", toks="0_7", limit="007", seeds="01, 02, 00"))
    assert spec.shared["model_args"]["k"] == 5
    assert spec.shared["gen_kwargs"]["max_gen_toks"] == 7
    assert spec.shared["limit"] == 7
    assert spec.seeds == [1, 2, 0]


@pytest.mark.parametrize("text, value, decimal", [("-010", -8, "-10"), ("0010", 8, "10"), ("+017", 15, "17")])
def test_octal_refusal_names_the_signed_decimal(tmp_path, text, value, decimal):
    path = _spec(tmp_path, k=text)
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (f"{path}:3:54: {text} is read by YAML 1.1 as octal (a leading zero), the number {value}: "
                              f"write {value} for that number, {decimal} for the decimal one, or quote it as text; fix "
                              "the leaderboard spec")
