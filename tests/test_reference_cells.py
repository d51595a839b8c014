"""The reference cells (leaderboards/specs/reference-cells.yaml, issue 10.5) are cells of the v2 leaderboard
(leaderboards/specs/nq-wiki-12k-v2.yaml, SmolLM2 contract): the runner's own key function gives them the
same run folders, so running either spec fills the other."""

from __future__ import annotations

from pathlib import Path

from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec

SPECS = Path(__file__).resolve().parents[1] / "leaderboards" / "specs"


def test_reference_cells_share_run_folders_with_the_v2_smollm2_contract():
    ref = {(c.method.name, c.task.task): (key, c) for c, key, _ in cell_keys(load_spec(SPECS / "reference-cells.yaml"))}
    v2 = {(c.method.name, c.task.task): (key, c) for c, key, _ in cell_keys(load_spec(SPECS / "nq-wiki-12k-v2.yaml"))
          if c.model_name == "smollm2-135m-instruct"}
    assert sorted(ref) == sorted((m, t) for m in ("rag-none", "rag-standard") for t in ("nq_oracle_gold", "nq_oracle_bm25"))
    for cell_id, (key, cell) in ref.items():
        assert cell.apply_chat_template and cell.prompt == "instruct" and cell.limit == 300, cell_id
        assert cell.gen_kwargs == {"max_gen_toks": 32} and cell.model_args["k"] == 5 and cell.batch_size == 1, cell_id
        assert v2[cell_id][1].config() == cell.config(), cell_id
        assert v2[cell_id][0] == key, cell_id
