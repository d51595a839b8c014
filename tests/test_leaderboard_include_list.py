"""``include:`` as a list (``include: [base.yaml]``, which lm-eval's ``load_yaml`` accepts): the spec's
``task_yaml_chain`` followed only a single-string include, so a task over a renamed copy of ``nq_oracle_bm25`` read
as having no metadata (no dataset, corpus, hits) while lm-eval ran it with them, and everything reading the chain
(the hits a cell passes, the data files its key holds, its dense encoders) missed them. The chain now follows a list
in lm-eval's precedence (a later include over an earlier one, the including file over all), relative to the
including file."""

from __future__ import annotations

from pathlib import Path

from lm_eval.tasks._yaml_loader import load_yaml

from leaderboards.keys import _HashMemo, task_data_paths, task_read_files
from leaderboards.spec import task_hits, task_yaml_chain, task_yaml_metadata

QA = Path(__file__).resolve().parents[1] / "tasks" / "qa"


def _base(folder: Path, name: str = "base.yaml") -> Path:
    """A renamed copy of nq_oracle_bm25 (its template included by absolute path) in ``folder``."""
    text = (QA / "nq_oracle_bm25.yaml").read_text(encoding="utf-8")
    text = text.replace("include: _qa_template", f"include: {QA / '_qa_template'}").replace(
        "task: nq_oracle_bm25", f"task: {Path(name).stem}_copy")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def _lm_eval_values_are_the_chains(my: Path, task: str, include: list[Path]) -> None:
    """Each top-level key of lm-eval's merged config has the value of the first document of the chain that sets it
    (a ``!function`` compared by key only)."""
    merged = load_yaml(my, resolve_func=False)
    docs = [doc for _, doc in task_yaml_chain(task, include)]
    for key, value in merged.items():
        first = next(doc[key] for doc in docs if key in doc)
        if first != "!function":  # the chain's loader keeps only the tag of a function
            assert first == value, key


def test_a_list_include_is_followed_like_lm_eval(tmp_path):
    base = _base(tmp_path)
    my = tmp_path / "my.yaml"
    my.write_text("include: [base.yaml]\ntask: my\n", encoding="utf-8")
    chain = task_yaml_chain("my", [tmp_path])
    assert [p for p, _ in chain] == [my, base, QA / "_qa_template"]
    meta = task_yaml_metadata("my", [tmp_path])
    assert load_yaml(my, resolve_func=False)["metadata"] == meta
    assert {k: meta[k] for k in ("dataset", "retriever", "corpus", "hits")} == {
        "dataset": "nq_oracle", "retriever": "bm25", "corpus": "nq-wiki-12k", "hits": 5}
    assert task_hits("my", [tmp_path], 3) == 3  # the contract's k reaches the task (was None: no hits seen)
    reads = task_read_files("my", [tmp_path], _HashMemo())
    assert reads == task_read_files("nq_oracle_bm25", [QA.parent], _HashMemo()) and reads  # the same files keyed
    _lm_eval_values_are_the_chains(my, "my", [tmp_path])


def test_a_later_include_wins_and_paths_are_relative_to_the_including_file(tmp_path):
    parts = tmp_path / "parts"
    _base(parts, "a.yaml")
    (parts / "b.yaml").write_text("include: c.yaml\nmetadata: {version: 1.0, hits: 7, questions: b.jsonl}\n"
                                  "generation_kwargs: {until: ['\\n'], max_gen_toks: 9}\n", encoding="utf-8")
    (parts / "c.yaml").write_text("metadata: {version: 1.0, hits: 8}\nnum_fewshot: 0\n", encoding="utf-8")
    my = tmp_path / "my.yaml"
    my.write_text("include: [parts/a.yaml, parts/b.yaml]\ntask: my\n", encoding="utf-8")
    chain = task_yaml_chain("my", [tmp_path])
    assert [p.resolve() for p, _ in chain] == [my, parts / "b.yaml", parts / "c.yaml", parts / "a.yaml",
                                               QA / "_qa_template"]
    _lm_eval_values_are_the_chains(my, "my", [tmp_path])
    assert task_yaml_chain("my", [tmp_path])[1][1]["metadata"]["hits"] == 7
    assert task_data_paths(chain)["questions"][2].resolve() == parts / "b.yaml"  # the file that sets it
