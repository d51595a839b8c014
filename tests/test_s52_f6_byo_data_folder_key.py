"""A bring-your-own task (rag_qa_bm25 with its own ``questions`` and ``corpus`` files) reads no file of the data folder,
so its cells' run keys must not depend on whether ``$TOKRAG_DATA_DIR`` is set (s52 u1, P1: runs made with it set were
"missing" with it unset, and ``run`` recomputed every cell). The cells that do read the data folder keep their keys."""

from __future__ import annotations

from pathlib import Path

from leaderboard_helpers import write_spec

from leaderboards import keys
from leaderboards.spec import load_spec

REPO = Path(__file__).resolve().parents[1]


def _byo(tmp_path: Path, corpus: str | None = None) -> Path:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "q.jsonl").write_text('{"question": "Who?", "answers": ["Ada"]}\n')
    (mine / "c.jsonl").write_text('{"id": "p1", "title": "Ada", "text": "Ada wrote it."}\n')
    (mine / "my_qa.yaml").write_text(
        f"include: {REPO / 'tasks/qa/rag_qa_bm25.yaml'}\ntask: my_qa\n"
        f"metadata: {{questions: {mine / 'q.jsonl'}, corpus: {corpus or mine / 'c.jsonl'}}}\n")
    return mine


def _keys(spec) -> list[str]:
    return [k for _c, k, _m in keys.cell_keys(spec)]


def test_a_byo_task_has_one_key_with_the_data_folder_set_empty_or_unset(tmp_path, monkeypatch):
    mine = _byo(tmp_path)
    spec = load_spec(write_spec(tmp_path / "spec", tasks=["my_qa"], include=mine))
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    assert keys.task_read_files("my_qa", [mine], keys._HashMemo()) == []  # was None: "the whole folder is keyed"
    unset = _keys(spec)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(empty))
    assert _keys(spec) == unset  # was another key: every finished cell "missing" with the variable unset
    other = tmp_path / "data"
    (other / "nq_open").mkdir(parents=True)
    (other / "nq_open" / "NQ-open.dev.jsonl").write_text('{"question": "q", "answer": ["a"]}\n')
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(other))
    assert _keys(spec) == unset
    (mine / "q.jsonl").write_text('{"question": "Who?", "answers": ["Ada Lovelace"]}\n')
    assert _keys(spec) != unset  # its own files are still keyed


def test_a_byo_run_finished_with_the_folder_unset_before_is_still_found_unset(tmp_path, monkeypatch):
    """Runs keyed ``"hub"`` (unset, before this fix) are found through the legacy key while the folder is unset."""
    mine = _byo(tmp_path)
    spec = load_spec(write_spec(tmp_path / "spec", tasks=["my_qa"], include=mine))
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    memo = keys._HashMemo()
    cell = spec.cells()[0]
    mat = keys.cell_key_material(spec, cell, memo)
    assert mat["data_fingerprint"] == keys.fingerprint(["data-files", {}])
    assert keys.legacy_key_material(spec, cell, mat, memo) == {**mat, "data_fingerprint": "hub"}


def test_a_byo_task_over_a_named_corpus_still_needs_the_data_folder(tmp_path, monkeypatch):
    mine = _byo(tmp_path, corpus="nq-wiki-12k")
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    assert keys.task_read_files("my_qa", [mine], keys._HashMemo()) is None  # nq-wiki-12k is read from the folder


def test_the_shipped_specs_cells_are_keyed_as_before(monkeypatch):
    """Every cell of the ci and reference-cells specs reads data-folder files: unset, its data_fingerprint is still
    "hub" (the new ``[]`` is only for tasks that read none), set, the files it reads."""
    for name in ("ci", "reference-cells"):
        spec = load_spec(REPO / "leaderboards" / "specs" / f"{name}.yaml")
        for env in (None, str(REPO.parent / "shared" / "data")):
            if env is None:
                monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
            else:
                monkeypatch.setenv("TOKRAG_DATA_DIR", env)
            memo = keys._HashMemo()
            for cell in spec.cells():
                files = keys.task_read_files(cell.task.task, spec.include_path, memo, cell.task_metadata())
                fp = keys.cell_input_material(spec, cell, memo)["data_fingerprint"]
                if env is None:
                    assert (files, fp) == (None, "hub"), cell.cell_id
                elif Path(env).is_dir():
                    assert files, cell.cell_id
