"""Valid JSON that Python's reader cannot take (an integer of more than 4300 digits: a plain ValueError; nesting past
the recursion limit: a RecursionError) in the readers outside the six that ``retrieval.io.json_limit_error`` covered
(s60 j1; s59 r4's and f3's leftovers). Before, on e1a5527's tree:

* ``tokrag leaderboard check --baseline F``: a RecursionError traceback for a deep file, and ``invalid JSON (Exceeds
  the limit (4300 digits) for integer string conversion ...; use sys.set_int_max_str_digits() ...)`` for a long
  integer. Now json_limit_error's line naming the file, and the way out (exit 2).
* ``preset=F`` of ``--model tokrag`` (``read_preset``): a RecursionError or ValueError traceback. Now one line.
* ``tokrag retrieve eval --run RUN.trec`` with a deep ``RUN.trec.meta.json`` beside it: a RecursionError traceback,
  with or without ``--corpus``. The metadata is advisory there (a malformed one is skipped): now read as malformed.
* a records line of ``tokrag analyze`` / ``calibrate`` nested too deep: a RecursionError traceback. Now skipped with
  the WARNING naming ``file:line`` that a damaged line (or one with a long integer) already got; that sample is
  recomputed.
"""

from __future__ import annotations

import json
import logging

import pytest
from json_limit_helpers import BIG, DEEP, DIGITS, NESTED, limits  # noqa: F401 (limits: an autouse fixture)
from leaderboard_helpers import TOY, write_spec

from retrieval.errors import ConfigError
from tokrag_model.cli import main


@pytest.mark.parametrize("text, why", [('{"cells": %s, "tolerances": {}}' % DEEP, NESTED),
                                       ('{"cells": {}, "tolerances": {"em": {"abs": %s}}}' % BIG, DIGITS)],
                         ids=["deep", "digits"])
def test_check_baseline_is_one_line(tmp_path, capsys, text, why):
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3, methods=[{"name": "standard", "model": TOY}])
    base = tmp_path / "base.json"
    base.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["leaderboard", "check", str(spec), "--baseline", str(base), "--runs-dir", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"tokrag leaderboard: error: baseline {base}: {why}, or move it aside and write a new baseline with check --write")


def test_a_malformed_baseline_is_worded_as_before(tmp_path):
    from leaderboards.check import load_baseline

    base = tmp_path / "base.json"
    base.write_text('{"cells": {}, "tolerances": {},}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^baseline .*base\.json: invalid JSON \(Expecting property name"):
        load_baseline(base)


@pytest.mark.parametrize("text, why", [(DEEP, NESTED), ('{"format": 1, "params": {"layer": %s}}' % BIG, DIGITS)],
                         ids=["deep", "digits"])
def test_a_preset_is_one_line(tmp_path, text, why):
    from tokrag_model.methods.tokrag import read_preset

    preset = tmp_path / "preset.json"
    preset.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_preset(str(preset))
    assert str(err.value) == f"preset={preset}: {why}"


@pytest.fixture
def trec_run(tmp_path, monkeypatch):
    """``r/run.trec`` (BM25 over one passage, with its ctxs and ``.meta.json``), in the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."})
                                      + "\n", encoding="utf-8")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "capital of france", "answers": ["Paris"]})
                                      + "\n", encoding="utf-8")
    assert main(["retrieve", "--corpus", "p.jsonl", "--bm25", "--topics", "q.jsonl", "--hits", "1",
                 "--output", "r/run.trec"]) == 0
    return tmp_path


def test_a_deep_run_metadata_is_read_as_malformed(trec_run, capsys):
    (trec_run / "r" / "run.trec.meta.json").write_text(DEEP, encoding="utf-8")
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", "r/run.trec", "--corpus", "p.jsonl", "--topics", "q.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer_recall@1"] == 1.0
    assert main(["retrieve", "eval", "--run", "r/run.trec", "--topics", "q.jsonl", "--json"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tokrag retrieve: error: --run r/run.trec: a TREC run needs --corpus to score answer recall (passage texts); "
        "pass the corpus it was retrieved from as --corpus")  # as for a malformed .meta.json


def test_a_deep_records_line_is_skipped_with_its_warning(tmp_path, caplog):
    from tasks.analyze import _repair_records

    rec = tmp_path / "records.jsonl"
    rec.write_text('{"sample": "a", "records": []}\n' + DEEP + '\n{"sample": "b", "records": []}\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        assert sorted(_repair_records(rec)) == ["a", "b"]
    assert [r.getMessage() for r in caplog.records] == [
        f"{rec}:2: not a complete record (a write cut by a kill?); skipped, that sample is recomputed"]
