"""s51 r8 (review of f5's 4ab59f1): a baseline's per-question doc ids read back as the ids they were written from.

stored_questions turned every doc id whose text, less leading minus signs, was digits into a number: '007' was
stored as 7 and read back as '7' (2 questions 'differ' from a baseline written from the same runs), '--1' and '²'
raised ValueError (check --write ended in a traceback). lm-eval's own doc ids are ints, whose text round-trips."""

import json

import pytest

from leaderboards.check import question_flips, stored_questions

IDS = ["0", "7", "12", "-1", "007", "--1", "²", " 7", "a"]


@pytest.mark.parametrize("graded", [False, True])
def test_written_ids_read_back_as_the_same_questions(graded):
    runs = {d: (0.5 if graded and i % 2 else float(i % 3 == 0)) for i, d in enumerate(IDS)}
    stored = json.loads(json.dumps(stored_questions(runs)))  # as check --write writes and check reads the file
    flips = question_flips("m/t/seed1", "em", runs, stored, 1)
    assert (flips.changed, flips.down, flips.up, flips.unmatched) == (0, (), (), ())


def test_only_a_numbers_own_text_is_stored_as_a_number():
    runs = {d: 1.0 for d in IDS}
    assert stored_questions(runs) == [-1, 0, 7, 12, " 7", "--1", "007", "a", "²"]
