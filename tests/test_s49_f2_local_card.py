"""A local copy given as ``hub_id`` (or found in the data folder) with a README.md ``configs:`` card, as ``hf download
<repo> --repo-type dataset --local-dir <folder>`` makes one, was read by the file-name layout only (``<folder>/<split>*``,
``data/``, ``<config>/``), its card ignored: the default config's files were not the ones read (a flat ``test.jsonl``
was), an undeclared split and a malformed card were read from flat files. It is now read by the hub cache snapshot's
card logic (:func:`tasks.sources._card_files`), as ``datasets.load_dataset(<folder>)`` reads it; a folder without a card
as before. Offline, a snapshot's card pattern that is an ``hf://`` URL escaped as huggingface_hub's bare
``OfflineModeIsEnabled`` ("Cannot reach https://huggingface.co/api/datasets/...: offline mode is enabled ..."): now one
ConfigError line naming the card, the pattern and what to do (s49 f2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.sources import check_hub_source, hub_rows, load_family, local_copy
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)

CARD = ("---\nconfigs:\n- config_name: small\n  data_files:\n  - split: test\n    path: parts/small-test.jsonl\n"
        "- config_name: big\n  default: true\n  data_files:\n  - split: test\n    path: parts/big-test-*.jsonl\n"
        "- config_name: plain\n  data_dir: plain_files\n---\n# My questions\n")


def _jsonl(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answers": ["{q[-1]}"]}}\n' for q in questions)


def _folder(root: Path, files: dict[str, str]) -> Path:
    """A folder as ``hf download --local-dir`` leaves it: the repository's files and its hidden ``.cache/huggingface/``."""
    files = {".gitattributes": "*.parquet filter=lfs\n", ".cache/huggingface/download/test.jsonl.metadata": "c\nx\n1\n",
             ".cache/huggingface/.gitignore": "*\n", **files}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _questions(hub_id: str, config: str | None, split: str = "test") -> list[str]:
    return [r["question"] for r in hub_rows(hub_id, config, split)[0]]


def test_a_local_folder_is_read_with_its_cards_config_as_a_snapshot_is(offline, tmp_path):
    files = {"README.md": CARD, "parts/small-test.jsonl": _jsonl("small a"),
             "parts/big-test-00001.jsonl": _jsonl("big b"), "parts/big-test-00000.jsonl": _jsonl("big a"),
             "plain_files/test.jsonl": _jsonl("plain a"), "other/test.jsonl": _jsonl("other a"),
             "test.jsonl": _jsonl("flat a")}  # the flat file: not the default config's (the old code read it)
    local = _folder(tmp_path / "my_questions", files)
    hub_snapshot(offline.parent / "hub", "me/two", files)
    for source in ("me/two", str(local)):
        assert {c: _questions(source, c) for c in (None, "small", "plain", "other")} == {
            None: ["big a", "big b"],  # the default config, its shards in name order (datasets.load_dataset(folder))
            "small": ["small a"],
            "plain": ["plain a"],  # a data_dir only: the split datasets infers there
            "other": ["other a"]}, source  # a config the card does not declare: its <config>/ folder, as before
    assert local_copy(str(local), None, "test") == (local, [local / "parts/big-test-00000.jsonl",
                                                            local / "parts/big-test-00001.jsonl"])
    check_hub_source(str(local), None, "test")


def test_a_data_folder_copy_with_a_card_is_read_where_the_card_puts_the_split(offline):
    """A family's copy in the data folder (``<data>/trivia_qa``) whose card declares the config elsewhere than
    ``<config>/``: read from the card's file (the old code refused: no files under ``unfiltered.nocontext/``)."""
    card = ("---\nconfigs:\n- config_name: unfiltered.nocontext\n  data_files:\n  - split: validation\n"
            "    path: exports/unfiltered-validation.jsonl\n---\n")
    row = '{"question": "who wrote hamlet", "question_id": "tc_1", "answer": {"value": "Shakespeare", "aliases": ["Bard"]}}\n'
    _folder(offline / "trivia_qa", {"README.md": card, "exports/unfiltered-validation.jsonl": row})
    assert load_family("triviaqa") == [{"qid": "tc_1", "question": "who wrote hamlet",
                                        "answers": ["Shakespeare", "Bard"], "gold_docids": []}]


