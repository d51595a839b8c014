"""Local copies and hub cache snapshots with a README.md ``configs:`` card, read as ``datasets.load_dataset(<folder>)`` /
``load_dataset(<folder>, <config>)`` reads them, or refused in one line (s50 f2; the repros, with what ``datasets`` 5.2
does offline on the same folders: /work/scratch/s50/f2/repro_ab.py, repro_cde.py):

a. a card pattern naming a hidden file (``.hidden/test.jsonl``, ``_x/.*.jsonl``) was skipped with a WARNING, so the copy
   was refused as holding "no files for split 'test'" (or read without it), while ``datasets`` reads it: a snapshot now
   reads it; a local copy refuses it in one line (a leaderboard's run key of the folder skips hidden files);
b. a split mixing formats (``.csv`` beside ``.jsonl``) was read whole, while ``datasets`` fails on it (a card's files) or
   reads only its most common format (a folder's layout): refused, naming the folder, the split and the two formats;
c. offline, a snapshot whose card declares configs 'a', 'b' was refused for config 'x' naming the snapshot's folders
   ("cached: data, other"): the line names the card's configs, as ``datasets`` ("BuilderConfig 'x' not found.
   Available: ['a', 'b']");
d. an NQ-open mirror (hub id) was read with its card's default config, 'other', while a local copy of the same files
   reads ``nq_open``: the mirror reads ``nq_open`` where its card declares it;
e. the data folder's own copy given by its path as hub_id, with a URL pattern, was told to "give the data set's hub id
   as hub_id", which finds the same folder (then told to move it): told to move it and give the hub id;
f. one read parsed the card three times (``card_configs``, then ``_card_config`` twice): once per content now.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from retrieval.errors import ConfigError, OfflineError
from tasks.data import check_qa_source, load_nq_open
from tasks.sources import check_hub_source, hub_rows
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)


def _card(body: str) -> str:
    return f"---\nconfigs:\n{body}---\n"


def _one(path: str, split: str = "test", name: str = "default") -> str:
    return _card(f"- config_name: {name}\n  data_files:\n  - split: {split}\n    path: {path}\n")


def _q(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answer": ["a"]}}\n' for q in questions)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _questions(rows: list[dict]) -> list[str]:
    return [r["question"] for r in rows]


# a. hidden files a card pattern names
@pytest.mark.parametrize(("pattern", "hidden"), [(".hidden/test.jsonl", ".hidden/test.jsonl"),
                                                 ("_x/.*.jsonl", "_x/.t.jsonl")])
def test_a_snapshot_reads_a_hidden_file_its_card_names_as_datasets_does(offline, caplog, pattern, hidden):
    """datasets.load_dataset on these files: ['h'] (the old code skipped it with a WARNING: 'neither the hub cache ...
    nor the datasets cache ... holds split 'test' ... which matches no ... file there')."""
    hub_snapshot(offline.parent / "hub", "me/hidden", {"README.md": _one(pattern), hidden: _q("h"),
                                                       "_x/u.jsonl": _q("u")})
    with caplog.at_level(logging.WARNING, logger="tasks.sources"):
        assert _questions(hub_rows("me/hidden", None, "test")[0]) == ["h"]
        check_hub_source("me/hidden", None, "test")
    assert "skipping hidden" not in caplog.text


@pytest.mark.parametrize(("pattern", "hidden"), [(".hidden/test.jsonl", ".hidden/test.jsonl"),
                                                 ("_x/.*.jsonl", "_x/.t.jsonl")])
def test_a_local_copy_refuses_a_hidden_file_its_card_names_in_one_line(offline, tmp_path, pattern, hidden):
    copy = _write(tmp_path / "copy", {"README.md": _one(pattern), hidden: _q("h"), "_x/u.jsonl": _q("u")})
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(copy), None, "test")
    assert str(exc.value) == (
        f"{copy / 'README.md'}: config 'default' declares split 'test' as {pattern}, which names the hidden file "
        f"{hidden} (a leading '.'); datasets reads it, but a leaderboard's run key, fingerprinting the folder, skips "
        "hidden files: rename it without the '.', and the card's path with it")


