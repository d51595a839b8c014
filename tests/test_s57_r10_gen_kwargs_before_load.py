"""Generation kwargs lm-eval would run with another meaning (:func:`tokrag_model.base.check_gen_kwarg_values`, s57 h2)
are refused before the model load, and in a leaderboard spec at its file and line (s57 r10, review of h2's 8126ba4).

h2 made the model refuse ``temperature=nan``, ``until=``, ``top_p=inf``, ``do_sample=maybe`` and a task YAML's
``max_gen_toks: 0`` at its first ``generate_until``; the pre-run check (``tasks.precheck``) caught their ValueError and
left them to the model, so ``lm_eval --gen_kwargs temperature=nan`` loaded the model first, and a spec's ``until: ""``
or ``top_p: .inf`` passed ``load_spec`` and was refused only inside a cell, after its model load. The CLI cases run
``tokrag eval``'s entry in-process with ``lm_eval.simple_evaluate`` (which builds the model) replaced by a function
that fails the test if called (:func:`tests.test_cli_early_checks.no_model`)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tests.leaderboard_helpers import write_spec
from tests.test_cli_early_checks import _refused, no_model  # noqa: F401 - the fixture


@pytest.mark.parametrize("given, line", [
    ("temperature=nan", "--gen_kwargs temperature=nan is not a finite number; give a number or drop temperature"),
    ("top_p=inf", "--gen_kwargs top_p=inf is not a finite number; give a number or drop top_p"),
    ("do_sample=maybe", "--gen_kwargs do_sample='maybe' is not true or false; give do_sample=false (every tokrag "
                        "method decodes greedily) or drop it"),
    ("until=", "--gen_kwargs until='' holds an empty stop string, which lm-eval's hf reads as a stop after the first "
               "token and a tokrag method would ignore; give a stop string, or drop until to keep the task's own stop "
               "strings (a task YAML's until: [] stops only at the end-of-text token)"),
])
def test_cli_value_with_another_meaning_is_refused_before_the_load(no_model, given, line):  # noqa: F811
    assert _refused(["--limit", "1", "--gen_kwargs", given]) == line


def test_a_task_yaml_value_is_refused_before_the_load_naming_the_task(tmp_path):
    """A task YAML's ``until: ""`` or ``max_gen_toks: 0``; ``--gen_kwargs`` over the YAML's value wins (a given
    budget replaces the YAML's 0), and the shipped task with greedy values passes."""
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_run_arguments

    base = Path(TASK_DIR) / "qa" / "nq_oracle_bm25.yaml"
    for name, gen in [("nq_empty_stop", "{until: '', max_gen_toks: 8}"),
                      ("nq_no_budget", "{until: ['\\n'], max_gen_toks: 0}")]:
        (tmp_path / f"{name}.yaml").write_text(f"include: {base}\ntask: {name}\ngeneration_kwargs: {gen}\n",
                                               encoding="utf-8")
    manager = TaskManager(include_path=[str(TASK_DIR), str(tmp_path)], include_defaults=False)
    with pytest.raises(ConfigError) as exc:
        check_run_arguments(manager, ["nq_empty_stop"], model="rag-standard", gen_kwargs={})
    assert str(exc.value).startswith("--model rag-standard: task nq_empty_stop's generation_kwargs: until='' holds "
                                     "an empty stop string"), exc.value
    assert str(exc.value).endswith("(fix the task's YAML, or a copy of the task)")
    with pytest.raises(ConfigError) as exc:
        check_run_arguments(manager, ["nq_no_budget"], model="rag-standard", gen_kwargs={})
    assert str(exc.value) == ("--model rag-standard: task nq_no_budget's generation_kwargs: max_gen_toks=0 leaves "
                              "no answer tokens; give an integer of 1 or more (fix the task's YAML, or a copy of the "
                              "task)")
    check_run_arguments(manager, ["nq_no_budget"], model="rag-standard", gen_kwargs={"max_gen_toks": 8})
    check_run_arguments(manager, ["nq_empty_stop"], model="rag-standard", gen_kwargs={"until": ["\n"]})
    check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", gen_kwargs={"temperature": 0.0})


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, s in enumerate(lines, 1) if s.strip().startswith(text))


@pytest.mark.parametrize("gen, key, said", [
    ({"max_gen_toks": 8, "until": ""}, "until", "until='' holds an empty stop string"),
    ({"max_gen_toks": 8, "until": ["\n", ""]}, "until", "until=['\\n', ''] holds an empty stop string"),
    ({"max_gen_toks": 8, "top_p": math.inf}, "top_p", "top_p=inf is not a finite number; give a number or drop top_p"),
    ({"max_gen_toks": 8, "temperature": math.inf}, "temperature", "temperature=inf is not a finite number"),
])
def test_spec_value_with_another_meaning_is_refused_at_its_line(tmp_path, gen, key, said):
    from leaderboards.spec import load_spec

    spec = write_spec(tmp_path, extra={"shared": {"model_args": {"pretrained": "x", "k": 3}, "gen_kwargs": gen,
                                                  "limit": 4}})
    with pytest.raises(ConfigError) as exc:
        load_spec(spec)
    msg = str(exc.value)
    assert msg.startswith(f"{spec.resolve()}:{_line_of(spec, key + ':')}: shared.gen_kwargs: {said}"), msg
    assert "\n" not in msg


def test_a_models_entry_value_is_named_with_its_place_and_line(tmp_path):
    from leaderboards.spec import load_spec

    models = [{"name": "a", "shared": {"model_args": {"pretrained": "a"}}},
              {"name": "b", "shared": {"model_args": {"pretrained": "b"}, "gen_kwargs": {"top_p": math.inf}}}]
    spec = write_spec(tmp_path, extra={"models": models})
    with pytest.raises(ConfigError) as exc:
        load_spec(spec)
    assert str(exc.value) == (f"{spec.resolve()}:{_line_of(spec, 'top_p:')}: models[1].shared.gen_kwargs: top_p=inf "
                              "is not a finite number; give a number or drop top_p")


def test_the_shipped_specs_and_greedy_values_still_load(tmp_path):
    from leaderboards.spec import load_spec

    for path in sorted((Path(TASK_DIR).parent / "leaderboards" / "specs").glob("*.yaml")):
        assert load_spec(path).methods, path
    spec = write_spec(tmp_path, extra={"shared": {"model_args": {"pretrained": "x", "k": 3}, "limit": 4, "gen_kwargs": {
        "max_gen_toks": 8, "until": ["\n\n", "Question:"], "do_sample": False, "temperature": 0.0, "top_p": 1.0}}})
    assert load_spec(spec).shared["gen_kwargs"]["until"] == ["\n\n", "Question:"]


def test_a_methods_specific_gen_kwargs_value_is_named_with_its_place_and_line(tmp_path):
    from leaderboards.spec import load_spec
    from tests.leaderboard_helpers import TOY

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"},
                "specific_gen_kwargs": {"until": ["\n", ""]}}]
    spec = write_spec(tmp_path, methods=methods)
    with pytest.raises(ConfigError) as exc:
        load_spec(spec)
    assert str(exc.value).startswith(f"{spec.resolve()}:{_line_of(spec, 'until:')}: methods[1].specific_gen_kwargs: "
                                     "until=['\\n', ''] holds an empty stop string"), exc.value
