"""``check_distinct_models`` (s58 b2, affddae/62eb9d0) refused a chat and a plain contract over one model's weights
when every cell of one of them is a ``loglikelihood_rolling`` or plain-text task's: such a cell runs without the chat
template, so its run key is the same for both contracts, and the line said the two models had "the same weights,
contract and method arguments" and to give one "another contract", which it had (s58 r4). A spec comparing the two
contracts on a rolling task alone ran before affddae, both sections showing that task's (right) numbers. The models
are now compared by run key and the chat settings their contracts declare; a renamed copy of a model is still
refused. No model is loaded (ToyLM specs)."""

from __future__ import annotations

import pytest

from leaderboards.keys import cell_keys
from leaderboards.runner import check_distinct_models, run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import write_spec


@pytest.mark.parametrize("first, tasks", [
    ({"apply_chat_template": True}, {}),  # chat vs plain, the rolling task alone
    ({"system_instruction": "Answer briefly."}, {}),  # a plain contract with a system instruction
    ({"apply_chat_template": True}, {"tasks": ["toy_lm"]}),  # the chat model limited to the rolling task
])
def test_contracts_that_differ_only_in_chat_settings_are_not_refused(tmp_path, first, tasks):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_lm"] if not tasks else ["toy_qa", "toy_lm"], limit=2,
                                extra={"models": [{"name": "a", "shared": first, **tasks}, {"name": "b"}]}))
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    assert keys["a/standard/toy_lm/seed1"] == keys["b/standard/toy_lm/seed1"]  # one run folder, by design
    check_distinct_models(spec, cell_keys(spec))  # affddae/62eb9d0: ConfigError "run the same configuration"


def test_a_chat_and_a_plain_contract_on_a_rolling_task_run_and_share_the_cell(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_lm"], limit=2, extra={
        "models": [{"name": "chat", "shared": {"apply_chat_template": True}}, {"name": "plain"}]}))
    summary = run_spec(spec, tmp_path / "runs", progress=False)
    assert sorted(summary.ran) == ["chat/none/toy_lm/seed1", "chat/standard/toy_lm/seed1"]
    assert sorted(summary.by_other) == ["plain/none/toy_lm/seed1", "plain/standard/toy_lm/seed1"]


def test_a_copy_declaring_the_default_chat_settings_is_still_refused(tmp_path):
    """``apply_chat_template: false`` and ``fewshot_as_multiturn: true`` are the defaults: the same contract."""
    spec = load_spec(write_spec(tmp_path, tasks=["toy_lm"], limit=2, extra={"models": [
        {"name": "a"}, {"name": "b", "shared": {"apply_chat_template": False, "fewshot_as_multiturn": True}}]}))
    with pytest.raises(ConfigError, match=r"models 'a' and 'b' run the same configuration \(every cell of 'b' has the "
                                          r"run key of a cell of 'a': a/standard/toy_lm/seed1 and "
                                          r"b/standard/toy_lm/seed1 have [0-9a-f]{20}; "):
        check_distinct_models(spec, cell_keys(spec))
