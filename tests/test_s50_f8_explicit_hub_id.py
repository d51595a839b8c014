"""A hub_id that is a hub id (not a path) and not the task's default, e.g. ``--metadata '{"hub_id": "me/nq-mirror"}'``,
was silently replaced by the data folder's copy when ``$TOKRAG_DATA_DIR`` was set (the README tells everyone to set
it): ``load_nq_open`` / ``load_webq`` read ``nq_open/NQ-open.dev.jsonl`` / ``webquestions/test.json`` and the hub
families (``tasks.sources.local_copy``) ``<data>/<local_name>``, so a user who named a data set got another one, with no
word, and the provenance and the leaderboard key's data files named the data folder's file.

Now such a hub_id is the user's explicit choice, read as given (the hub, offline its caches); the default hub id keeps
the data folder first. The hub is the hub cache (``HF_HUB_OFFLINE=1``, a snapshot written by the test): nothing
reaches the network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import OfflineError
from tasks import TASK_DIR
from tasks import data as qa_data
from tasks import wikitext
from tasks.provenance import dataset_files, qa_provenance, wikitext_provenance
from tasks.sources import FAMILIES, hub_rows, load_family
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)

NQ_MIRROR, WEBQ_MIRROR, TQA_MIRROR, WT_MIRROR = ("me/nq-mirror", "me/webq-mirror", "someone/trivia_qa_fixed",
                                                 "me/wikitext-mirror")


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def both(offline):  # noqa: F811
    """The data folder (``$TOKRAG_DATA_DIR``) holds each data set's own copy, with the question 'data folder q'; the
    hub cache holds the mirrors, with 'mirror q'. Returns (data folder, hub cache)."""
    data = offline
    (data / "nq_open").mkdir()
    (data / qa_data.NQ_OPEN_FILE).write_text(_jsonl([{"question": "data folder q", "answer": ["d"]}]))
    (data / "webquestions").mkdir()
    (data / "webquestions" / "test.json").write_text(json.dumps([{"qId": "d1", "qText": "data folder q", "answers": ["d"]}]))
    tqa = data / "trivia_qa" / "unfiltered.nocontext"
    tqa.mkdir(parents=True)
    (tqa / "validation.jsonl").write_text(_jsonl([{"question": "data folder q", "question_id": "d1",
                                                   "answer": {"value": "d", "aliases": []}}]))
    wt = data / wikitext.LOCAL_NAME / wikitext.HUB_CONFIG
    wt.mkdir(parents=True)
    (wt / "test.jsonl").write_text(_jsonl([{"page": " = Data Folder = \n data folder text \n"}]))

    hub = offline.parent / "hub"
    hub_snapshot(hub, NQ_MIRROR, {"validation.jsonl": _jsonl([{"question": "mirror q", "answer": ["m"]}])})
    hub_snapshot(hub, WEBQ_MIRROR, {"test.jsonl": _jsonl([{"question": "mirror q", "answers": ["m"]}]),
                                    "train.jsonl": _jsonl([{"question": "mirror train q", "answers": ["t"]}])})
    hub_snapshot(hub, TQA_MIRROR, {"unfiltered.nocontext/validation.jsonl": _jsonl([
        {"question": "mirror q", "question_id": "m1", "answer": {"value": "m", "aliases": []}}])})
    hub_snapshot(hub, WT_MIRROR, {f"{wikitext.HUB_CONFIG}/test.jsonl": _jsonl([{"page": " = Mirror = \n mirror text \n"}])})
    return data, hub


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


def _corpus(data: Path) -> str:
    """A one-passage corpus file (the pre-load check looks at its first lines), so the check's data lines are the
    questions'."""
    path = data / "passages.jsonl"
    path.write_text(_jsonl([{"id": "p1", "title": "T", "text": "mirror text"}]))
    return str(path)


def _questions(rows: list[dict]) -> list[str]:
    return [r["question"] for r in rows]