def test_a_hidden_file_a_glob_only_matches_is_still_skipped_as_datasets_skips_it(offline, tmp_path, caplog):
    copy = _write(tmp_path / "copy", {"README.md": _one("_x/*.jsonl"), "_x/.t.jsonl": _q("h"), "_x/u.jsonl": _q("u")})
    with caplog.at_level(logging.WARNING, logger="tasks.sources"):
        assert _questions(hub_rows(str(copy), None, "test")[0]) == ["u"]  # datasets: ['u']
    assert "skipping hidden file _x/.t.jsonl" in caplog.text


# b. mixed formats in one split
@pytest.mark.parametrize(("files", "line"), [
    ({"README.md": _one("d/*"), "d/a.csv": "question,answer\nc,a\n", "d/b.jsonl": _q("j")},
     "mixes CSV and JSON files (d/a.csv, d/b.jsonl)"),  # datasets: DatasetGenerationError (JSON parse of a.csv)
    ({"test.csv": "question,answer\nc,a\n", "test-1.jsonl": _q("j")},
     "mixes JSON and CSV files (test-1.jsonl, test.csv)"),  # datasets: ['j'] only
    ({"test/a.csv": "question,answer\nc,a\n", "test/b.tsv": "question\tanswer\nt\ta\n"},
     "mixes CSV and TSV files (test/a.csv, test/b.tsv)"),  # datasets: b.tsv read as CSV (one column 'question\tanswer')
], ids=["card", "layout", "csv_tsv"])
def test_a_split_of_two_formats_is_refused_naming_them(offline, tmp_path, files, line):
    """The old code read every file in its own format: ['c', 'j'] (card), ['j', 'c'] (layout)."""
    copy = _write(tmp_path / "copy", files)
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(copy), None, "test")
    assert str(exc.value) == (
        f"{copy}: split 'test' {line}; datasets.load_dataset reads all of a data set's files as one format, so it "
        "fails on such a split or reads it otherwise (only its most common format, or a .tsv as a .csv): keep the "
        "split in one format")
    snap = hub_snapshot(offline.parent / "hub", "me/mixed", files)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(snap))}: split 'test' mixes "):
        check_hub_source("me/mixed", None, "test")


def test_json_beside_jsonl_is_one_format_and_read_whole(offline, tmp_path):
    copy = _write(tmp_path / "copy", {"test/a.json": '[{"question": "a1", "answer": ["a"]}]', "test/b.jsonl": _q("j")})
    assert _questions(hub_rows(str(copy), None, "test")[0]) == ["a1", "j"]  # datasets: ['a1', 'j']


# c. a config the snapshot's card does not declare
TWO = _card("- config_name: a\n  data_files:\n  - split: test\n    path: a.jsonl\n"
            "- config_name: b\n  data_files:\n  - split: test\n    path: b.jsonl\n")


def test_a_config_the_snapshots_card_does_not_declare_is_refused_naming_the_cards_configs(offline):
    snap = hub_snapshot(offline.parent / "hub", "me/two", {"README.md": TWO, "a.jsonl": _q("qa"), "b.jsonl": _q("qb"),
                                                           "data/notes.txt": "x", "other/notes.txt": "y"})
    card = "the snapshot's README.md configs: metadata declares only the configs 'a', 'b'; datasets.load_dataset " \
           "refuses config 'x'"
    with pytest.raises(OfflineError) as exc:
        check_hub_source("me/two", "x", "test")
    hub, ds = snap.parent.parent, offline.parent / "datasets" / "me___two"
    assert str(exc.value).startswith(
        f"cannot load the hub dataset 'me/two' (x), split 'test': HF_HUB_OFFLINE=1 and neither the hub cache ({hub}) "
        f"nor the datasets cache ({ds}) holds split 'test' of config 'x' ({card}). Offline, give a local copy")
    assert "cached: data, other" not in str(exc.value)  # the old line: the snapshot's folders
    with pytest.raises(OfflineError) as exc:
        hub_rows("me/two", "x", "test")
    assert (f"split 'test': ConnectionError: Couldn't reach 'me/two' on the Hub (OfflineModeIsEnabled); {card}. "
            "Offline, give a local copy") in str(exc.value)
    assert _questions(hub_rows("me/two", "b", "test")[0]) == ["qb"]


