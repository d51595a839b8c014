"""A ``loglikelihood_rolling`` cell finished before bd0f879 under a contract that sets ``apply_chat_template`` /
``system_instruction`` (keyed with them) was no longer found: bd0f879 runs such a cell without them (lm-eval scores a
rolling request's text alone, so the numbers are the same), which gave it another key. ``tokrag leaderboard check``
against a baseline written from those runs failed ("FAIL standard/toy_lm/seed1 missing from the runs: ... not run
yet (no run folder); a finished run of this cell with other inputs exists ...: its config differs in
apply_chat_template true -> false; chat_template_sha256 null -> (absent); system_instruction Be brief. -> (absent)"),
``run --estimate`` blamed "chat_template_sha256 differs: the chat template changed" and ``run`` computed the cell again
(repro /work/scratch/s50/r3/probe2.py, probe2.out). The finished run under the key with the contract's flags is now
adopted, as a run under the legacy data key is (:func:`leaderboards.keys.adopt_legacy_key`,
:func:`leaderboards.keys.rolling_chat_legacy_cell`). The run before bd0f879 is made here with the old cell rule
(``task_unchatted``: plain text only) patched in; a ToyLM with a chat template renders the QA prompts."""
from __future__ import annotations

import yaml
from leaderboard_helpers import write_spec

import leaderboards.spec as spec_mod
from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.keys import cell_keys
from leaderboards.report import collect, compute
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

CHATTY = '''from tests.leaderboard_fixtures.toy_lm import ToyLM


class ChattyToyLM(ToyLM):
    @property
    def tokenizer_name(self):
        return "toy"

    def chat_template(self, chat_template=False):
        return "toy-template"

    def apply_chat_template(self, chat_history, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in chat_history) + ("<a>" if add_generation_prompt else "")
'''
LM, QA = "standard/toy_lm/seed1", "standard/toy_qa/seed1"


def _old_rule(task, include_path):  # bd0f879's parent: only a plain-text task ran without the chat flags
    return "plain-text language-modelling task" if spec_mod.task_plain_text(task, include_path) else None


def _spec(tmp_path, monkeypatch, contract):
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "chatty_toy_r3.py").write_text(CHATTY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    path = write_spec(tmp_path / "s", name="mix", tasks=["toy_qa", "toy_lm"], limit=2,
                      methods=[{"name": "standard", "model": "chatty_toy_r3:ChattyToyLM", "model_args": {"mode": "first"}}])
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["shared"].update(contract)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _run_before(path, runs, monkeypatch):
    """Run the spec as the runner before bd0f879 did; its keys."""
    new_rule = spec_mod.task_unchatted
    monkeypatch.setattr(spec_mod, "task_unchatted", _old_rule)
    spec = load_spec(path)
    old = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    run_spec(spec, runs, progress=False)
    monkeypatch.setattr(spec_mod, "task_unchatted", new_rule)
    return spec, old


def test_a_rolling_cell_run_with_the_contracts_chat_flags_is_found_again(tmp_path, monkeypatch):
    path = _spec(tmp_path, monkeypatch, {"apply_chat_template": True, "system_instruction": "Be brief."})
    runs = tmp_path / "runs"
    before, old = _run_before(path, runs, monkeypatch)
    write_baseline(before, runs, tmp_path / "baseline.json")
    spec = load_spec(path)
    lm = {c.cell_id: c for c in spec.cells()}[LM]
    assert (lm.apply_chat_template, lm.system_instruction) == (False, None)  # bd0f879: runs without them
    fresh = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    assert fresh[LM] != old[LM] and fresh[QA] == old[QA]  # its own key is new ...
    assert {c.cell_id: k for c, k, _ in cell_keys(spec, runs)} == old  # ... and the finished run is found (was fresh)
    lines = [line.render() for line in check_against_baseline(spec, runs, tmp_path / "baseline.json")]
    assert len(lines) == 6 and all(line.startswith("OK ") for line in lines), lines  # was FAIL ... missing from the runs
    summary = run_spec(spec, runs, progress=False)
    assert (summary.ran, sorted(summary.skipped)) == ([], [LM, QA])  # not computed again
    contract = compute(spec, collect(spec, runs), timings=False)["contract"]  # the run's own record, said as run
    assert "apply_chat_template: True (as run, from the results: on toy_qa; not on toy_lm: loglikelihood_rolling, " \
           "whose requests carry the text without the context lm-eval renders)" in contract
    assert "apply_chat_template.toy_lm: false (loglikelihood_rolling: lm-eval scores the text alone)" in contract


def test_a_contract_without_fewshot_as_multiturn_finds_its_rolling_run_too(tmp_path, monkeypatch):
    """bd0f879 also gave a rolling cell the default fewshot_as_multiturn: a plain contract that turns it off changed
    that cell's key as well."""
    path = _spec(tmp_path, monkeypatch, {"fewshot_as_multiturn": False})
    runs = tmp_path / "runs"
    _, old = _run_before(path, runs, monkeypatch)
    spec = load_spec(path)
    assert {c.cell_id: k for c, k, _ in cell_keys(spec)}[LM] != old[LM]
    assert {c.cell_id: k for c, k, _ in cell_keys(spec, runs)} == old


def test_which_cells_have_a_chat_legacy_key(tmp_path, monkeypatch):
    from leaderboards.keys import rolling_chat_legacy_cell

    chat = load_spec(_spec(tmp_path, monkeypatch, {"apply_chat_template": True}))
    cells = {c.cell_id: c for c in chat.cells()}
    legacy = rolling_chat_legacy_cell(chat, cells[LM])
    assert (legacy.apply_chat_template, legacy.system_instruction, legacy.fewshot_as_multiturn) == (True, None, True)
    assert rolling_chat_legacy_cell(chat, cells[QA]) is None  # not rolling: it kept its flags
    (tmp_path / "plain").mkdir()
    plain = load_spec(write_spec(tmp_path / "plain", tasks=["toy_lm"], limit=2))
    assert [rolling_chat_legacy_cell(plain, c) for c in plain.cells()] == [None, None]  # a contract without them
