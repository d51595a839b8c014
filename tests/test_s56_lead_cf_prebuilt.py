"""A counterfactual task over a ``prebuilt:`` corpus is refused before any data is read (s56 r1's finding): the
build empties the NQ-oracle questions' gold passage ids over Pyserini's index (they are ids of the local corpora), and
the counterfactual branch then stopped with ``IndexError: list index out of range`` on ``r["gold_docids"][0]``, after
the model load and the retrieval. Noise and gold-only variants were refused there already."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks.rag import check_qa_options

LINE = (r"^corpus='prebuilt:wikipedia-dpr-100w': noise, counterfactual and gold-only variants draw passages from a "
        r"local corpus \(the gold passage is one of its passages\); use one$")


@pytest.mark.parametrize("variant", [{"counterfactual": True}, {"counterfactual": True, "counterfactual_scope": "all"},
                                     {"noise": 0.2}, {"gold_only": True}])
def test_a_variant_over_a_prebuilt_corpus_is_one_line(variant):
    with pytest.raises(ConfigError, match=LINE):
        check_qa_options("nq_oracle", corpus="prebuilt:wikipedia-dpr-100w", **variant)


def test_the_plain_task_over_a_prebuilt_corpus_and_a_counterfactual_over_a_local_one_pass():
    assert check_qa_options("nq_oracle", corpus="prebuilt:wikipedia-dpr-100w", k=3) == 3
    assert check_qa_options("nq_oracle", corpus="nq-wiki-12k", counterfactual=True) == 5
