"""The documentation's examples run as written: the bring-your-own example of ``README.md`` and ``tasks/README.md``
(its files, read from the README text, load with the ``rag_qa_*`` task's own loader, no model), and the trace paths
the top-level README gives for both sample layouts (``lm_eval --log_samples`` and leaderboard run folders)."""

from __future__ import annotations

import json
import logging
import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.leaderboard_fixtures.toy_lm import ToyLM
from tests.leaderboard_helpers import write_spec

REPO = Path(__file__).resolve().parents[1]
BYO_DOCS = ("README.md", "tasks/README.md")


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def byo_example(doc: str) -> tuple[dict[str, str], list[str]]:
    """``({file name: content}, lm_eval argv)`` of the one bash block of ``doc`` that runs a ``rag_qa_*`` task:
    the files its heredocs (``cat > NAME <<'J' ... J``) and ``echo '...' > NAME`` lines write, and its ``lm_eval``
    command (continuation lines joined, comments dropped)."""
    blocks = [b for b in _bash_blocks((REPO / doc).read_text(encoding="utf-8")) if "--tasks rag_qa_" in b]
    assert len(blocks) == 1, f"{doc}: expected one bash block running a rag_qa_* task, found {len(blocks)}"
    block = blocks[0]
    files = {name: body for name, tag, body in re.findall(r"^cat > (\S+) <<'(\w+)'\n(.*?)^\2$", block, re.S | re.M)}
    for line in block.splitlines():
        m = re.match(r"^echo '(.*)' > (\S+)", line)
        if m:
            files[m.group(2)] = m.group(1) + "\n"
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = [ln for ln in joined.splitlines() if ln.startswith("lm_eval ")]
    assert len(commands) == 1, f"{doc}: expected one lm_eval command, found {commands}"
    return files, shlex.split(commands[0], comments=True)


def _flag(argv: list[str], name: str) -> str:
    assert name in argv, f"{name} missing from {argv}"
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("doc", BYO_DOCS)
def test_byo_example_files_are_valid_jsonl_with_consistent_ids(doc):
    """Every line of the example's files is JSON; the metadata's files are written by the example itself; every
    gold id names a passage of its corpus (the trial's example used passages.jsonl without writing it, and p7), and
    every question has gold ids or none has."""
    files, argv = byo_example(doc)
    meta = json.loads(_flag(argv, "--metadata"))
    assert meta["questions"] in files and meta["corpus"] in files, (doc, sorted(files), meta)
    rows = {name: [json.loads(x) for x in body.splitlines() if x.strip()] for name, body in files.items()}
    passage_ids = {p["id"] for p in rows[meta["corpus"]]}
    for q in rows[meta["questions"]]:
        assert set(q.get("gold_docids", [])) <= passage_ids, (doc, q)
    # all or none: lm-eval warns when gold_at_k is scored on fewer questions than the other metrics
    assert len({bool(q.get("gold_docids")) for q in rows[meta["questions"]]}) == 1, doc


@pytest.mark.parametrize("doc", BYO_DOCS)
def test_byo_example_loads_with_the_task_loader(doc, tmp_path, monkeypatch, caplog):
    """The example's files, written in an empty folder, give the task's docs (tasks.utils.load_qa with the task
    YAML's metadata and the command's --metadata, as lm-eval merges them): every question in the test split, each
    with ``hits`` passages (no 'Passages per question' warning) that contain a gold answer and its gold passage."""
    from retrieval import has_answer
    from tasks.utils import load_qa

    files, argv = byo_example(doc)
    task = _flag(argv, "--tasks")
    yaml_path = REPO / "tasks" / "qa" / f"{task}.yaml"
    metadata = {**yaml.safe_load(yaml_path.read_text(encoding="utf-8"))["metadata"],
                **json.loads(_flag(argv, "--metadata"))}
    monkeypatch.chdir(tmp_path)
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    caplog.set_level(logging.INFO, logger="tasks")
    data = load_qa(**metadata, config_source=str(yaml_path), cache_dir=str(tmp_path / "cache"))
    questions = [json.loads(x) for x in files[metadata["questions"]].splitlines() if x.strip()]
    docs = list(data["test"])
    assert [d["qid"] for d in docs] == [q["id"] for q in questions]  # none held out as dev/few-shot
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    for d in docs:
        assert len(d["ctxs"]) == metadata["hits"], d["qid"]
        assert any(has_answer(c["text"], d["answers"]) for c in d["ctxs"]), d["qid"]
        if d["gold_docids"]:
            assert {c["docid"] for c in d["ctxs"]} & set(d["gold_docids"]), d["qid"]


def test_both_byo_examples_are_the_same_files():
    """The two READMEs show one example (it drifted apart before: p1 in one, p7 in the other)."""
    (a, argv_a), (b, argv_b) = (byo_example(doc) for doc in BYO_DOCS)
    assert a == b
    assert json.loads(_flag(argv_a, "--metadata")) == json.loads(_flag(argv_b, "--metadata"))


