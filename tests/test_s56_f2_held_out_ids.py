"""The leaderboard report names the held-out questions of a bring-your-own file (s56 f2).

Since s55 (f3) a run records their ids (``configs.<task>.metadata.tokrag_data.questions.held_out``) and lm_eval's INFO
line names them, but the report's contract line ``questions.<task>`` gave only their counts (``3 held out by hash: 2
dev, 1 few-shot``): a reader of the report could not tell which questions were not scored. The line now names them
(at most 10 per part, then ``and N more``) and the report's JSON lists them all (``models[i].held_out``); every other
line of the report is unchanged, and a run from before s55 (no ids) reads as before.
"""

from __future__ import annotations

import copy
import json

from leaderboards.page import render_html
from leaderboards.report import compute, questions_text, render_markdown
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec

FILE = "/data/q.jsonl"
PREFIX = "questions.toy_qa (as run, from the results): "


def _meta(split: str = "test", dev: list[str] | None = None, shot: list[str] | None = None, total: int = 24,
          ids: bool = True) -> dict:
    dev = ["q05", "q21"] if dev is None else dev
    shot = ["q10"] if shot is None else shot
    rec = {"split": split, "in_split": total - len(dev) - len(shot) if split == "test" else total if split == "all"
           else len(dev), "total": total, "dev": len(dev), "fewshot": len(shot)}
    if ids:
        rec["held_out"] = {"dev": dev, "fewshot": shot}
    return {"dataset": "byo", "questions": "q.jsonl", "split": split,
            "tokrag_data": {"questions": rec, "files": {"questions": {"path": FILE, "sha256": "3bb3dd8a"}}}}


def test_the_line_names_the_held_out_ids():
    assert questions_text(_meta(), 8, 21) == (
        f"questions {FILE}, 21 of 24 in split test (3 held out by hash: 2 dev: q05, q21; 1 few-shot: q10), "
        "first 8 of 21 scored")
    assert questions_text(_meta(shot=[]), 22, 22) == (
        f"questions {FILE}, 22 of 24 in split test (2 held out by hash: 2 dev: q05, q21; 0 few-shot), all 22 scored")


def test_many_held_out_ids_show_the_first_ten_per_part_and_a_count():
    dev = [f"d{i:02d}" for i in range(41)]
    shot = [f"f{i}" for i in range(3)]
    text = questions_text(_meta(dev=dev, shot=shot, total=400), 356, 356)
    assert text == (f"questions {FILE}, 356 of 400 in split test (44 held out by hash: 41 dev: "
                    + ", ".join(f"d{i:02d}" for i in range(10)) + " and 31 more; 3 few-shot: f0, f1, f2), all 356 scored")
    dev = [f"d{i:02d}" for i in range(11)]
    assert "11 dev: " + ", ".join(dev[:10]) + " and 1 more; 0 few-shot)" in questions_text(
        _meta(dev=dev, shot=[], total=100), 89, 89)
    assert "10 dev: " + ", ".join(dev[:10]) + "; 0 few-shot)" in questions_text(
        _meta(dev=dev[:10], shot=[], total=100), 90, 90)  # exactly ten: no "more"


def test_runs_without_ids_and_other_splits_read_as_before():
    assert questions_text(_meta(ids=False), 8, 21) == (
        f"questions {FILE}, 21 of 24 in split test (3 held out by hash: 2 dev, 1 few-shot), first 8 of 21 scored")
    assert questions_text(_meta("all"), 24, 24) == (
        f"questions {FILE}, 24 of 24 in split all (none held out: the 3 of the dev / few-shot pool are scored too), "
        "all 24 scored")
    assert questions_text(_meta("dev", ids=False), 2, 2) == (
        f"questions {FILE}, 2 of 24 in split dev (by hash: 21 test, 2 dev, 1 few-shot), all 2 scored")
    # with the ids recorded, the dev line names them as the test line does (s57 f1; before: the counts only)
    assert questions_text(_meta("dev"), 2, 2) == (
        f"questions {FILE}, 2 of 24 in split dev (by hash: 21 test; 2 dev: q05, q21; 1 few-shot: q10), all 2 scored")


