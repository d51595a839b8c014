"""Review of s56 f1 (counterfactual ``--samples`` counted exactly): a counterfactual task that keeps none of its
questions is refused by ``tasks.precheck._check_samples_in_range``. The line advised "or raise its max_docs" also when
no ``max_docs`` limited the questions (every question of the split left out): raising it keeps nothing more. It now
says so only when ``max_docs`` cut the split (s56 r1)."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

LEFT = "no literal gold answer in the gold passage or no substitute of the same kind"


@pytest.fixture
def none_kept(monkeypatch):
    """A stand-in keep/skip rule that leaves out every question (as an oracle file none of whose gold passages holds
    a gold answer as written would)."""
    import tasks.rag as rag

    monkeypatch.setattr(rag, "counterfactual_kept", lambda row, pool: False)


def _refusal(kw: dict) -> str:
    from tasks.precheck import _check_samples_in_range

    with pytest.raises(ConfigError) as err:
        _check_samples_in_range("nq_oracle_gold_counterfactual", "nq_oracle", {"counterfactual": True, "gold_only": True,
                                                                               **kw}, [3, 0])
    return str(err.value)


def test_every_question_left_out_does_not_advise_max_docs(none_kept):
    assert _refusal({}) == ("--samples: task nq_oracle_gold_counterfactual has no documents (the questions of its "
                            f"'test' split, 2383 left out: {LEFT}), so index 0 is past them; lm-eval would fail after "
                            "the model load: drop the task, or give it questions whose gold passage holds a gold answer "
                            "as written")


def test_max_docs_that_cut_the_split_is_still_named(none_kept):
    assert _refusal({"max_docs": 2}) == (
        "--samples: task nq_oracle_gold_counterfactual has no documents (max_docs 2 of the 2383 questions of its 'test' "
        f"split, 2 left out: {LEFT}), so index 0 is past them; lm-eval would fail after the model load: drop the task "
        "from --samples, or raise its max_docs")
    # a max_docs past the split's end limits nothing: no max_docs advice either
    assert _refusal({"max_docs": 5000}).endswith("model load: drop the task, or give it questions whose gold passage "
                                                 "holds a gold answer as written")
