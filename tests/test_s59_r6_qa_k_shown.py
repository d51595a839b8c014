"""tasks.rag.check_qa_options (public; build_qa_docs and the pre-load check run it) names a ``k`` below 1 as the
rank rule shows a number (retrieval.cache._shown_rank), as f3's bdc3b04 did for a ``k`` too large for a float
(s59 r6, review of bdc3b04). Before: ``f"k={k}"`` wrote the whole int, so ``k=-10**5000`` (a Python caller's) was a
ValueError traceback ("Exceeds the limit (4300 digits) for integer string conversion", naming nothing) where the
docstring promises a ConfigError, and ``k=-10**400`` a 400-digit line."""

from __future__ import annotations

import sys

import pytest

from retrieval.errors import ConfigError
from tasks.rag import check_qa_options

TAIL = ": the number of passages per question must be >= 1"


@pytest.fixture(autouse=True)
def _default_limit():  # PYTHONINTMAXSTRDIGITS may lift the limit; the default's 4300 digits is what users have
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    yield
    sys.set_int_max_str_digits(before)


@pytest.mark.parametrize("k, shown", [
    (-10**5000, "an integer of 16610 bits, too large for a float"),
    (-10**400, "an integer of 1329 bits, too large for a float"),
    (-10**300, "-" + "1" + "0" * 38 + "..."),  # finite: its first 40 characters, as the rank rule shows it
], ids=["minus-10**5000", "minus-10**400", "minus-10**300"])  # pytest's own ids would write the int: ValueError
def test_huge_negative_k_is_one_short_line(k, shown):
    with pytest.raises(ConfigError) as err:
        check_qa_options("nq_open", k=k)
    assert str(err.value) == f"k={shown}{TAIL}"


@pytest.mark.parametrize("k, shown", [(0, "0"), (-1, "-1"), ("-3", "-3"), (-2.0, "-2")])
def test_small_k_worded_as_before(k, shown):
    with pytest.raises(ConfigError) as err:
        check_qa_options("nq_open", k=k)
    assert str(err.value) == f"k={shown}{TAIL}"
    assert check_qa_options("nq_open", k=5) == 5


JAVA = ": the number of passages per question must be an integer >= 1 and at most 2147483647 (Lucene and Pyserini take it as a Java int)"


@pytest.mark.parametrize("k, shown", [(2**31, "2147483648"), (10**300, "1" + "0" * 39 + "..."),
                                      (10**400, "an integer of 1329 bits, too large for a float")],
                         ids=["2**31", "10**300", "10**400"])
def test_k_past_the_java_int_limit_refused_before_the_load(k, shown):
    """A task that retrieves hands ``k`` to retrieve(), which refuses one above 2**31 - 1 (retrieval.errors.check_k):
    after the model load before; check_qa_options, which the pre-load check runs, now says it as it says 10**400."""
    with pytest.raises(ConfigError) as err:
        check_qa_options("nq_open", k=k)
    assert str(err.value) == f"k={shown}{JAVA}"
    assert check_qa_options("nq_open", k=2**31 - 1) == 2**31 - 1


def test_gold_only_k_is_no_hit_count():
    """A gold-only task retrieves nothing (k only cuts its passages): a large k passes as before; one too large for a
    float is still refused (n_noise's k * noise), without naming Lucene."""
    assert check_qa_options("nq_oracle", k=2**31, gold_only=True) == 2**31
    with pytest.raises(ConfigError) as err:
        check_qa_options("nq_oracle", k=10**400, gold_only=True)
    assert str(err.value) == ("k=an integer of 1329 bits, too large for a float: the number of passages per question "
                              "must be an integer >= 1 that a float holds")


def test_task_metadata_hits_past_the_limit():
    """The task path: ``--metadata '{"hits": 2147483648}'`` reaches check_qa_options through qa_arguments."""
    from tasks.utils import qa_arguments

    with pytest.raises(ConfigError) as err:
        qa_arguments({"dataset": "nq_oracle", "hits": 2**31}, "nq_oracle_bm25")
    assert str(err.value) == f"k=2147483648{JAVA}"
