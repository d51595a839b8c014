"""leaderboards.rescore re-scores a cell only when what produced its generations is unchanged. A task YAML given
``generation_kwargs: {until: ["Paris"], max_gen_toks: 2}`` after the run (the breaker's case) changed the task
fingerprint; ``report`` refused, but ``rescore`` read the folder of the earlier task code, said only "task folder
changed since the run; re-scoring the samples of ..." and wrote the old generations' numbers under a contract with the
new ``until``. Now the run's recorded task config (``results.json`` ``configs.<task>``) must equal the current one in
every field that shapes the requests; a metric change (``process_results``, ``metric_list``, the metadata version) is
still re-scored."""

from __future__ import annotations

import json

import pytest
from leaderboard_helpers import copy_toy_runs, edit, finished_toy_runs, pin_cell_keys, rescore_cli

from leaderboards.rescore import generation_difference
from leaderboards.runner import IncompleteRunError

STOPS = 'generation_kwargs: {until: ["\\n"], max_gen_toks: 8, do_sample: false}'


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """toy_qa and toy_qa_noise67 (2 methods, 4 questions) run from a copy of the fixture tasks; tests copy it."""
    return finished_toy_runs(tmp_path_factory.mktemp("rescore_stale"), tasks=["toy_qa", "toy_qa_noise67"], limit=4)


def _copy(finished, tmp_path):
    spec, runs = copy_toy_runs(finished, tmp_path, tasks=["toy_qa", "toy_qa_noise67"], limit=4)
    return spec, runs, tmp_path / "tasks" / "toy_qa" / "toy_qa.yaml"


