"""The shared set-up of the tests of valid JSON past Python's digit or recursion limit
(:func:`retrieval.io.json_limit_error`'s rule; tests/test_s60_j1_json_limits.py, test_s60_j1_json_limits_more.py,
test_s60_r1_runner_json_limits.py, test_s60_r2_json_limits.py, test_s60_r3_json_depth_*.py): the deep and long-integer
texts, the two reasons the refusals name, and the fixture that pins the limits those reasons quote.

A test module imports ``limits`` (an autouse fixture: imported into the module, it runs for each of its tests)."""

from __future__ import annotations

import sys

import pytest

DEEP = "[" * 100_000 + "]" * 100_000
"""A JSON list nested 100,000 deep: past Python's recursion limit (a RecursionError from :func:`json.loads`)."""

BIG = "1" + "0" * 5000
"""A JSON integer of 5001 digits: past Python's 4300-digit limit (a plain ValueError from :func:`json.loads`)."""

NESTED = "holds JSON nested too deep for Python's JSON reader (past its recursion limit, 1000); fix the nesting"
"""The reason of a whole file nested too deep (``json_limit_error(..., whole_file=True)``) under :func:`limits`."""

DIGITS = "holds an integer of more than 4300 digits, more than Python's JSON reader converts; fix the number"
"""The reason of a whole file holding :data:`BIG` (``json_limit_error(..., whole_file=True)``) under :func:`limits`."""


@pytest.fixture(autouse=True)
def limits():
    """Python's digit limit 4300 and recursion limit 1000 for the test (``PYTHONINTMAXSTRDIGITS`` may set another
    digit limit: the lines name these), restored after it."""
    digits, depth = sys.get_int_max_str_digits(), sys.getrecursionlimit()
    sys.set_int_max_str_digits(4300)
    sys.setrecursionlimit(1000)
    yield
    sys.set_int_max_str_digits(digits)
    sys.setrecursionlimit(depth)
