"""Shared helpers of the logging tests (tests/test_logs*.py): save and restore loggers a test changes."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterable, Iterator


@contextmanager
def saved_loggers(names: Iterable[str]) -> Iterator[None]:
    """Save the handlers, level and propagation of the named loggers, clear their handlers, and restore all three
    on exit. The root logger is not among them unless named; a test that changes it restores it itself."""
    saved = {n: (list(logging.getLogger(n).handlers), logging.getLogger(n).level, logging.getLogger(n).propagate)
             for n in names}
    for n in saved:
        logging.getLogger(n).handlers.clear()
    try:
        yield
    finally:
        for n, (handlers, level, propagate) in saved.items():
            lg = logging.getLogger(n)
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate
