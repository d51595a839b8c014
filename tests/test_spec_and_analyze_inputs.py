"""Bad inputs found by a breaker, each one line and before any model loads:

* a fractional ``limit`` in a leaderboard spec (``shared``, a model's ``shared`` or a task entry): lm-eval reads 0.5 as
  a FRACTION of the task (hundreds of questions) and truncates 2.5 to 2, while the spec check called it "a positive
  number of documents"; an integral float (3.0) is refused as every other integer setting of a spec is;
* a spec file that is not valid YAML: ``<spec>:<line>:<col>: not valid YAML (<problem>)`` instead of PyYAML's
  several lines pointing at ``"<unicode string>"``;
* ``tokrag analyze``/``calibrate`` with ``--nq-corpus`` or ``--data-dir`` naming nothing: refused after the model
  load (8 s for SmolLM2-135M, minutes for a 7B model), now before it with the same message.
"""

from __future__ import annotations

import re

import pytest
import yaml
from leaderboard_helpers import write_spec

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize("limit", [0.5, 2.5, 3.0])
@pytest.mark.parametrize("where", ["shared", "model", "task"])
def test_fractional_limit_is_refused_naming_file_and_key(tmp_path, where, limit):
    if where == "shared":
        p, key = write_spec(tmp_path, limit=limit), "shared.limit"
    elif where == "task":
        p, key = write_spec(tmp_path, tasks=["toy_qa", {"task": "toy_qa_noise67", "limit": limit}]), \
            "tasks[1] (toy_qa_noise67).limit"
    else:
        p, key = write_spec(tmp_path, extra={"models": [{"name": "m", "shared": {"limit": limit}}]}), \
            "models[0].shared.limit"
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    text = _one_line(exc)
    assert str(p) in text and f"{key} must be a positive number of documents" in text and f"got {limit!r}" in text


def test_integer_limits_still_load(tmp_path):
    p = write_spec(tmp_path, limit=5, tasks=["toy_qa", {"task": "toy_qa_noise67", "limit": 2}])
    assert sorted({c.limit for c in load_spec(p).cells()}) == [2, 5]


@pytest.mark.parametrize("text, line, col, problem", [
    ("name: [unclosed\n", 2, 1, "expected ',' or ']', but got '<stream end>'; while parsing a flow sequence started "
                                "at line 1, column 7"),
    ("name: toy\n\tmethods: []\n", 2, 1, "found character '\\t' that cannot start any token"),
    ("name: toy\nshared: {limit: 3\n", 3, 1, "expected ',' or '}'"),
])
def test_broken_yaml_is_one_line_naming_the_spec_file_line_and_column(tmp_path, text, line, col, problem):
    p = tmp_path / "broken.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    msg = _one_line(exc)
    assert msg.startswith(f"{p.resolve()}:{line}:{col}: not valid YAML (") and problem in msg, msg
    assert "<unicode string>" not in msg


def test_broken_yaml_through_the_cli_is_one_line(tmp_path, capsys):
    from tokrag_model.cli import main

    p = tmp_path / "broken.yaml"
    p.write_text("name: [unclosed\n", encoding="utf-8")
    try:
        code = main(["leaderboard", "run", "--estimate", str(p)])
    except SystemExit as exc:
        code = exc.code
    assert code not in (0, None)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and f"{p.resolve()}:2:1: not valid YAML" in err[0], err


@pytest.mark.parametrize("bad, message", [
    (["--data", "nq", "--nq-corpus", "{tmp}/nonexist"], "corpus path {tmp}/nonexist does not exist"),
    (["--data", "nq", "--nq-corpus", "nq-wiki12k"], "unknown corpus 'nq-wiki12k' (did you mean 'nq-wiki-12k'?)"),
    (["--data", "nq", "--data-dir", "{tmp}/nonexist"], "data_dir argument = '{tmp}/nonexist': folder {tmp}/nonexist "
                                                       "does not exist"),
    (["--data", "wiki", "--data-dir", "{tmp}/nonexist"], "folder {tmp}/nonexist does not exist"),
])
def test_analyze_and_calibrate_refuse_missing_data_paths_before_the_model_loads(bad, message, tmp_path, monkeypatch):
    from tasks import analyze, calibrate

    def no_model(_args):
        raise AssertionError("the model was loaded before the data paths were checked")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    args = [b.format(tmp=tmp_path) for b in bad] + ["--n", "1", "--out", str(tmp_path / "out")]
    for main, extra in ((analyze.main, []), (calibrate.main, ["--split", "dev"])):
        with pytest.raises(ConfigError) as exc:
            main(args + extra)
        assert message.format(tmp=tmp_path) in _one_line(exc)


def test_named_corpus_and_existing_data_dir_pass_the_check(tmp_path):
    import argparse

    from tasks.analyze import check_data_paths

    for name in ("nq_open_oracle/nq-open-oracle.jsonl.gz", "dpr_wiki_sample1k/sample_data.jsonl"):  # what nq-dpr-1k
        (tmp_path / name).parent.mkdir()  # and the nq samples need (an empty folder is refused: test_s53_b2_analyze_data)
        (tmp_path / name).touch()
    check_data_paths(argparse.Namespace(data="wiki,nq", n=1, nq_corpus="nq-dpr-1k", data_dir=str(tmp_path)))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "1", "title": "t", "text": "x"}\n', encoding="utf-8")
    check_data_paths(argparse.Namespace(data="nq", n=1, nq_corpus=str(corpus), data_dir=None))
