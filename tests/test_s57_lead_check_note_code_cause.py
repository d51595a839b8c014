"""``tokrag leaderboard check``'s NOTE for a FAIL under another run key says a code field's cause plainly when both
run keys hash the code the same way (key schema 3 on both sides: no ``schema`` difference), and hedges it only when
a side was keyed before schema 3 (s57 r7's bb09cb7 gave ``runner.key_field_cause`` the differences; ``check``'s
``KeyChanged.render`` did not pass them, so its NOTE always hedged)."""
from leaderboards.check import KeyChanged
from leaderboards.runner import KEYED_ANOTHER_WAY


def _note(differences):
    return KeyChanged(cell="standard/toy_qa/seed1", key="k" * 20, baseline_key="b" * 20,
                      differences=tuple(differences)).render()


def test_same_schema_code_change_is_said_plainly():
    note = _note(["model_code 1111111111111111 -> 2222222222222222"])
    assert "model_code 1111111111111111 -> 2222222222222222 (the model code changed)" in note
    assert KEYED_ANOTHER_WAY not in note


def test_a_side_keyed_before_schema_3_is_hedged():
    note = _note(["schema 2 -> 3", "model_code 1111111111111111 -> 2222222222222222"])
    assert f"(the model code changed{KEYED_ANOTHER_WAY})" in note