def test_a_mirror_hub_id_is_read_not_the_data_folder(both):
    # old code: ['data folder q'] for every mirror below
    assert _questions(qa_data.load_nq_open(None, NQ_MIRROR)) == ["mirror q"]
    assert _questions(qa_data.load_webq(None, "test", WEBQ_MIRROR)) == ["mirror q"]
    assert _questions(qa_data._webq_pool(None, WEBQ_MIRROR)) == ["mirror train q"]  # old: None (no train file)
    assert _questions(load_family("triviaqa", hub_id=TQA_MIRROR)) == ["mirror q"]
    rows, source = hub_rows(WT_MIRROR, wikitext.HUB_CONFIG, wikitext.HUB_SPLIT, local_name=wikitext.LOCAL_NAME)
    assert [r["page"] for r in rows] == [" = Mirror = \n mirror text \n"]
    assert "datasets--me--wikitext-mirror" in source


def test_the_default_hub_id_keeps_the_data_folder_first(both):
    for hub_id in (qa_data.NQ_OPEN_HUB, ""):
        assert qa_data.load_nq_open(None, hub_id or qa_data.NQ_OPEN_HUB) == [
            {"qid": "nq-dev-0000", "question": "data folder q", "answers": ["d"]}]
    assert qa_data.load_webq(None, "test", qa_data.WEBQ_HUB) == [{"qid": "d1", "question": "data folder q", "answers": ["d"]}]
    for hub_id in (None, FAMILIES["triviaqa"]["hub_id"]):
        assert _questions(load_family("triviaqa", hub_id=hub_id)) == ["data folder q"]
    assert [r["page"] for r in hub_rows(wikitext.HUB_ID, wikitext.HUB_CONFIG, wikitext.HUB_SPLIT,
                                        local_name=wikitext.LOCAL_NAME)[0]] == [" = Data Folder = \n data folder text \n"]


def test_own_hub_id_is_the_default_of_each_data_folder_copy():
    from tasks.sources import own_hub_id

    assert {name: own_hub_id(f["local"]) == f["hub_id"] for name, f in FAMILIES.items()} == dict.fromkeys(FAMILIES, True)
    assert own_hub_id(wikitext.LOCAL_NAME) == wikitext.HUB_ID and own_hub_id("elsewhere") is None


def test_provenance_and_declared_files_record_the_mirror(both):
    from tasks.utils import qa_read_files

    data, _ = both
    assert dataset_files("nq_open", None, NQ_MIRROR) == {}  # old: {'nq_open/NQ-open.dev.jsonl': ...}
    assert dataset_files("webq", None, WEBQ_MIRROR) == {}  # old: {'webquestions/test.json': ...}
    assert dataset_files("nq_open", None, qa_data.NQ_OPEN_HUB) == {qa_data.NQ_OPEN_FILE: data / qa_data.NQ_OPEN_FILE}

    assert qa_provenance("nq_open", {"hub_id": NQ_MIRROR}, {})["files"] == {
        "questions": {"hub_id": NQ_MIRROR, "split": "validation"}}  # old: the data folder's file
    assert qa_provenance("webq", {"hub_id": WEBQ_MIRROR}, {})["files"] == {
        "questions": {"hub_id": WEBQ_MIRROR, "split": "test"}, "questions_pool": {"hub_id": WEBQ_MIRROR, "split": "train"}}
    assert qa_provenance("triviaqa", {"hub_id": TQA_MIRROR}, {})["files"] == {
        "questions": {"hub_id": TQA_MIRROR, "split": "validation", "config": "unfiltered.nocontext"}}
    assert wikitext_provenance({"hub_id": WT_MIRROR}, {})["files"] == {
        "text": {"hub_id": WT_MIRROR, "split": "test", "config": wikitext.HUB_CONFIG}}
    assert set(qa_provenance("triviaqa", {}, {})["files"]) == {"trivia_qa/unfiltered.nocontext/validation.jsonl"}

    corpus = {"corpus": str(data / "passages.jsonl")}  # not a named corpus: only the question files are listed
    assert qa_read_files({"dataset": "nq_open", "hub_id": NQ_MIRROR, **corpus}, "nq_open_bm25") == []
    assert qa_read_files({"dataset": "nq_open", **corpus}, "nq_open_bm25") == [data / qa_data.NQ_OPEN_FILE]
    assert qa_read_files({"dataset": "triviaqa", "hub_id": TQA_MIRROR, **corpus}, "triviaqa_bm25_wiki") == []
    assert qa_read_files({"dataset": "triviaqa", **corpus}, "triviaqa_bm25_wiki") == [
        data / "trivia_qa" / "unfiltered.nocontext" / "validation.jsonl"]


