"""A ``models:`` entry copied and renamed (the same weights and contract, so every cell of it has the run key of a
cell of the other model) is refused by ``run`` and ``run --estimate`` (s58 b2); on a spec whose cells already ran
(the copy added after the run, or runs made before that refusal) ``report``, ``rescore``, ``check --write`` and
``check`` still exited 0: the report printed the copy's section with the other model's numbers and ``check --write``
recorded them (s58 n2, finding 1). They now refuse the spec with the same one line before writing anything (s58 f4).
Two models that share only some run folders (a chat and a plain contract on a rolling task) still report and check;
the CI spec (one model) is unaffected. No model is loaded beyond ToyLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from leaderboards.cli import main as lb_main
from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import TOY, run_toy_spec, write_spec

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def copied(tmp_path_factory):
    """toy-a's 2 cells (standard, none on toy_qa, limit 2) run once; then the spec with toy-a and its renamed copy
    toy-b (the same weights), written after the run, in another folder. Returns (single spec, copy spec, runs)."""
    root = tmp_path_factory.mktemp("copied_model")
    single, runs = run_toy_spec(root / "a", tasks=["toy_qa"], limit=2, extra={"models": [{"name": "toy-a"}]})
    copy = write_spec(root / "b", tasks=["toy_qa"], limit=2, extra={"models": [{"name": "toy-a"}, {"name": "toy-b"}]})
    return single.path, copy, runs


def _expected(path: Path, runs: Path) -> str:
    spec = load_spec(path)
    key = {c.cell_id: k for c, k, _ in cell_keys(spec, runs)}["toy-a/standard/toy_qa/seed1"]
    assert key == {c.cell_id: k for c, k, _ in cell_keys(spec, runs)}["toy-b/standard/toy_qa/seed1"]
    return (f"leaderboard spec {path}: models 'toy-a' and 'toy-b' run the same configuration (every cell of "
            "'toy-b' has the run key of a cell of 'toy-a': toy-a/standard/toy_qa/seed1 and toy-b/standard/toy_qa/seed1 "
            f"have {key}; the same weights, contract and method arguments), so 'toy-b''s section would be 'toy-a''s "
            "numbers under another name; give 'toy-b' its own shared.model_args.pretrained (or another contract), or "
            "drop one of the two models")


def _refused(argv: list[str]) -> str:
    with pytest.raises(ConfigError) as err:
        lb_main(argv)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_the_copys_cells_are_finished_by_the_other_models_runs(copied):
    """The premise: the copy's cells need no run (the old report printed them as finished, 4 of 4)."""
    _, copy, runs = copied
    keys = {c.cell_id: k for c, k, _ in cell_keys(load_spec(copy), runs)}
    assert len(keys) == 4 and len(set(keys.values())) == 2
    assert all((runs / k / "DONE").is_file() for k in keys.values())


def test_report_refuses_the_copy_and_writes_nothing(copied, tmp_path):
    _, copy, runs = copied
    out = tmp_path / "rep"
    assert _refused(["report", str(copy), "--runs-dir", str(runs), "--out", str(out)]) == _expected(copy, runs)
    assert not out.exists()


def test_rescore_refuses_the_copy_and_writes_nothing(copied, tmp_path):
    _, copy, runs = copied
    out = tmp_path / "rescored"
    assert _refused(["rescore", str(copy), "--runs-dir", str(runs), "--out", str(out)]) == _expected(copy, runs)
    assert not out.exists()


def test_check_write_refuses_the_copy_and_writes_no_baseline(copied, tmp_path):
    _, copy, runs = copied
    baseline = tmp_path / "b.json"
    assert _refused(["check", str(copy), "--runs-dir", str(runs), "--baseline", str(baseline), "--write"]) \
        == _expected(copy, runs)
    assert not baseline.exists()


def test_check_refuses_the_copy_and_a_selection_of_it(copied, tmp_path, capsys):
    """Against the single model's baseline the old check listed the copy's cells as NEW and pointed at --write."""
    single, copy, runs = copied
    baseline = tmp_path / "b.json"
    assert lb_main(["check", str(single), "--runs-dir", str(runs), "--baseline", str(baseline), "--write"]) == 0
    written = baseline.read_bytes()
    capsys.readouterr()
    expected = _expected(copy, runs)
    assert _refused(["check", str(copy), "--runs-dir", str(runs), "--baseline", str(baseline)]) == expected
    assert _refused(["check", str(copy), "--runs-dir", str(runs), "--baseline", str(baseline),
                     "--models", "toy-a"]) == expected  # the whole spec's models, as run refuses a selection
    assert capsys.readouterr().out == ""  # refused before any OK/NEW line
    assert baseline.read_bytes() == written


