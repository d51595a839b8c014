"""Offline (``HF_HUB_OFFLINE=1``), a hub cache snapshot whose split files lie where its README.md's ``configs:`` metadata
declares them (google-research-datasets/nq_open: ``nq_open/validation-*``) was read only in a local copy's layout
(``<snapshot>/<split>*``, ``data/``, ``<config>/``), so a bring-your-own hub id and an NQ-open mirror (config None) were
refused although the files were there ("neither the hub cache ... nor the datasets cache ... holds split 'test'").
:func:`tasks.sources.hub_snapshot_files` now reads the files the card declares for the config asked for (a task
without a config: the card's default one), as ``datasets.load_dataset`` reads the hub data set; a config the card does not
declare is read in a local copy's layout. A malformed card is one ConfigError line, and a split the card does not give
any file is refused with the card's reason (s48 m1, review r1's findings 4 and 5)."""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval.errors import ConfigError, OfflineError
from tasks import byo, data
from tasks.sources import check_hub_source, hub_rows
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)

NQ_CARD = ("---\nconfigs:\n- config_name: nq_open\n  data_files:\n  - split: train\n    path: nq_open/train-*\n"
           "  - split: validation\n    path: nq_open/validation-*\n---\n")  # the hub's card of NQ-open
ROWS = [{"question": "who wrote hamlet", "answer": ["Shakespeare"], "answers": ["Shakespeare"]},
        {"question": "capital of peru", "answer": ["Lima"], "answers": ["Lima"]}]


@pytest.fixture()
def hub_only(offline, monkeypatch):
    """Offline, empty caches, and no data folder: the loaders go to the hub (its cache)."""
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    return offline.parent / "hub"