def test_changed_generation_kwargs_are_refused_naming_cell_field_and_rerun(finished, tmp_path, capsys):
    spec, runs, yaml = _copy(finished, tmp_path)
    edit(yaml, STOPS, 'generation_kwargs: {until: ["Paris"], max_gen_toks: 2, do_sample: false}')
    capsys.readouterr()
    with pytest.raises(IncompleteRunError) as exc:  # StaleGenerationsError; the CLI's exit 2
        rescore_cli(spec, runs, tmp_path / "r")
    lines = str(exc.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["standard/toy_qa/seed1", "none/toy_qa/seed1"]
    for line in lines:  # the spec's max_gen_toks 8 is over the YAML's 2: until is what changed
        assert 'generation_kwargs.until: ["\\n"] in the run -> ["Paris"] now' in line
        assert "only a metric change can be re-scored, re-run it: tokrag leaderboard run " in line
        assert f"--runs-dir {runs}" in line
    assert not (tmp_path / "r").exists()  # no report with the old generations under the new contract
    assert "task folder changed" not in capsys.readouterr().out


def test_allow_missing_leaves_the_stale_cells_out(finished, tmp_path, capsys):
    spec, runs, yaml = _copy(finished, tmp_path)
    edit(yaml, STOPS, 'generation_kwargs: {until: ["Paris"], max_gen_toks: 2, do_sample: false}')
    capsys.readouterr()
    assert rescore_cli(spec, runs, tmp_path / "r", "--allow-missing") == 0
    cap = capsys.readouterr()
    missing = [line for line in cap.err.splitlines() if line.startswith("note: missing ")]
    assert sorted(m.split()[2] for m in missing) == ["none/toy_qa/seed1", "standard/toy_qa/seed1"], cap.err
    assert all("generation_kwargs.until" in m for m in missing)
    # toy_qa_noise67 shares the folder (a new task fingerprint) but not the YAML: its runs are re-scored, said so
    changed = sorted(line.split()[1] for line in cap.out.splitlines() if "task folder changed" in line)
    assert changed == ["none/toy_qa_noise67/seed1:", "standard/toy_qa_noise67/seed1:"]
    assert "Cells with results: 2 of 4; 2 missing" in cap.out
    summary = json.loads(cap.out.strip().splitlines()[-1])
    assert summary["cells"] == 2 and summary["cells_from_earlier_task_code"] == 2
    rows = json.loads((tmp_path / "r" / "leaderboard.json").read_text())["rows"]
    assert {r["task"] for r in rows if r.get("metrics")} <= {"toy_qa_noise67"}


@pytest.mark.parametrize("old, new, field", [
    ("Question: {{question}}\\nAnswer:", "Q: {{question}}\\nA:", "doc_to_text"),
    ("metadata: {version: 1.0}", "metadata: {version: 1.0, hits: 2}", "metadata.hits: null in the run -> 2 now"),
    ("test_split: test", "test_split: test\nnum_fewshot: 2\nfewshot_split: test",
     'fewshot_config.split: null in the run -> "test" now'),
])
def test_a_changed_prompt_metadata_or_fewshot_setting_is_refused(finished, tmp_path, old, new, field):
    spec, runs, yaml = _copy(finished, tmp_path)
    edit(yaml, old, new)
    with pytest.raises(IncompleteRunError) as exc:
        rescore_cli(spec, runs, tmp_path / "r")
    assert str(exc.value).startswith("standard/toy_qa/seed1: ") and field in str(exc.value)


def test_a_metric_fix_with_a_version_bump_is_still_rescored(finished, tmp_path, capsys):
    spec, runs, yaml = _copy(finished, tmp_path)
    edit(yaml, "metadata: {version: 1.0}", "metadata: {version: 2.0}")
    edit(yaml, "  - {metric: answer_recall, aggregation: mean, higher_is_better: true}\n", "")
    utils = yaml.parent / "utils.py"
    edit(utils, 'scores = qa_scores(results[0], doc["answers"])',
          'scores = qa_scores(results[0], doc["answers"])\n    scores["em"] = 0.0')
    capsys.readouterr()
    assert rescore_cli(spec, runs, tmp_path / "r") == 0
    out = capsys.readouterr().out
    assert "note: standard/toy_qa/seed1: task folder changed since the run" in out
    assert json.loads(out.strip().splitlines()[-1])["cells_from_earlier_task_code"] == 4  # toy_qa_noise67 shares utils.py
    rows = json.loads((tmp_path / "r" / "leaderboard.json").read_text())["rows"]
    assert {r["metrics"]["em"]["mean"] for r in rows} == {0.0}


def test_generation_difference_ignores_only_rescorable_fields():
    run = {"task": "t", "doc_to_text": "Q: {{q}}", "generation_kwargs": {"until": ["\n"], "max_gen_toks": 8},
           "metric_list": [{"metric": "em"}], "process_results": "def a(): pass", "filter_list": [{"name": "x"}],
           "custom_dataset": "def load(): pass", "metadata": {"version": 1.0, "hits": 5, "config_source": "/a.yaml",
                                                              "tokrag_data": {"run_fingerprint": "f"}}}
    now = {**run, "metric_list": [{"metric": "f1"}], "process_results": "def b(): pass", "filter_list": [],
           "custom_dataset": "def logged_docs(**_): pass", "metadata": {"version": 2.0, "hits": 5}}
    assert generation_difference(run, now) is None
    assert generation_difference(run, {**now, "metadata": {"version": 2.0, "hits": 3}}) == \
        "metadata.hits: 5 in the run -> 3 now"
    assert generation_difference(run, {**now, "generation_kwargs": {"until": ["\n"]}}) == \
        "generation_kwargs.max_gen_toks: 8 in the run -> null now"
    assert generation_difference(run, {**now, "description": "Answer."}) == \
        'description: null in the run -> "Answer." now'
    # the breaker's YAML edit: its generation_kwargs replace the included YAML's (the spec's max_gen_toks over both)
    assert generation_difference(run, {**now, "generation_kwargs": {"until": ["Paris"], "max_gen_toks": 8}}) == \
        'generation_kwargs.until: ["\\n"] in the run -> ["Paris"] now'
    assert generation_difference(run, {**now, "doc_to_text": "A", "generation_kwargs": {"until": ["Paris"]}}) == \
        'doc_to_text: "Q: {{q}}" in the run -> "A" now; also generation_kwargs.max_gen_toks, generation_kwargs.until'
    assert "records no task config" in generation_difference(None, now)


def test_requests_are_rebuilt_once_per_task_and_seed_not_per_method(finished, tmp_path, capsys, monkeypatch):
    """Both methods' cells of a task share the requests (same seed, limit, gen_kwargs): built once per task."""
    from lm_eval.api.task import ConfigurableTask

    spec, runs, yaml = _copy(finished, tmp_path)
    utils = yaml.parent / "utils.py"
    utils.write_text(utils.read_text() + "EDITED = 1  # a new task fingerprint, the same requests\n")
    calls = []
    build = ConfigurableTask.build_all_requests

    def counted(self, *args, **kwargs):
        calls.append(self.config.task)
        return build(self, *args, **kwargs)

    monkeypatch.setattr(ConfigurableTask, "build_all_requests", counted)
    assert rescore_cli(spec, runs, tmp_path / "r") == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["cells_from_earlier_task_code"] == 4
    assert sorted(calls) == ["toy_qa", "toy_qa_noise67"]