def _documented_trace_paths() -> dict[str, tuple[str, str]]:
    """``{"dict": (generation path, rolling path), "list": (...)}`` from the README's table of sample layouts."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and "tokrag_trace" in line:
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            out["dict" if "--log_samples" in cells[0] else "list"] = (cells[2], cells[3])
    return out


def _follow(sample: dict, path: str):
    """The value at a documented path: dotted (``arguments.gen_args_0.arg_2.tokrag_trace``) or Python subscripts
    (``arguments[0][2]["tokrag_trace"]``)."""
    if "[" in path:
        return eval(path, {"__builtins__": {}}, {"arguments": sample["arguments"]})  # noqa: S307 - the README's text
    value = sample
    for key in path.split("."):
        value = value[key]
    return value


class RollingTraceToyLM(ToyLM):
    """The leaderboard tests' toy model, tracing its rolling log-likelihood requests too (as the tokrag methods do:
    ``tokrag_model.base`` appends ``{"tokrag_trace": ...}`` to every request's arguments)."""

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        out = super().loglikelihood_rolling(requests, disable_tqdm)
        for req in requests:
            req.arguments = (*req.args, {"tokrag_trace": {"method": "toy", "words": len(req.args[0].split())}})
        return out


def test_readme_trace_paths_match_both_sample_layouts(tmp_path):
    """The README's paths find the trace in what ``tokrag leaderboard run`` writes (a run folder's
    ``samples_<task>.jsonl``: lm-eval's in-memory list, as JSON, written by the runner itself with the toy model) and
    in what lm-eval's tracker writes for ``--log_samples`` from the same samples (arguments as a dict), for a
    generation and a rolling log-likelihood sample; ``leaderboards.traces.sample_trace`` reads both."""
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec
    from leaderboards.traces import sample_trace

    method = {"name": "standard", "model": f"{__name__}:RollingTraceToyLM", "model_args": {"trace": "tokens"}}
    spec = load_spec(write_spec(tmp_path, methods=[method], tasks=["toy_qa", "toy_lm"], limit=2))
    run_spec(spec, tmp_path / "runs", progress=False)
    paths = _documented_trace_paths()
    assert set(paths) == {"dict", "list"}
    for i, task in enumerate(("toy_qa", "toy_lm")):  # generation, rolling log-likelihood
        [samples] = list((tmp_path / "runs").rglob(f"samples_{task}.jsonl"))
        listed = json.loads(samples.read_text(encoding="utf-8").splitlines()[0])
        trace = sample_trace(listed)
        assert isinstance(trace, dict) and trace
        tracker = EvaluationTracker(output_path=str(tmp_path / f"out{i}"))
        tracker.general_config_tracker.model_name_sanitized = "m"
        tracker.date_id = "d"  # set by save_results_aggregated in an lm_eval run
        tracker.save_results_samples(task, [json.loads(json.dumps(listed))])  # the tracker rewrites its input
        logged = json.loads(next((tmp_path / f"out{i}" / "m").glob(f"samples_{task}_*.jsonl")).read_text().splitlines()[0])
        assert isinstance(logged["arguments"], dict) and isinstance(listed["arguments"], list)
        assert _follow(logged, paths["dict"][i]) == trace
        assert _follow(listed, paths["list"][i]) == trace
        assert sample_trace(logged) == trace


def _rolling_example() -> str:
    """The one bash block of tasks/README.md that runs a rolling task of one's own (``--tasks my_lm_rolling``)."""
    blocks = [b for b in _bash_blocks((REPO / "tasks/README.md").read_text(encoding="utf-8"))
              if "--tasks my_lm_rolling" in b]
    assert len(blocks) == 1, f"tasks/README.md: expected one bash block running my_lm_rolling, found {len(blocks)}"
    return blocks[0]


def test_the_rolling_task_example_runs_as_written_and_is_refused_without_query_field(tmp_path):
    """tasks/README.md's example of a language-modelling task of one's own with passages (a new user had to find the
    ``ctxs`` format elsewhere): its files and command run as written (``lm_eval`` as ``python -m lm_eval``), scoring
    the one document with the filter's critic asked the doc's ``query``; without ``query_field=query`` the same command
    is refused in the filter's one line, before the model loads (exit 2, no traceback)."""
    import os
    import subprocess
    import sys

    block = _rolling_example()
    assert block.count("lm_eval ") == 1 and ",query_field=query " in block
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    env.pop("TOKRAG_TRACEBACK", None)

    def run(script: str) -> subprocess.CompletedProcess:
        script = script.replace("\nlm_eval ", f"\n{shlex.quote(sys.executable)} -m lm_eval ")
        return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)

    ok = run(block)
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "|my_lm_rolling|  1|" in ok.stdout, ok.stdout[-3000:]
    row = [ln for ln in ok.stdout.splitlines() if "|word_perplexity|" in ln]
    assert len(row) == 1, ok.stdout[-3000:]
    # SmolLM2-135M-Instruct, float32, one thread (AMD EPYC, AVX2): 186.7073; the 4th decimal differs across CPUs
    assert float(row[0].split("|")[-4]) == pytest.approx(186.7073, rel=1e-3)
    refused = run(block.replace(",query_field=query ", " "))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    last = [ln for ln in refused.stderr.splitlines() if "error:" in ln][-1]
    assert "the critic needs a question" in last and "task 'my_lm_rolling'" in last and "query_field=" in last, last