def test_the_command_exits_2_with_the_one_line(copied, tmp_path, capsys):
    from tokrag_model.cli import main

    _, copy, runs = copied
    rc = main(["leaderboard", "report", str(copy), "--runs-dir", str(runs), "--out", str(tmp_path / "rep")])
    assert rc == 2
    assert f"tokrag leaderboard: error: {_expected(copy, runs)}" in capsys.readouterr().err


def test_the_single_model_spec_still_reports(copied, tmp_path):
    single, _, runs = copied
    out = tmp_path / "rep"
    assert lb_main(["report", str(single), "--runs-dir", str(runs), "--out", str(out)]) == 0
    rows = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert sorted((r["model"], r["method"], r["task"]) for r in rows) == [("toy-a", "none", "toy_qa"),
                                                                            ("toy-a", "standard", "toy_qa")]


def test_models_sharing_only_their_rolling_cells_still_report_and_check(tmp_path):
    """Two contracts over the same weights that differ only in their chat settings (here ``system_instruction``;
    ToyLM has no chat template, r4's case is a chat and a plain contract) share the run folder of their toy_lm
    (rolling) cell; that is right, and report, rescore, check --write and check go on (exit 0) with both models'
    cells."""
    path = write_spec(tmp_path, tasks=["toy_qa", "toy_lm"], limit=2,
                      methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}],
                      extra={"models": [{"name": "plain"}, {"name": "told", "shared": {"system_instruction": "Answer briefly."}}]})
    spec = load_spec(path)
    runs = tmp_path / "runs"
    from leaderboards.runner import run_spec

    run_spec(spec, runs, progress=False)
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec, runs)}
    assert keys["told/standard/toy_lm/seed1"] == keys["plain/standard/toy_lm/seed1"]
    assert keys["told/standard/toy_qa/seed1"] != keys["plain/standard/toy_qa/seed1"]
    out, baseline = tmp_path / "rep", tmp_path / "b.json"
    assert lb_main(["report", str(path), "--runs-dir", str(runs), "--out", str(out)]) == 0
    rows = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert sorted(f"{r['model']}/{r['method']}/{r['task']}/seed1" for r in rows) == sorted(keys)
    assert lb_main(["rescore", str(path), "--runs-dir", str(runs), "--out", str(tmp_path / "re")]) == 0
    assert lb_main(["check", str(path), "--runs-dir", str(runs), "--baseline", str(baseline), "--write"]) == 0
    assert sorted(json.loads(baseline.read_text(encoding="utf-8"))["cells"]) == sorted(keys)
    assert lb_main(["check", str(path), "--runs-dir", str(runs), "--baseline", str(baseline)]) == 0


def test_check_of_the_ci_spec_is_unaffected(tmp_path, capsys):
    """leaderboards/specs/ci.yaml has one model (no models: entry): check against its committed baseline goes on as
    before the refusal; on an empty runs folder each of its 10 cells is one ``missing from the runs`` FAIL (exit 1)."""
    path = REPO / "leaderboards" / "specs" / "ci.yaml"
    assert "models" not in yaml.safe_load(path.read_text(encoding="utf-8"))
    cells = [c.cell_id for c in load_spec(path).cells()]
    assert len(cells) == 10
    capsys.readouterr()
    assert lb_main(["check", str(path), "--runs-dir", str(tmp_path / "runs"), "--baseline",
                    str(REPO / "leaderboards" / "baselines" / "ci.json")]) == 1
    fails = [x for x in capsys.readouterr().out.splitlines() if x.startswith("FAIL ")]
    assert sorted(x.split()[1] for x in fails) == sorted(cells)
    assert all("missing from the runs" in x for x in fails)
    from leaderboards.cli import _refuse_copied_models

    assert _refuse_copied_models(load_spec(path), str(tmp_path / "runs")) is None
