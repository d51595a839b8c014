"""A local NQ-open copy (``hub_id=<folder>``, as ``hf download --local-dir`` makes one) whose README.md ``configs:`` card
declares only ``config_name: default`` was refused ("no files for split 'validation' (config 'nq_open'); lay it out like
the hub: <folder>/nq_open/validation.jsonl"), while the same files as a hub cache mirror (``me/nq-mirror``) were read
through the card's default config: load_nq_open asked a local copy for config ``nq_open``, which that card does not
declare, so the card was ignored. A local copy with a card is now read as ``datasets.load_dataset(<folder>)`` reads it
(the card's default config), as the mirror is; a card declaring several configs, none of them the default, is refused
naming them (``datasets``: "Config name is missing"), and a family's config that a local card does not declare is
refused naming the configs the card declares. Also: a bring-your-own ``questions`` hub id whose cached card declares
the split as a URL was told to "give its path as hub_id", which rag_qa_* does not read: it is now told to give a JSONL
file as ``questions``; and "which match" is "which matches" for one pattern (s49 f5, u1's walkthrough)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.byo import load_questions
from tasks.data import check_qa_source, load_nq_open
from tasks.sources import hub_rows
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)

QUESTIONS = ["who wrote hamlet", "what is the capital of france"]


def _nq(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answer": ["a"]}}\n' for q in questions)


def _card(configs: str) -> str:
    return f"---\nconfigs:\n{configs}---\n# My NQ-open copy\n"


DEFAULT_ONLY = _card("- config_name: default\n  data_files:\n  - split: validation\n    path: exports/dev.jsonl\n")
TWO_NONE_DEFAULT = _card("- config_name: a\n  data_files:\n  - split: validation\n    path: exports/dev.jsonl\n"
                         "- config_name: b\n  data_files:\n  - split: validation\n    path: exports/b.jsonl\n")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _no_data_folder(monkeypatch):
    monkeypatch.delenv("TOKRAG_DATA_DIR")  # the hub_id route, not the data folder's NQ_OPEN_FILE


def test_a_local_nq_copy_with_a_default_only_card_is_read_as_its_mirror_is(offline, tmp_path, monkeypatch):
    """u1's mirror_vs_local.py: the old code read the mirror (2 questions) and refused the local copy."""
    _no_data_folder(monkeypatch)
    files = {"README.md": DEFAULT_ONLY, "exports/dev.jsonl": _nq(*QUESTIONS)}
    hub_snapshot(offline.parent / "hub", "me/nq-mirror", files)
    local = _write(tmp_path / "nq_copy", files)
    assert [r["question"] for r in load_nq_open(None, hub_id="me/nq-mirror")] == QUESTIONS
    assert [r["question"] for r in load_nq_open(None, hub_id=str(local))] == QUESTIONS
    check_qa_source("nq_open", None, None, str(local))  # the pre-load check agrees


def test_a_local_nq_copy_whose_card_has_no_default_is_refused_naming_its_configs(offline, tmp_path, monkeypatch):
    """datasets.load_dataset(folder): Config name is missing ... ['a', 'b']; the old code said only 'lay it out like the
    hub: <folder>/nq_open/validation.jsonl', the card ignored. The mirror of the same files is refused alike, but told
    to give a folder as hub_id: its card is a file of the hub cache (s49 m1; b7ddc27 told it to edit the card)."""
    _no_data_folder(monkeypatch)
    files = {"README.md": TWO_NONE_DEFAULT, "exports/dev.jsonl": _nq("x"), "exports/b.jsonl": _nq("y")}
    snap = hub_snapshot(offline.parent / "hub", "me/nq-two", files)
    local = _write(tmp_path / "nq_copy", files)
    fixes = {"me/nq-two": "choose the config to read, then download the split's files into a folder and give its "
                          "path as hub_id",  # the hub cache's card is not to be edited (s49 m1)
             str(local): "mark the config to read default: true"}
    for source, card in (("me/nq-two", snap / "README.md"), (str(local), local / "README.md")):
        with pytest.raises(ConfigError) as exc:
            load_nq_open(None, hub_id=source)
        assert str(exc.value) == (
            f"{card}: its configs metadata declares the configs 'a', 'b' and none is the default (named default or "
            "marked default: true), and the task names no config; as datasets.load_dataset refuses such a data set "
            f"without a config name, {fixes[source]}")


