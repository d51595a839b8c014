"""A task with its own ``custom_dataset`` loader keys no ``dataset_path`` of the working directory (s59 rt,
read-through of a1's 609ba02 beside f1/r5's ``task_local_data``).

lm-eval 0.4.13 calls a task's ``custom_dataset`` function and never ``datasets.load_dataset(dataset_path, ...)`` for
it, so its ``dataset_path`` names nothing lm-eval reads: tokrag's bring-your-own tasks (``tasks/qa/rag_qa_bm25.yaml``,
``_dense``, ``_hybrid``) carry ``dataset_path: questions  # documentation only``. a1's
:func:`leaderboards.keys.lm_eval_dataset_paths` read it as a path relative to the working directory, so with a
folder named ``questions`` there (a bring-your-own layout: ``questions/q.jsonl``) every file of that folder, every
size, became key material of every rag_qa_bm25 cell: an edit of any file in it (a new questions file for another
spec) re-keyed and recomputed them all, and a file named ``questions`` the same. f1/r5's
:func:`tokrag_model._local_data_files.task_local_data` (the ``--cache_requests true`` refusal) already leaves such a
task out; the key now does too. The ``dataset_kwargs`` files lm-eval gives such a loader stay keyed, and a task of
lm-eval's own form (no ``custom_dataset``) keys its files as before.
"""

from __future__ import annotations

from leaderboards import keys
from tokrag_model._local_data_files import task_local_data


def _questions_folder(tmp_path):
    (tmp_path / "questions").mkdir()
    (tmp_path / "questions" / "q.jsonl").write_text('{"question": "q", "answers": ["a"]}\n', encoding="utf-8")
    (tmp_path / "questions" / "other.jsonl").write_text('{"question": "r", "answers": ["b"]}\n', encoding="utf-8")


def test_a_custom_dataset_tasks_documentation_path_is_not_keyed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _questions_folder(tmp_path)
    memo = keys._HashMemo()
    chain = memo.task_chain("rag_qa_bm25", [])
    assert any(doc.get("dataset_path") == "questions" for _y, doc in chain)  # the YAML's documentation-only path
    assert keys.lm_eval_dataset_paths(chain) == []  # was [<tmp>/questions]
    assert keys.task_data_files("rag_qa_bm25", [], memo) == {}  # was {<tmp>/questions: tree fingerprint}
    merged = {k: v for _y, doc in reversed(chain) for k, v in doc.items()}
    assert task_local_data(merged) is None  # the --cache_requests rule agrees


def test_the_same_path_without_custom_dataset_is_keyed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _questions_folder(tmp_path)
    chain = [(tmp_path / "t.yaml", {"task": "t", "dataset_path": "questions"})]  # lm-eval loads the local folder
    assert keys.lm_eval_dataset_paths(chain) == [tmp_path / "questions"]
    assert task_local_data({"task": "t", "dataset_path": "questions"}) == str(tmp_path / "questions")
    included = [(tmp_path / "t.yaml", {"task": "t"}), (tmp_path / "_base", {"custom_dataset": "f",
                                                                             "dataset_path": "questions"})]
    assert keys.lm_eval_dataset_paths(included) == []  # an included custom_dataset counts as the task's own


def test_a_custom_dataset_loaders_dataset_kwargs_stay_keyed(tmp_path, monkeypatch):
    """lm-eval gives a custom_dataset loader its dataset_kwargs: their local files are keyed as before."""
    monkeypatch.chdir(tmp_path)
    _questions_folder(tmp_path)
    (tmp_path / "rows.jsonl").write_text("{}\n", encoding="utf-8")
    chain = [(tmp_path / "t.yaml", {"task": "t", "custom_dataset": "f", "dataset_path": "questions",
                                    "dataset_kwargs": {"data_files": {"test": str(tmp_path / "rows.jsonl")}}})]
    assert keys.lm_eval_dataset_paths(chain) == [tmp_path / "rows.jsonl"]
    chain[0][1]["dataset_kwargs"] = {"data_files": "rows.jsonl"}  # relative: the working directory's
    assert keys.lm_eval_dataset_paths(chain) == [tmp_path / "rows.jsonl"]
