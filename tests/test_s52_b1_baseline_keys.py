"""A hand-edited baseline whose edit had no effect, silently (s52 b1, /work/scratch/s52/b1/probe_baseline.py,
probe_baseline.txt): ``tolerances.em.flip: 3`` (for ``flips``) left em at the default 1 flip and check said '16
checks: 16 OK'; a top-level ``tolerance`` or ``question`` was ignored; a cell pasted twice into ``cells`` kept only
its last entry (JSON's rule), so the values the user meant to check were not; a value of ``Infinity`` in ``cells`` was
read and failed every check as 'baseline inf'. ``load_baseline`` now refuses each in one line naming the key."""

import json

import pytest

from leaderboards.check import load_baseline
from retrieval.errors import ConfigError

CID = "standard/toy_qa/seed1"
FIX = "edit the file, or move it aside and write a new baseline with check --write"


def baseline(**change):
    b = {"spec": "toy", "tolerances": {"em": {"abs": 0.04, "unit": "fraction of questions", "flips": 1}},
         "cells": {CID: {"em": 0.75}}, "n": {CID: 12}, "questions": {CID: {"em": [1, 2, 3]}}}
    b.update(change)
    return b


def refused(tmp_path, text):
    p = tmp_path / "b.json"
    p.write_text(text if isinstance(text, str) else json.dumps(text), encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_baseline(p)
    return str(exc.value).replace(str(p), "B")


def test_a_misspelt_tolerance_key_is_refused(tmp_path):
    b = baseline(tolerances={"em": {"abs": 0.04, "flip": 3}})
    assert refused(tmp_path, b) == ("baseline B: unknown key 'tolerances.em.flip' (did you mean 'flips'?); the keys of "
                                    f"tolerances.em are abs, flips, unit, raised_from; {FIX}")


@pytest.mark.parametrize("key, hint", [("question", " (did you mean 'questions'?)"), ("comment", "")])
def test_an_unknown_top_level_key_is_refused(tmp_path, key, hint):
    assert refused(tmp_path, baseline(**{key: {}})) == (
        f"baseline B: unknown key {key!r}{hint}; the keys at the top are cells, configs, machines, n, questions, spec, tolerances; {FIX}")


def test_a_cell_given_twice_is_refused(tmp_path):
    text = json.dumps(baseline()).replace('"cells": {', f'"cells": {{"{CID}": {{"em": 0.5}}, ', 1)
    assert json.loads(text)["cells"] == {CID: {"em": 0.75}}  # what JSON alone keeps
    assert refused(tmp_path, text) == (f"baseline B: key {CID!r} is given twice in one object (JSON keeps the last one "
                                       f"silently); {FIX}")


@pytest.mark.parametrize("value, shown", [("Infinity", "the number inf"), ("-Infinity", "the number -inf")])
def test_an_infinite_value_is_refused(tmp_path, value, shown):
    text = json.dumps(baseline()).replace('"em": 0.75', f'"em": {value}')
    assert refused(tmp_path, text) == f"baseline B: cells.{CID}.em must be a finite number, got {shown}; {FIX}"


def test_the_committed_baseline_and_a_written_one_still_load(tmp_path):
    assert len(load_baseline("leaderboards/baselines/ci.json")["cells"]) == 10
    p = tmp_path / "b.json"
    p.write_text(json.dumps(baseline()), encoding="utf-8")
    assert load_baseline(p)["tolerances"]["em"]["flips"] == 1
