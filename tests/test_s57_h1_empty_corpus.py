"""``"corpus": ""`` (``--metadata``, a task YAML's ``metadata``, ``retrieve --corpus ''``) was read as ``Path("")``,
the working directory: every corpus file there was indexed as the corpus (s57 b1, finding 2; in a folder holding
another JSONL file: ``arr.jsonl:1: expected a JSON object, got list``). An empty or blank corpus is now one line
naming ``corpus``, before anything is read (``retrieval.corpus.check_corpus_path``, the first step of
``load_corpus`` and of the pre-load check)."""

from __future__ import annotations

import json

import pytest

from retrieval.corpus import check_corpus_files, load_corpus, resolve_corpus
from retrieval.errors import ConfigError

EXPECTED = ("corpus {!r} is empty (it would read every file of the working directory as the corpus); give a corpus "
            "name (nq-wiki-12k, nq-dpr-1k, wiki-vital), a corpus file or folder path, or prebuilt:<index>, or leave "
            "corpus out for the task's default")


@pytest.fixture
def cwd_of_passages(tmp_path, monkeypatch):
    """A working directory whose corpus-like files would all be read: one passages file and one that is no corpus."""
    (tmp_path / "passages.jsonl").write_text(json.dumps({"id": "p1", "title": "A", "text": "alpha beta"}) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "what is alpha", "answers": ["beta"]}) + "\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("value", ["", " ", "\t\n"])
@pytest.mark.parametrize("reader", [load_corpus, check_corpus_files, resolve_corpus])
def test_an_empty_corpus_is_one_line_naming_corpus(cwd_of_passages, reader, value):
    with pytest.raises(ConfigError) as exc:
        reader(value)
    assert str(exc.value) == EXPECTED.format(value)


def test_the_task_precheck_refuses_it_before_the_model_loads(cwd_of_passages):
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR
    from tasks.precheck import check_selected_tasks

    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": "q.jsonl", "corpus": "", "hits": 1})
    assert str(exc.value).endswith(EXPECTED.format("")), str(exc.value)
    assert "\n" not in str(exc.value)


def test_the_task_build_refuses_it(cwd_of_passages):
    from tasks.rag import build_qa_docs

    with pytest.raises(ConfigError) as exc:
        build_qa_docs("byo", questions="q.jsonl", corpus="", k=1)
    assert str(exc.value) == EXPECTED.format("")


def test_a_folder_named_by_a_path_is_still_read(cwd_of_passages):
    # an explicit '.' is a path the user typed: the working directory's corpus files, as before
    (cwd_of_passages / "q.jsonl").unlink()
    assert [p.docid for p in load_corpus(".").passages] == ["p1"]


def test_a_task_yaml_with_corpus_empty_is_refused_before_the_model_loads(cwd_of_passages):
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR
    from tasks.precheck import check_selected_tasks

    (cwd_of_passages / "yaml").mkdir()
    (cwd_of_passages / "yaml" / "my_qa.yaml").write_text(
        f"include: {TASK_DIR / 'qa' / 'rag_qa_bm25.yaml'}\ntask: my_qa_empty_corpus\nmetadata:\n  version: 1\n"
        f"  dataset: byo\n  questions: {cwd_of_passages / 'q.jsonl'}\n  corpus: \"\"\n")
    manager = TaskManager(include_path=[str(TASK_DIR), str(cwd_of_passages / "yaml")], include_defaults=False)
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(manager, ["my_qa_empty_corpus"], {})
    assert str(exc.value) == EXPECTED.format("")
