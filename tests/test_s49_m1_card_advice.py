"""What the README.md ``configs:`` card refusals advise, per kind of copy (s49 m1, reviewer r4's findings 2-4):

* a hub cache snapshot (a mirror hub id, a rag_qa_* ``questions`` hub id) whose card declares several configs, none
  the default, was told to "mark the config to read default: true", i.e. to edit a file of the hub cache; neither
  caller can name a config. It is now told to choose one and give it the caller's way (a folder as hub_id, or a
  ``questions`` JSONL file); a local copy keeps the card advice;
* a copy found in the data folder (``<data>/trivia_qa``) whose card declares the split as a URL was told "or give the
  data set's hub id as hub_id", which finds the same folder again: it is told to move the folder out of the data
  folder instead; a folder given as hub_id keeps the hub id advice;
* a local NQ-open copy whose card declares ``nq_open`` beside another config (neither the default) was refused since
  b7ddc27 (load_nq_open asked for the default config of any card with configs), and a card whose configs declare no
  files stopped ``<copy>/nq_open/`` being searched; both are read as ``nq_open`` again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.byo import OFFLINE_FIX, load_questions
from tasks.data import check_qa_source, load_nq_open
from tasks.sources import SNAPSHOT_FIX, hub_rows
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)


def _nq(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answer": ["a"]}}\n' for q in questions)


def _qa(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answers": ["a"]}}\n' for q in questions)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _two_configs(split: str) -> str:
    return (f"---\nconfigs:\n- config_name: a\n  data_files:\n  - split: {split}\n    path: x.jsonl\n"
            f"- config_name: b\n  data_files:\n  - split: {split}\n    path: y.jsonl\n---\n")


def _several(card: Path, fix: str) -> str:
    return (f"{card}: its configs metadata declares the configs 'a', 'b' and none is the default (named default or "
            "marked default: true), and the task names no config; as datasets.load_dataset refuses such a data set "
            f"without a config name, {fix}")


def test_a_snapshot_with_several_configs_is_told_the_callers_way_not_to_edit_the_cached_card(offline, monkeypatch):
    """The old line ended 'mark the config to read default: true' for both: an edit of the hub cache's README.md."""
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    mirror = hub_snapshot(offline.parent / "hub", "me/mirror", {"README.md": _two_configs("validation"),
                                                                "x.jsonl": _nq("x"), "y.jsonl": _nq("y")})
    with pytest.raises(ConfigError) as exc:
        load_nq_open(None, hub_id="me/mirror")
    assert str(exc.value) == _several(mirror / "README.md", f"choose the config to read, then {SNAPSHOT_FIX}")
    assert SNAPSHOT_FIX == "download the split's files into a folder and give its path as hub_id"
    qs = hub_snapshot(offline.parent / "hub", "me/qs", {"README.md": _two_configs("test"), "x.jsonl": _qa("x"),
                                                        "y.jsonl": _qa("y")})
    with pytest.raises(ConfigError) as exc:
        load_questions("me/qs")  # rag_qa_*'s questions: a JSONL file, never a folder as hub_id
    assert str(exc.value) == _several(qs / "README.md", f"choose the config to read, then {OFFLINE_FIX}")


def test_a_local_copy_with_several_configs_keeps_the_card_advice(offline, tmp_path):
    local = _write(tmp_path / "copy", {"README.md": _two_configs("test"), "x.jsonl": _qa("x"), "y.jsonl": _qa("y")})
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(local), None, "test")
    assert str(exc.value) == _several(local / "README.md", "mark the config to read default: true")


URL_CARD = ("---\nconfigs:\n- config_name: unfiltered.nocontext\n  data_files:\n  - split: validation\n"
            "    path: hf://datasets/other/repo/v-*.parquet\n---\n")


def _url_line(folder: Path, fix: str) -> str:
    return (f"{folder / 'README.md'}: config 'unfiltered.nocontext' declares split 'validation' as "
            "hf://datasets/other/repo/v-*.parquet, a remote file, which a local copy is not read from; download it "
            f"into {folder} and make the card's path relative to the folder, or {fix}")


def test_a_data_folder_copys_url_card_is_told_to_move_it_not_to_give_the_hub_id_it_was_found_by(offline):
    """The old line ended 'or give the data set's hub id as hub_id': the family already does, and finds this folder."""
    copy = _write(offline / "trivia_qa", {"README.md": URL_CARD})
    with pytest.raises(ConfigError) as exc:
        hub_rows("mandarjoshi/trivia_qa", "unfiltered.nocontext", "validation", local_name="trivia_qa")
    assert str(exc.value) == _url_line(copy, "move the folder out of the data folder, or rename it, to read the hub "
                                             "(offline: its cache) instead")


def test_a_copy_given_as_hub_id_with_a_url_card_keeps_the_hub_id_advice(offline, tmp_path):
    copy = _write(tmp_path / "elsewhere" / "trivia_qa", {"README.md": URL_CARD})
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(copy), "unfiltered.nocontext", "validation", local_name="trivia_qa")
    assert str(exc.value) == _url_line(copy, "give the data set's hub id as hub_id")


@pytest.mark.parametrize("card", [
    "- config_name: nq_open\n  data_files:\n  - split: validation\n    path: nq_open/validation-*\n"
    "- config_name: other\n  data_files:\n  - split: validation\n    path: other/validation-*\n",
    "- config_name: default\n",  # configs that declare no files: read in the layout, nq_open/ first
], ids=["nq_open_beside_other", "configs_without_files"])
def test_a_local_nq_copy_is_read_as_nq_open_where_its_card_allows(offline, tmp_path, monkeypatch, card):
    """The old code asked for the default config: 'none is the default' refused the first card, and the second read
    only <copy>/validation* and <copy>/data/, so nq_open/ was missed ('no files for split 'validation'')."""
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    local = _write(tmp_path / "copy", {"README.md": f"---\nconfigs:\n{card}---\n",
                                       "nq_open/validation-00000-of-00001.jsonl": _nq("q1", "q2"),
                                       "other/validation-0.jsonl": _nq("o1")})
    assert [r["question"] for r in load_nq_open(None, hub_id=str(local))] == ["q1", "q2"]
    check_qa_source("nq_open", None, None, str(local))  # the pre-load check agrees
