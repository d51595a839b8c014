"""``tokrag eval --help`` says what tokrag adds before lm-eval's ``run`` options, ``tokrag --version`` /
``tokrag eval --version`` print the versions a result records, and a ``tokrag eval`` run without ``--tasks`` is one
error line naming ``--tasks`` (exit status 2), not lm-eval's ``ValueError: No tasks specified`` traceback
(``tokrag_model.eval_cli``, ``tokrag_model.cli``)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from retrieval.errors import ConfigError
from tokrag_model import cli, eval_cli
from tokrag_model.loading import ALIASES
from tokrag_model.methods import METHODS


def test_tokrag_eval_help_leads_with_what_tokrag_adds(capsys):
    for argv in (["--help"], ["-h"], [], ["run", "--help"]):
        assert eval_cli.main(argv) == 0, argv
        out = capsys.readouterr().out
        assert out.startswith("tokrag eval: "), (argv, out[:200])
        head, options = out.split("lm-eval's options", 1)
        for name in [*METHODS, *ALIASES]:  # the registry's names, not a copy
            assert name in head, (argv, name)
        assert "tasks/README.md" in head and "'tokrag eval ls tasks'" in head and "README.md, 'Running evaluations'" in head
        assert "--output_path DIR" in head and "config.tokrag_versions" in head
        # a bring-your-own user reading only --help finds the task and the README section that takes their files
        assert "--tasks rag_qa_bm25" in head and "'Your own questions and corpus'" in head, head
        for flag in ("--model_args", "--tasks", "--output_path", "--log_samples", "--use_cache"):  # lm-eval run's
            assert flag in options, (argv, flag)


def test_help_text_names_every_method_and_alias_of_the_registry(monkeypatch):
    import tokrag_model.methods

    monkeypatch.setitem(tokrag_model.methods.METHODS, "rag-made-up", "none:RagNoneLM")
    assert "rag-made-up" in eval_cli.help_text()


def test_tokrag_help_lists_each_command_on_one_line_and_the_version_flag(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, (_, _, line) in cli._COMMANDS.items():
        assert f"  {name:<12} {line}" in lines, name
    assert "'tokrag --version'" in out


def test_version_prints_the_versions_a_result_records(capsys):
    from tokrag_model.base import RAGMethodLM

    recorded = RAGMethodLM._library_versions.func(None)  # what config.tokrag_versions holds (without tokrag's own)
    for main in (cli.main, eval_cli.main):
        assert main(["--version"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split()[:2] == ["tokrag", version("tokrag")], lines[0]
        printed = dict(line.split(" ", 1) for line in lines[1:])
        for name in ("lm_eval", "torch", "transformers", "pyserini"):
            assert printed[name] == (recorded.get(name) or "not installed"), (name, printed, recorded)
        assert set(printed) == set(recorded), (printed, recorded)


@pytest.mark.parametrize("argv", [
    ["--model", "tokrag"],
    ["run", "--model", "tokrag"],
    ["--model=tokrag"],
    ["--model", "tokrag", "--tasks", ""],
    ["--model", "tokrag", "-t", ","],
])
def test_a_run_without_tasks_is_refused_naming_tasks(argv):
    with pytest.raises(ConfigError) as exc:
        eval_cli.main(argv)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("--tasks: no task given; "), msg
    assert "tasks/README.md" in msg and "'tokrag eval ls tasks'" in msg, msg


def test_a_config_file_without_tasks_or_that_is_not_a_file(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("model: rag-standard\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^--tasks: no task given \(nor 'tasks:' in the --config file .*run\.yaml\)"):
        eval_cli.main(["-C", str(config)])
    with pytest.raises(ConfigError, match=r"^--config .*missing\.yaml: not a file; "):
        eval_cli.main(["--config", str(tmp_path / "missing.yaml"), "--tasks", "wiki_lm_bm25"])
    config.write_text("model: rag-standard\ntasks: [wiki_lm_bm25]\n", encoding="utf-8")
    eval_cli.check_tasks_given(["-C", str(config)])  # tasks from the file: lm-eval runs it
    for given in (["--tasks", "wiki_lm_bm25"], ["-t", "a,b"], ["--tasks=wiki_lm_bm25"], ["--task", "x"]):
        eval_cli.check_tasks_given(["--model", "tokrag", *given])


def test_one_argument_reaches_lm_eval_as_a_run(monkeypatch):
    """``tokrag eval --tasks=X`` alone: lm-eval inserts ``run`` only for two arguments or more, so one was its
    top-level 'unrecognized arguments' error."""
    import lm_eval.__main__

    seen = []
    monkeypatch.setattr(lm_eval.__main__, "cli_evaluate", lambda: seen.append(list(sys.argv)))
    assert eval_cli.main(["--tasks=wiki_lm_bm25"]) == 0
    assert eval_cli.main(["ls", "tasks"]) == 0
    assert seen == [["lm_eval", "run", "--tasks=wiki_lm_bm25"], ["lm_eval", "ls", "tasks"]]


def test_tokrag_eval_without_tasks_is_one_line_and_status_2():
    proc = subprocess.run([sys.executable, "-m", "tokrag_model.cli", "eval", "--model", "tokrag"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith("tokrag eval: error: --tasks: no task given; ") and \
        len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-2000:]


def test_the_readme_sections_the_help_points_to_exist():
    """The help sends a bring-your-own user to README.md, 'Your own questions and corpus': the heading must exist."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").splitlines()
    for section in ("Running evaluations", "Your own questions and corpus"):
        assert f"'{section}'" in eval_cli.help_text(), section
        assert any(line.lstrip("#").strip() == section for line in readme if line.startswith("#")), section