# d. an NQ-open mirror reads nq_open where its card declares it
def test_an_nq_mirror_reads_nq_open_not_its_cards_default_config(offline, tmp_path, monkeypatch):
    """datasets.load_dataset(<copy>, 'nq_open'): ['nq q']; load_dataset(<copy>): ['other q'] (the mirror's old rows)."""
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    files = {"README.md": _card("- config_name: other\n  default: true\n  data_files:\n  - split: validation\n"
                                "    path: other.jsonl\n- config_name: nq_open\n  data_files:\n  - split: validation\n"
                                "    path: nq.jsonl\n"),
             "other.jsonl": _q("other q"), "nq.jsonl": _q("nq q")}
    hub_snapshot(offline.parent / "hub", "me/nq-mirror", files)
    local = _write(tmp_path / "nq_copy", files)
    assert _questions(load_nq_open(None, hub_id="me/nq-mirror")) == ["nq q"]
    assert _questions(load_nq_open(None, hub_id=str(local))) == ["nq q"]  # the local copy, as before
    check_qa_source("nq_open", None, None, "me/nq-mirror")


def test_an_nq_mirror_whose_card_lacks_nq_open_keeps_its_default_config(offline, monkeypatch):
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    hub_snapshot(offline.parent / "hub", "me/nq-default", {"README.md": _one("exports/*.jsonl", "validation"),
                                                            "exports/dev.jsonl": _q("d1", "d2")})
    assert _questions(load_nq_open(None, hub_id="me/nq-default")) == ["d1", "d2"]


# e. the data folder's copy named by its path, with a URL card
def test_the_data_folders_copy_named_by_path_is_told_to_move_it_and_give_the_hub_id(offline):
    """The old line ended 'or give the data set's hub id as hub_id', which finds this folder again."""
    copy = _write(offline / "PopQA", {"README.md": _one("hf://datasets/akariasai/PopQA/test.tsv")})
    head = (f"{copy / 'README.md'}: config 'default' declares split 'test' as hf://datasets/akariasai/PopQA/test.tsv, "
            f"a remote file, which a local copy is not read from; download it into {copy} and make the card's path "
            "relative to the folder, or move the folder out of the data folder, or rename it, to read the hub "
            "(offline: its cache) instead")
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(copy), None, "test", local_name="PopQA")
    assert str(exc.value) == head + ", with the data set's hub id as hub_id"
    with pytest.raises(ConfigError) as exc:
        hub_rows("akariasai/PopQA", None, "test", local_name="PopQA")  # found by the hub id: as before
    assert str(exc.value) == head


# f. the card parsed once per read
def test_one_read_parses_the_card_once(offline, tmp_path, monkeypatch):
    import huggingface_hub.repocard

    monkeypatch.delenv("TOKRAG_DATA_DIR")
    parsed: list[str] = []
    real = huggingface_hub.repocard.metadata_load
    monkeypatch.setattr(huggingface_hub.repocard, "metadata_load", lambda p: parsed.append(str(p)) or real(p))
    local = _write(tmp_path / "nq_copy", {"README.md": _one("exports/dev.jsonl", "validation"),
                                          "exports/dev.jsonl": _q("q1", "q2")})
    assert _questions(load_nq_open(None, hub_id=str(local))) == ["q1", "q2"]
    assert parsed == [str(local / "README.md")]  # the old code: 3 (card_configs, _card_config, then the read's)
    (local / "README.md").write_text(_one("exports/*.jsonl", "validation"), encoding="utf-8")  # a new content
    (local / "exports" / "more.jsonl").write_text(_q("q3"), encoding="utf-8")
    assert _questions(load_nq_open(None, hub_id=str(local))) == ["q1", "q2", "q3"]
    assert len(parsed) == 2