def _jsonl(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answers": ["{q[-1]}"]}}\n' for q in questions)


def test_byo_hub_id_is_read_where_its_card_puts_the_split(hub_only):
    snap = hub_snapshot(hub_only, "me/my-questions", {"README.md": NQ_CARD.replace("validation", "test")})
    (snap / "nq_open").mkdir()
    pq.write_table(pa.Table.from_pylist(ROWS), snap / "nq_open" / "test-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:1]), snap / "nq_open" / "train-00000-of-00001.parquet")
    check_hub_source("me/my-questions", None, "test")
    assert hub_rows("me/my-questions", None, "test") == (ROWS, str(snap))
    assert [(r["qid"], r["question"], r["answers"], r["where"]) for r in byo.load_questions("me/my-questions")] == [
        ("q0", "who wrote hamlet", ["Shakespeare"], "me/my-questions[test][0]"),
        ("q1", "capital of peru", ["Lima"], "me/my-questions[test][1]")]
    assert [r["question"] for r in data.load_qa_split("byo", "test", None, None, None, questions="me/my-questions")] == [
        "who wrote hamlet", "capital of peru"]  # the task build's reader


def test_nq_open_mirror_is_read_from_its_default_configs_files(hub_only):
    """A mirror is read with its default config (None): the only config its card declares, ``nq_open``."""
    snap = hub_snapshot(hub_only, "me/nq_open_mirror", {"README.md": NQ_CARD})
    (snap / "nq_open").mkdir()
    pq.write_table(pa.Table.from_pylist(ROWS), snap / "nq_open" / "validation-00000-of-00001.parquet")
    data.check_qa_source("nq_open", hub_id="me/nq_open_mirror")
    assert data.load_nq_open(None, hub_id="me/nq_open_mirror") == [
        {"qid": "nq-dev-0000", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
        {"qid": "nq-dev-0001", "question": "capital of peru", "answers": ["Lima"]}]


def test_the_config_asked_for_else_the_default_one(hub_only):
    card = ("---\nconfigs:\n- config_name: small\n  data_files:\n  - split: test\n    path: parts/small-test.jsonl\n"
            "- config_name: big\n  default: true\n  data_files:\n  - split: test\n    path: parts/big-test-*.jsonl\n"
            "- config_name: plain\n  data_dir: plain_files\n---\n")
    snap = hub_snapshot(hub_only, "me/two", {
        "README.md": card, "parts/small-test.jsonl": _jsonl("small a"),
        "parts/big-test-00001.jsonl": _jsonl("big b"), "parts/big-test-00000.jsonl": _jsonl("big a"),
        "plain_files/test.jsonl": _jsonl("plain a"), "other/test.jsonl": _jsonl("other a"),
        "test.jsonl": _jsonl("flat a")})  # the flat file: not the default config's
    questions = {c: [r["question"] for r in hub_rows("me/two", c, "test")[0]] for c in (None, "small", "plain", "other")}
    assert questions == {None: ["big a", "big b"],  # the shards in name order, as datasets resolves them
                         "small": ["small a"],
                         "plain": ["plain a"],  # a data_dir only: the split datasets infers there
                         "other": ["other a"]}  # a config the card does not declare: its <config>/ folder, as before
    assert hub_rows("me/two", None, "test")[1] == str(snap)


def test_a_declared_split_without_its_files_is_refused(hub_only):
    """The card declares validation as nq_open/validation-*: a flat validation.jsonl is not that split's file (datasets
    would not read it either), and the check and the loader refuse with their lines."""
    hub_snapshot(hub_only, "me/nq_like", {"README.md": NQ_CARD, "nq_open/train-00000-of-00001.jsonl": _jsonl("t a"),
                                          "validation.jsonl": _jsonl("flat a")})
    with pytest.raises(OfflineError) as exc:
        check_hub_source("me/nq_like", None, "validation")
    assert str(exc.value).startswith(
        "cannot load the hub dataset 'me/nq_like', split 'validation': HF_HUB_OFFLINE=1 and neither the hub cache "
        f"({hub_only / 'datasets--me--nq_like'}) nor the datasets cache "
        f"({hub_only.parent / 'datasets' / 'me___nq_like'}) holds split 'validation' (the snapshot's README.md configs: "
        "metadata declares split 'validation' of config 'nq_open' as nq_open/validation-*, which matches no .parquet, "
        ".jsonl, .json, .tsv or .csv file there; as datasets reads a hub data set, files outside the card's patterns are "
        "not read). Offline, give a local copy"), exc.value
    with pytest.raises(OfflineError, match=r"^cannot load the hub dataset 'me/nq_like', split 'validation': ConnectionError"):
        hub_rows("me/nq_like", None, "validation")
    assert [r["question"] for r in hub_rows("me/nq_like", None, "train")[0]] == ["t a"]


def test_a_hidden_file_the_pattern_matches_is_skipped_with_one_warning(hub_only, caplog):
    card = "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: qa/test/*\n---\n"
    snap = hub_snapshot(hub_only, "me/hidden", {"README.md": card, "qa/test/a.jsonl": _jsonl("q a"),
                                                "qa/test/.extra.jsonl": _jsonl("q hidden")})
    with caplog.at_level(logging.WARNING, logger="tasks.sources"):
        assert [r["question"] for r in hub_rows("me/hidden", None, "test")[0]] == ["q a"]
        check_hub_source("me/hidden", None, "test")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"split 'test' of {snap / 'README.md'}'s config 'default': skipping hidden file qa/test/.extra.jsonl (a leading "
        "'.'; neither read nor keyed by a leaderboard); rename it without the '.' to read it"]


def test_a_card_whose_metadata_cannot_be_parsed_is_refused_in_one_line(hub_only):
    snap = hub_snapshot(hub_only, "me/bad", {"README.md": "---\nconfigs: [\n---\n", "test.jsonl": _jsonl("q a")})
    with pytest.raises(ConfigError) as exc:
        check_hub_source("me/bad", None, "test")
    assert str(exc.value).startswith(f"{snap / 'README.md'}: cannot read its configs metadata (while parsing a flow node "
                                     "expected the node content, but found '<stream end>'"), exc.value
    assert "\n" not in str(exc.value)


def test_a_split_the_card_does_not_declare_is_refused_with_the_splits_it_declares(hub_only):
    """The card declares only train: a flat test.jsonl in the snapshot is not read (datasets would say "Unknown split
    'test'"), and the refusal says the card is why (it said the hub cache held no split 'test', the file there)."""
    card = "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: train.jsonl\n---\n"
    hub_snapshot(hub_only, "me/only_train", {"README.md": card, "train.jsonl": _jsonl("t a"), "test.jsonl": _jsonl("x a")})
    caches = (f"neither the hub cache ({hub_only / 'datasets--me--only_train'}) nor the datasets cache "
              f"({hub_only.parent / 'datasets' / 'me___only_train'})")
    why = ("(the snapshot's README.md configs: metadata declares for config 'default' only the split train; as datasets "
           "reads a hub data set, files outside the card's patterns are not read). Offline, give a local copy")
    for config, holds in ((None, "split 'test'"), ("default", "split 'test' of config 'default'")):
        with pytest.raises(OfflineError) as exc:
            check_hub_source("me/only_train", config, "test")
        assert str(exc.value).startswith(
            f"cannot load the hub dataset 'me/only_train'{' (default)' if config else ''}, split 'test': "
            f"HF_HUB_OFFLINE=1 and {caches} holds {holds} {why}"), exc.value
    assert [r["question"] for r in hub_rows("me/only_train", None, "train")[0]] == ["t a"]


@pytest.mark.parametrize(("card", "why"), [
    ("- 1\n", "a config is 1, not a mapping with a config_name"),
    ("- config_name: [a]\n  data_files: t.jsonl\n", "config ['a']: config_name is a list, not a name"),
    ("- config_name: default\n  data_files:\n  - split: 1\n    path: t.jsonl\n",
     "config 'default': a data_files split is 1, not a name"),
    ("- config_name: default\n  data_files:\n  - split: test\n    path: [1]\n",
     "config 'default': the path of data_files split 'test' is [1], not a list of patterns"),
    ("- config_name: default\n  data_dir: 5\n", "config 'default': data_dir is 5, not a folder"),
    ("- config_name: default\n  data_files: t.jsonl\n  features: 5\n",
     "TypeError: Expected a dict or a list but got <class 'int'>: 5"),  # datasets' Features, which raised it bare
    ("- config_name: default\n  data_files:\n    test: t.jsonl\n",  # datasets' own refusal, without its examples
     "Expected data_files in YAML to be either a string or a list of strings or a list of dicts with two keys: 'split' "
     "and 'path', but got {'test': 't.jsonl'}"),
], ids=["config_int", "config_name_list", "split_int", "path_int", "data_dir_int", "features_int", "dict_form"])
def test_every_malformed_card_is_one_config_error_line(hub_only, card, why):
    """Forms datasets takes for granted unchecked raised a bare TypeError / AttributeError ("argument of type 'int' is
    not iterable", "'int' object has no attribute 'decode'"), and datasets' refusal of the dict form was cut at 200
    characters mid-word ("... Examples of data_files in YAML: data_files: dat")."""
    snap = hub_snapshot(hub_only, "me/malformed", {"README.md": f"---\nconfigs:\n{card}---\n", "test.jsonl": _jsonl("q a"),
                                                   "t.jsonl": _jsonl("t a")})
    for call in (lambda: check_hub_source("me/malformed", None, "test"), lambda: hub_rows("me/malformed", None, "test")):
        with pytest.raises(ConfigError) as exc:
            call()
        assert str(exc.value) == f"{snap / 'README.md'}: cannot read its configs metadata ({why})"