@pytest.mark.parametrize("layout", ["hub_card", "nq_open_folder", "flat", "data_folder"])
def test_real_nq_open_layouts_are_read_as_before(offline, tmp_path, monkeypatch, layout):
    """NQ-open's own card (config nq_open, nq_open/validation-*), its nq_open/ folder without a card, a flat
    validation.jsonl and data/validation-*: read on the old code and the new."""
    _no_data_folder(monkeypatch)
    files = {
        "hub_card": {"README.md": _card("- config_name: nq_open\n  data_files:\n  - split: train\n    path: "
                                        "nq_open/train-*\n  - split: validation\n    path: nq_open/validation-*\n"),
                     "nq_open/validation-00000-of-00001.jsonl": _nq(*QUESTIONS), "validation.jsonl": _nq("flat")},
        "nq_open_folder": {"nq_open/validation-00000-of-00001.jsonl": _nq(*QUESTIONS)},
        "flat": {"validation.jsonl": _nq(*QUESTIONS)},
        "data_folder": {"data/validation-00000-of-00001.jsonl": _nq(*QUESTIONS)}}[layout]
    local = _write(tmp_path / "nq_copy", files)
    assert [r["question"] for r in load_nq_open(None, hub_id=str(local))] == QUESTIONS


def test_a_config_the_local_card_does_not_declare_is_refused_naming_the_cards_configs(offline, tmp_path):
    """The old line: '<folder>: no files for split 'validation' (config 'unfiltered.nocontext'); lay it out like the
    hub: ...', the card's configs unnamed."""
    local = _write(tmp_path / "trivia_qa", {"README.md": TWO_NONE_DEFAULT, "exports/dev.jsonl": _nq("x"),
                                            "exports/b.jsonl": _nq("y")})
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(local), "unfiltered.nocontext", "validation")
    assert str(exc.value) == (
        f"{local}: no files for split 'validation' (config 'unfiltered.nocontext'; its README.md configs: metadata "
        "declares only the configs 'a', 'b', so it is read in the hub's layout (datasets.load_dataset would refuse "
        "config 'unfiltered.nocontext')); declare config 'unfiltered.nocontext' in the card, or lay it out like the hub: "
        f"{local}/unfiltered.nocontext/validation.jsonl (or -*.parquet, .tsv, .csv)")
    assert [r["question"] for r in hub_rows(str(local), "b", "validation")[0]] == ["y"]  # a declared config: read


def test_a_byo_hub_ids_url_card_names_the_questions_file_route(offline):
    """u1's byo_url.py: the old line ended 'download the split's files into a folder and give its path as hub_id',
    which the rag_qa_* tasks cannot use (questions takes a JSONL file; hub_id is not theirs)."""
    card = _card("- config_name: default\n  data_files:\n  - split: test\n    path: hf://datasets/other/repo/test-*.parquet\n")
    snap = hub_snapshot(offline.parent / "hub", "me/url", {"README.md": card, "questions/test.jsonl": _nq("q")})
    with pytest.raises(ConfigError) as exc:
        load_questions("me/url")
    assert str(exc.value) == (
        f"{snap / 'README.md'}: config 'default' declares split 'test' as hf://datasets/other/repo/test-*.parquet, a "
        "remote file, which is not read offline (HF_HUB_OFFLINE=1); run once online (HF_HUB_OFFLINE unset: datasets "
        "reads and caches the data set), or write the split's rows to a JSONL file, one {question, answers} object per "
        "line, and give that file as questions (--metadata '{\"questions\": \"/path/to/questions.jsonl\"}'; in a "
        "leaderboard, the task YAML's metadata: {questions: /path/to/questions.jsonl})")
    with pytest.raises(ConfigError, match=r"or download the split's files into a folder and give its path as hub_id$"):
        hub_rows("me/url", None, "test")  # a family's caller keeps the hub_id route


@pytest.mark.parametrize(("paths", "verb"), [(["exports/none.jsonl"], "matches"),
                                              (["exports/none.jsonl", "exports/nor.jsonl"], "match")])
def test_which_matches_agrees_with_the_number_of_patterns(offline, tmp_path, paths, verb):
    card = _card("- config_name: default\n  data_files:\n  - split: validation\n    path:\n"
                 + "".join(f"    - {p}\n" for p in paths))
    local = _write(tmp_path / "copy", {"README.md": card, "validation.jsonl": _nq("flat")})
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(local), None, "validation")
    assert f"as {', '.join(paths)}, which {verb} no .parquet, .jsonl, .json, .tsv or .csv file there;" in str(exc.value)