@pytest.mark.parametrize("task, hub_id, head", [
    ("nq_open_bm25", "me/nq-none", "cannot load the hub dataset 'me/nq-none', split 'validation': HF_HUB_OFFLINE=1 and "
                                   "it is neither in the hub cache"),
    ("webq_bm25", "me/webq-none", "cannot load the hub dataset 'me/webq-none', split 'test': HF_HUB_OFFLINE=1 and "
                                  "it is neither in the hub cache"),
])
def test_offline_an_uncached_mirror_is_refused_before_the_model_loads(both, manager, task, hub_id, head):
    """The data folder has the data set, so the old code passed and read it; the line says the hub id cannot be read and
    how to give a local copy, not to set the data folder (which would not be read for this hub_id)."""
    from tasks.precheck import check_selected_tasks

    with pytest.raises(OfflineError) as exc:
        check_selected_tasks(manager, [task], {"hub_id": hub_id, "corpus": _corpus(both[0])})
    msg = str(exc.value)
    default = qa_data.NQ_OPEN_HUB if task.startswith("nq") else qa_data.WEBQ_HUB
    fix = (f"Offline, give a local copy of {hub_id} in the hub's layout as hub_id: with lm_eval / tokrag eval, "
           "--metadata '{\"hub_id\": \"/path/to/copy\"}'; in a leaderboard (no --metadata), the task YAML's metadata: "
           "{hub_id: /path/to/copy} (the data folder, $TOKRAG_DATA_DIR or metadata data_dir, is read only for the hub "
           f"id {default})")
    assert msg.startswith(head) and msg.endswith(". " + fix) and "\n" not in msg, msg
    load = (lambda: qa_data.load_nq_open(None, hub_id)) if task.startswith("nq") else (lambda: qa_data.load_webq(None, "test", hub_id))
    with pytest.raises(OfflineError) as exc:  # the task build's own line ends with the same fix
        load()
    assert str(exc.value).startswith(f"cannot load the hub dataset {hub_id!r} (split ") and str(exc.value).endswith(fix)


def test_offline_an_uncached_family_mirror_is_refused_before_the_model_loads(both, manager):
    from tasks.precheck import check_selected_tasks

    with pytest.raises(OfflineError) as exc:  # old code: passed (the data folder's trivia_qa copy), read it
        check_selected_tasks(manager, ["triviaqa_bm25_wiki"], {"hub_id": "someone/none", "corpus": _corpus(both[0])})
    assert str(exc.value) == (
        "cannot load the hub dataset 'someone/none' (unfiltered.nocontext), split 'validation': HF_HUB_OFFLINE=1 and it "
        f"is neither in the hub cache ({both[1] / 'datasets--someone--none'}) nor in the datasets cache "
        f"({both[1].parent / 'datasets' / 'someone___none'}). Offline, give a local copy in the hub's layout: its path "
        "as hub_id: with lm_eval / tokrag eval, --metadata '{\"hub_id\": \"/path/to/trivia_qa\"}'; in a leaderboard (no "
        "--metadata), the task YAML's metadata: {hub_id: /path/to/trivia_qa} (the data folder's 'trivia_qa' folder is "
        "read only for the hub id mandarjoshi/trivia_qa)")
    with pytest.raises(OfflineError) as load:  # the loader says the same
        load_family("triviaqa", hub_id="someone/none")
    assert str(load.value).startswith("cannot load the hub dataset 'someone/none' (unfiltered.nocontext), split "
                                      "'validation': ") and str(load.value).endswith(str(exc.value).rpartition(". ")[2])


def test_the_precheck_passes_a_cached_mirror(both, manager):
    from tasks.precheck import check_selected_tasks

    for task, hub_id in (("nq_open_bm25", NQ_MIRROR), ("webq_bm25", WEBQ_MIRROR), ("triviaqa_bm25_wiki", TQA_MIRROR)):
        check_selected_tasks(manager, [task], {"hub_id": hub_id, "corpus": _corpus(both[0])})
