"""leaderboards.rescore under ``apply_chat_template`` (the reference cells' setting): the logged prompt is the chat the
model's template rendered. A cell read from the folder of earlier task code had only its docs checked: a change of
what the task puts into the chat (here the few-shot pool of ``tasks/data.py``, the docs unchanged) was re-scored as
if the generations were the current task's. Now the prompt is rendered again by the model's own ``apply_chat_template``
over its tokenizer (no weights) and compared, and a run recorded under another chat template is refused; a changed
template file changes the run key, so such a cell has no finished run. Real SmolLM2-135M-Instruct, 2 questions,
2 generated tokens."""

from __future__ import annotations

import shutil

import pytest
from leaderboard_helpers import REPO, pin_cell_keys, rescore_cli, write_spec, reverse_fewshot_pool

import leaderboards.rescore
from leaderboards.rescore import StaleGenerationsError
from leaderboards.runner import IncompleteRunError, run_spec
from leaderboards.spec import load_spec

pytestmark = pytest.mark.slow

_METHODS = [{"name": "none", "model": "rag-none"}]


def _shared(pretrained: str) -> dict:
    return {"model_args": {"pretrained": pretrained, "dtype": "float32", "max_length": 2048}, "device": "cpu",
            "gen_kwargs": {"max_gen_toks": 2}, "limit": 2, "num_fewshot": 1, "batch_size": 1,
            "apply_chat_template": True}


def _spec(folder, include, pretrained):
    return write_spec(folder, include=include, tasks=["nq_oracle_gold"], limit=2, methods=_METHODS,
                      extra={"shared": _shared(pretrained), "reference": "none"})


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module", autouse=True)
def _code_read_once():
    """The code fingerprints of the run keys (tokrag_model/, retrieval/) computed once for the module: the fixture's
    run and the tests' keys are then the same while other work edits that code meanwhile."""
    import leaderboards.keys

    real, seen = leaderboards.keys.code_fingerprint, {}

    def once(module, memo):
        if module not in seen:
            seen[module] = real(module, memo)
        return seen[module]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(leaderboards.keys, "code_fingerprint", once)
        yield


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """nq_oracle_gold (2 questions, one few-shot example) from a copy of tokrag's tasks/qa, with the chat template of
    a copy of the SmolLM2 folder (its weights linked, not copied)."""
    from tokrag_model.loading import resolve_pretrained

    root = tmp_path_factory.mktemp("rescore_chat")
    shutil.copytree(REPO / "tasks" / "qa", root / "qa", ignore=shutil.ignore_patterns("__pycache__"))
    model = root / "model"
    model.mkdir()
    for f in resolve_pretrained("smollm2-135m-instruct").path.iterdir():
        if f.name.startswith("."):
            continue
        (model / f.name).symlink_to(f) if f.suffix == ".safetensors" else shutil.copy(f, model / f.name)
    run_spec(load_spec(_spec(root / "s", root / "qa", str(model))), root / "runs", progress=False)
    return root


def _copy(finished, tmp_path):
    shutil.copytree(finished / "qa", tmp_path / "qa")
    shutil.copytree(finished / "runs", tmp_path / "runs")
    spec = _spec(tmp_path / "s", tmp_path / "qa", str(finished / "model"))  # the model's path is in the run key
    (tmp_path / "qa" / "utils.py").write_text((tmp_path / "qa" / "utils.py").read_text() + "EDITED = 1\n")
    return spec, tmp_path / "runs"


def test_unchanged_chat_prompts_of_earlier_task_code_are_rescored(finished, tmp_path, capsys, monkeypatch):
    spec, runs = _copy(finished, tmp_path)
    rendered = []
    real = leaderboards.rescore.chat_renderer

    def spy(cell, cache=None):
        out = real(cell, cache)
        rendered.append(out[1])
        return out

    monkeypatch.setattr(leaderboards.rescore, "chat_renderer", spy)
    assert rescore_cli(spec, runs, tmp_path / "r") == 0
    assert "note: none/nq_oracle_gold/seed1: task folder changed since the run" in capsys.readouterr().out
    assert rendered and all(len(sha) == 64 for sha in rendered)  # the prompts were rendered and compared


def test_a_changed_few_shot_pool_is_refused_by_the_rendered_chat_prompt(finished, tmp_path, monkeypatch):
    """The docs are unchanged, the few-shot example inside the first user turn is not: the old code re-scored it."""
    spec, runs = _copy(finished, tmp_path)
    reverse_fewshot_pool(monkeypatch)
    with pytest.raises(StaleGenerationsError) as exc:
        rescore_cli(spec, runs, tmp_path / "r")
    (line,) = str(exc.value).splitlines()
    assert line.startswith("none/nq_oracle_gold/seed1: the samples in ")
    assert "(doc 0: arguments[0][0] " in line and " in the run -> " in line
    assert f"re-run it: tokrag leaderboard run {spec} --runs-dir {runs}" in line


def test_a_run_recorded_under_another_chat_template_is_refused(finished, tmp_path, monkeypatch):
    """The tokenizer renders with another template than the run recorded (here: its template text changed in a way
    that renders the same prompts): the hashes differ, the cell is refused."""
    import transformers

    spec, runs = _copy(finished, tmp_path)
    real = transformers.AutoTokenizer.from_pretrained

    def other_template(*a, **k):
        tok = real(*a, **k)
        tok.chat_template = tok.chat_template + "{#- edited #}"
        return tok

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", other_template)
    with pytest.raises(StaleGenerationsError) as exc:
        rescore_cli(spec, runs, tmp_path / "r")
    (line,) = str(exc.value).splitlines()
    assert line.startswith("none/nq_oracle_gold/seed1: the samples in ")
    assert "(chat template sha256 " in line and " in the run -> " in line
    assert f"re-run it: tokrag leaderboard run {spec} --runs-dir {runs}" in line


def test_a_changed_chat_template_file_leaves_the_cell_without_a_finished_run(finished, tmp_path):
    """The template's hash is in the run key (leaderboards.keys.chat_template_sha256): a changed file is a new cell."""
    spec, runs = _copy(finished, tmp_path)
    jinja = finished / "model" / "chat_template.jinja"
    text = jinja.read_text()
    try:
        jinja.write_text(text.replace("<|im_start|>system", "<|im_start|>system ", 1))
        with pytest.raises(IncompleteRunError) as exc:
            rescore_cli(spec, runs, tmp_path / "r")
    finally:
        jinja.write_text(text)
    text = str(exc.value)
    assert "none/nq_oracle_gold/seed1 (" in text and "its config differs in chat_template_sha256 " in text
    assert "run: tokrag leaderboard run " in text
