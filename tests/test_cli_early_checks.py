"""Run arguments that used to fail (or give wrong results) only after the model load are refused before it, in one
line naming the argument (``tasks.precheck.check_run_arguments`` / ``check_selected_tasks(num_fewshot=...)``, run by
the start-up hook right after lm-eval resolves ``--tasks``; ``--metadata``/``--model_args`` JSON by the hook's patch
of lm-eval's argument action). Each CLI case runs ``tokrag eval``'s entry in-process with ``lm_eval.simple_evaluate``
(which builds the model) replaced by a function that fails the test if called."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--apply_chat_template", "--tasks", "nq_oracle_bm25"]


@pytest.fixture
def no_model(monkeypatch):
    """``lm_eval.simple_evaluate`` (where lm-eval's CLI builds the model) fails the test if reached."""
    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)


def _refused(args: list[str]) -> str:
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*BASE, *args])
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


def test_output_path_that_is_a_file_or_under_one(no_model, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("keep me", encoding="utf-8")
    msg = _refused(["--limit", "1", "--output_path", str(afile), "--log_samples"])
    assert msg.startswith(f"--output_path {afile}: {afile} is an existing file, not a folder;"), msg
    assert msg.endswith("pass a folder you can write"), msg
    msg = _refused(["--limit", "1", "--output_path", str(afile / "sub" / "res.json")])
    assert msg.startswith(f"--output_path {afile / 'sub' / 'res.json'}: {afile} is an existing file"), msg
    assert afile.read_text(encoding="utf-8") == "keep me"


def test_output_path_whose_model_subfolder_is_a_file(no_model, tmp_path):
    """lm-eval writes into ``<output_path>/<model name, sanitized>/``; a file of that name made it log
    ``FileExistsError`` after the whole run and save nothing (noticed in stop 37)."""
    (tmp_path / "smollm2-135m-instruct").write_text("keep me", encoding="utf-8")
    msg = _refused(["--limit", "1", "--output_path", str(tmp_path)])
    assert msg.startswith(f"--output_path {tmp_path}: {tmp_path / 'smollm2-135m-instruct'} is an existing file"), msg
    assert (tmp_path / "smollm2-135m-instruct").read_text(encoding="utf-8") == "keep me"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write anywhere")
def test_output_path_in_a_folder_that_cannot_be_written(no_model, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        msg = _refused(["--limit", "1", "--output_path", str(locked / "out")])
    finally:
        locked.chmod(0o700)
    assert msg.startswith(f"--output_path {locked / 'out'}: the folder {locked} is not writable;"), msg


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_output_path_in_a_folder_that_cannot_be_written_even_by_root(no_model):
    """os.access says yes to root, so as root (containers, CI) a read-only --output_path passed the check and the run
    failed only after the evaluation (found by a review); the check now probes, as retrieval.io.check_writable."""
    msg = _refused(["--limit", "1", "--output_path", "/proc/tokrag-out"])
    assert msg.startswith("--output_path /proc/tokrag-out: the folder /proc is not writable;"), msg


def test_use_cache_under_a_file(no_model, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("", encoding="utf-8")
    msg = _refused(["--limit", "1", "--use_cache", str(afile / "cache")])
    assert msg.startswith(f"--use_cache {afile / 'cache'}: {afile} is an existing file, not a folder;"), msg


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "many"])
def test_max_gen_toks_not_a_positive_integer(no_model, value):
    msg = _refused(["--limit", "1", "--gen_kwargs", f"max_gen_toks={value}"])
    assert msg.startswith("--gen_kwargs max_gen_toks=") and "expected an integer >= 1" in msg, msg


def test_sampling_gen_kwargs_with_a_tokrag_method(no_model):
    msg = _refused(["--limit", "1", "--gen_kwargs", "do_sample=true,temperature=0.9"])
    assert msg.startswith("--gen_kwargs do_sample=True, temperature=0.9: --model rag-standard decodes greedily"), msg
    assert msg.endswith("drop do_sample/temperature"), msg


def test_num_fewshot_larger_than_the_pool(no_model):
    msg = _refused(["--limit", "1", "--num_fewshot", "5000"])
    assert msg == ("--num_fewshot 5000: task nq_oracle_bm25 has 84 few-shot examples (its 'fewshot' split, "
                   "tasks/README.md \"Splits\"); pass --num_fewshot 84 or fewer"), msg


def test_a_task_given_as_its_yaml_file_is_checked_too(no_model):
    """``--tasks tasks/qa/nq_oracle_bm25.yaml``: lm-eval passes the YAML's config (functions resolved), not a task
    name; the same checks apply as for ``--tasks nq_oracle_bm25`` (they were skipped: found in stop 37)."""
    yaml = str(Path(TASK_DIR) / "qa" / "nq_oracle_bm25.yaml")
    base = BASE[:-1] + [yaml]
    from tokrag_model.eval_cli import main

    for args, want in [(["--limit", "1", "--num_fewshot", "5000"],
                        "--num_fewshot 5000: task nq_oracle_bm25 has 84 few-shot examples"),
                       (["--limit", "0"], "--limit 0: --limit must be > 0"),
                       (["--limit", "1", "--metadata", '{"corpus": "no/such/corpus.jsonl"}'], "no/such/corpus.jsonl")]:
        with pytest.raises(ConfigError) as exc:
            main([*base, *args])
        assert want in str(exc.value) and "\n" not in str(exc.value), exc.value


def test_a_seed_numpy_refuses(no_model):
    """``--seed -5`` seeds numpy with -5: ``np.random.seed`` raised a traceback (breaker B)."""
    msg = _refused(["--limit", "1", "--seed", "-5"])
    assert msg.startswith("--seed -5: the numpy seed"), msg


def test_limit_zero(no_model):
    msg = _refused(["--limit", "0"])
    assert msg.startswith("--limit 0: --limit must be > 0"), msg


@pytest.mark.parametrize(("args", "want"), [
    (["--metadata", "{hits: 3"], "--metadata: not valid JSON (Expecting property name enclosed in "
                                 "double quotes: line 1 column 2 (char 1)): {hits: 3; "),
    (["--model_args", "pretrained=x,passage_template={bogus}"],
     "--model_args: 'pretrained=x,passage_template={bogus}' holds a '{', so lm-eval reads it as JSON"),
])
def test_invalid_json_argument_is_one_line(no_model, capsys, args, want):
    """Under tokrag eval (eval_cli.main) the line is a ConfigError, which the command prints as 'tokrag eval: error:'
    (84aec70; it was an 'lm_eval: error:' exit of argparse's); plain lm_eval's prefix: test_s50_lead_eval_json_prefix."""
    from tokrag_model.eval_cli import main

    argv = [a for a in BASE if a not in ("--model_args", "pretrained=smollm2-135m-instruct")] + args
    with pytest.raises(ConfigError) as exc:
        main(argv)
    assert "\n" not in str(exc.value) and str(exc.value).startswith(want), exc.value


def test_other_models_and_tasks_are_left_alone(tmp_path):
    """lm-eval's own models on lm-eval's tasks: nothing is checked; a tokrag task with lm-eval's ``hf`` model: the
    run checks, but not the tokrag methods' greedy-decoding one. A ``.json`` output path next to a file is fine."""
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_run_arguments

    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    afile = tmp_path / "afile"
    afile.write_text("", encoding="utf-8")
    check_run_arguments(manager, ["hellaswag"], model="hf", output_path=str(afile), use_cache=str(afile / "c"),
                        gen_kwargs={"max_gen_toks": 0, "do_sample": True}, limit=0.0)
    check_run_arguments(manager, ["nq_oracle_bm25"], model="hf", gen_kwargs={"do_sample": True, "temperature": 0.9},
                        output_path=str(tmp_path / "afile.json"), limit=0.5)
    with pytest.raises(ConfigError, match=r"^--gen_kwargs max_gen_toks=0: "):
        check_run_arguments(manager, ["nq_oracle_bm25"], model="hf", gen_kwargs={"max_gen_toks": 0})
    check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard",
                        gen_kwargs={"do_sample": False, "temperature": 0.0, "max_gen_toks": 8})
    # do_sample=False asks for greedy decoding whatever the temperature (lm-eval's hf decodes greedily too), and the
    # results record do_sample=False: nothing false is recorded (a false refusal found by a review)
    check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", gen_kwargs={"do_sample": False, "temperature": 0.7})
    with pytest.raises(ConfigError, match=r"^--gen_kwargs temperature=0.7: --model rag-standard decodes greedily"):
        check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", gen_kwargs={"temperature": 0.7})


def test_lm_eval_refuses_an_output_file_before_the_model_load(tmp_path):
    """The breaker's repro through the real ``lm_eval`` entry (start-up hook from the .pth file): one error line, and
    the model path does not exist, so a load would have said so."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "afile").write_text("", encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lm_eval"), "--model", "rag-standard", "--model_args",
         f"pretrained={tmp_path / 'no-such-model'}", "--device", "cpu", "--apply_chat_template", "--tasks",
         "nq_oracle_bm25", "--limit", "1", "--output_path", "out/afile", "--log_samples"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "no-such-model" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and f"--output_path out/afile: {Path(tmp_path, 'out', 'afile')} is an existing file" \
        in lines[0], proc.stderr[-2000:]