def _loaded(spec, metas: dict[str, dict], n: int = 8, original: int = 21) -> dict:
    """A finished cell per cell of ``spec`` whose results' task metadata is ``metas[method]``."""
    out = {}
    for cell in spec.cells():
        t = cell.task.task
        samples = [{"doc_id": i, "doc": {"qid": f"q{i}"}, "filter": "none", "em": 0.0,
                    "arguments": [["ctx", {"until": ["\n"], "max_gen_toks": 8}]]} for i in range(n)]
        results = {"results": {t: {"em,none": 0.0}}, "n-samples": {t: {"original": original, "effective": n}},
                   "configs": {t: {"output_type": "generate_until", "metadata": copy.deepcopy(metas[cell.method.name])}},
                   "config": {"limit": n}}
        out[cell.cell_id] = (cell, f"key-{cell.cell_id}",
                             {"samples": {t: samples}, "results": results, "cost": {}, "provenance": {}, "config": {}})
    return out


def _report(tmp_path, metas: dict[str, dict], original: int = 21) -> dict:
    spec = load_spec(write_spec(tmp_path, limit=8, tasks=["toy_qa"], extra={"bootstrap": {"iters": 100, "seed": 7}}))
    return compute(spec, _loaded(spec, metas, original=original), timings=False)


def test_the_report_names_them_and_its_json_lists_them_all(tmp_path):
    dev = [f"d{i:02d}" for i in range(12)]
    meta = _meta(dev=dev, shot=["f0"], total=130)
    data = _report(tmp_path / "new", {"standard": meta, "none": meta}, original=117)
    line = (f"{PREFIX}questions {FILE}, 117 of 130 in split test (13 held out by hash: 12 dev: "
            + ", ".join(dev[:10]) + " and 2 more; 1 few-shot: f0), first 8 of 117 scored")
    assert [x for x in data["models"][0]["contract"] if x.startswith("questions.")] == [line]
    assert data["contract"][-1] == line
    assert f"- {line}\n" in render_markdown(data)
    assert f"<li><code>{line}</code></li>" in render_html(data, [])
    assert data["models"][0]["held_out"] == {"toy_qa": [{"questions": FILE, "dev": dev, "fewshot": ["f0"],
                                                         "methods": ["standard", "none"]}]}
    assert json.loads(json.dumps(data, allow_nan=True))["models"][0]["held_out"]["toy_qa"][0]["dev"] == dev

    # every other line, and the rest of the JSON, as for a run that recorded no ids (before s55)
    old = _report(tmp_path / "old", {"standard": _meta(dev=dev, shot=["f0"], total=130, ids=False),
                                     "none": _meta(dev=dev, shot=["f0"], total=130, ids=False)}, original=117)
    assert "held_out" not in old["models"][0]
    new_md, old_md = render_markdown(data).splitlines(), render_markdown(old).splitlines()
    assert len(new_md) == len(old_md)
    assert [(a, b) for a, b in zip(new_md, old_md) if a != b] == [
        (f"- {line}", f"- {PREFIX}questions {FILE}, 117 of 130 in split test (13 held out by hash: 12 dev, 1 few-shot), "
                      "first 8 of 117 scored")]
    del data["models"][0]["held_out"]
    for d in (data, old):
        for x in [d["contract"], d["models"][0]["contract"]]:
            x[:] = [y for y in x if not y.startswith("questions.")]
    assert json.dumps(data, sort_keys=True, default=str) == json.dumps(old, sort_keys=True, default=str)


def test_methods_that_read_other_files_each_have_their_record(tmp_path):
    other = _meta(dev=["q07"], shot=[])
    other["tokrag_data"]["files"]["questions"]["path"] = "/data/other.jsonl"
    data = _report(tmp_path, {"standard": _meta(), "none": other})
    assert data["models"][0]["held_out"] == {"toy_qa": [
        {"questions": FILE, "dev": ["q05", "q21"], "fewshot": ["q10"], "methods": ["standard"]},
        {"questions": "/data/other.jsonl", "dev": ["q07"], "fewshot": [], "methods": ["none"]}]}
    (line,) = [x for x in data["models"][0]["contract"] if x.startswith("questions.")]
    assert line.startswith(f"{PREFIX}DIFFERS between methods: ") and "1 dev: q07; 0 few-shot" in line


def test_split_all_records_no_held_out_questions(tmp_path):
    data = _report(tmp_path, {"standard": _meta("all"), "none": _meta("all")})
    assert "held_out" not in data["models"][0]