def test_a_split_the_local_card_does_not_declare_is_refused_with_the_splits_it_declares(offline, tmp_path):
    """The card declares only test (default config 'big'): a flat train.jsonl is not read (datasets.load_dataset(folder)
    says: Unknown split "train"); the old code read it."""
    local = _folder(tmp_path / "qs", {"README.md": CARD, "parts/big-test-00000.jsonl": _jsonl("big a"),
                                      "train.jsonl": _jsonl("train a")})
    line = (f"{local}: no files for split 'train' (its README.md configs: metadata declares for config 'big' only the "
            "split test; as datasets reads a data set folder, files outside the card's patterns are not read); add the "
            "split's files to the card's configs:")
    for call in (lambda: hub_rows(str(local), None, "train"), lambda: check_hub_source(str(local), None, "train")):
        with pytest.raises(ConfigError) as exc:
            call()
        assert str(exc.value) == line
    with pytest.raises(ConfigError) as exc:  # a declared split whose pattern matches no file
        hub_rows(str(local), "small", "test")
    assert str(exc.value) == (
        f"{local}: no files for split 'test' of config 'small' (its README.md configs: metadata declares split 'test' of "
        "config 'small' as parts/small-test.jsonl, which matches no .parquet, .jsonl, .json, .tsv or .csv file there; as "
        "datasets reads a data set folder, files outside the card's patterns are not read); add the split's files to the "
        "card's configs:")


@pytest.mark.parametrize(("card", "why"), [
    ("---\nconfigs:\n- 1\n---\n", "a config is 1, not a mapping with a config_name"),
    ("---\nconfigs: [\n---\n", "while parsing a flow node expected the node content, but found '<stream end>'"),
], ids=["config_int", "not_yaml"])
def test_a_malformed_local_card_is_one_config_error_line(offline, tmp_path, card, why):
    local = _folder(tmp_path / "qs", {"README.md": card, "test.jsonl": _jsonl("flat a")})  # the old code read the file
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(local), None, "test")
    assert str(exc.value).startswith(f"{local / 'README.md'}: cannot read its configs metadata ({why}"), exc.value
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("readme", [None, "# My questions\n\nNo metadata.\n", "---\nlicense: mit\n---\n# Qs\n"],
                         ids=["no_card", "prose", "no_configs"])
def test_a_local_folder_without_a_cards_configs_is_read_as_before(offline, tmp_path, readme):
    local = _folder(tmp_path / "qs", {"test.jsonl": _jsonl("flat a"), "data/train-00000-of-00001.jsonl": _jsonl("t a"),
                                      **({"README.md": readme} if readme else {})})
    assert (_questions(str(local), None), _questions(str(local), None, "train")) == (["flat a"], ["t a"])
    with pytest.raises(ConfigError, match=r"no files for split 'validation'; lay it out like the hub: "):
        hub_rows(str(local), None, "validation")


def test_an_hf_url_pattern_offline_is_one_config_error_line(offline, tmp_path):
    """Offline, the snapshot's pattern hf://datasets/other/repo/... raised huggingface_hub's OfflineModeIsEnabled; a
    local copy's was ignored (its flat file read). Only the split asked for is concerned: train is read."""
    card = ("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
            "    path: hf://datasets/other/repo/test-*.parquet\n  - split: train\n    path: train.jsonl\n---\n")
    files = {"README.md": card, "test.jsonl": _jsonl("flat a"), "train.jsonl": _jsonl("t a")}
    snap = hub_snapshot(offline.parent / "hub", "me/remote", files)
    local = _folder(tmp_path / "remote", files)
    head = "config 'default' declares split 'test' as hf://datasets/other/repo/test-*.parquet, a remote file, which "
    for call in (lambda: check_hub_source("me/remote", None, "test"), lambda: hub_rows("me/remote", None, "test")):
        with pytest.raises(ConfigError) as exc:
            call()
        assert str(exc.value) == (
            f"{snap / 'README.md'}: {head}is not read offline (HF_HUB_OFFLINE=1); run once online (HF_HUB_OFFLINE "
            "unset: datasets reads and caches the data set), or download the split's files into a folder and give its "
            "path as hub_id")
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(local), None, "test")
    assert str(exc.value) == (f"{local / 'README.md'}: {head}a local copy is not read from; download it into {local} and "
                              "make the card's path relative to the folder, or give the data set's hub id as hub_id")
    assert _questions("me/remote", None, "train") == _questions(str(local), None, "train") == ["t a"]
