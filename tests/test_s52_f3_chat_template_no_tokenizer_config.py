"""``--apply_chat_template`` with a model whose folder has no ``tokenizer_config.json`` (its tokenizer loads from
``tokenizer.json`` alone, so it has no chat template) was refused only after the weights had loaded: the pre-load
check (``tokrag_model.loading.has_chat_template``) answered "unknown" for a folder without ``tokenizer_config.json``,
and offline for a cached hub snapshot without one. ``lm_eval --model rag-standard --model_args
pretrained=<gemma-3-270m's converted folder without tokenizer_config.json> --apply_chat_template --tasks
nq_oracle_bm25``: exit 1 after the weights load (30 s CPU), now exit 2 before it (15 s CPU), the same line (s52 f3)."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load
from tests.test_chat_template_early_s45 import TEMPLATE, _tiny_folder
from tokrag_model.base import check_chat_template_before_load, no_chat_template_message
from tokrag_model.loading import chat_template_before_load, has_chat_template


def _without_tokenizer_config(path, template: str | None = None):
    """A tiny model folder whose tokenizer is ``tokenizer.json`` alone (with ``chat_template.jinja`` if ``template``)."""
    folder = _tiny_folder(path, None)
    (folder / "tokenizer_config.json").unlink()
    (folder / "special_tokens_map.json").unlink(missing_ok=True)
    if template:
        (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    return folder


def test_the_tokenizer_of_such_a_folder_loads_without_a_chat_template(tmp_path):
    """What the check now says is what transformers loads: a tokenizer, without a template (with the file: with it)."""
    from transformers import AutoTokenizer

    plain = _without_tokenizer_config(tmp_path / "plain")
    assert AutoTokenizer.from_pretrained(str(plain)).chat_template is None
    assert has_chat_template(str(plain)) is False
    chat = _without_tokenizer_config(tmp_path / "chat", TEMPLATE)
    assert AutoTokenizer.from_pretrained(str(chat)).chat_template == TEMPLATE
    assert has_chat_template(str(chat)) is True


def test_what_cannot_be_told_is_left_to_the_load(tmp_path):
    no_vocab = _without_tokenizer_config(tmp_path / "no_vocab")
    (no_vocab / "tokenizer.json").unlink()  # no tokenizer at all: the load's own error says it
    assert has_chat_template(str(no_vocab)) is None
    remote = _without_tokenizer_config(tmp_path / "remote")
    config = json.loads((remote / "config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": ["tok.MyTokenizer", None]}  # remote code may set a template itself
    (remote / "config.json").write_text(json.dumps(config))
    assert has_chat_template(str(remote)) is None
    bad = _tiny_folder(tmp_path / "bad", None)
    (bad / "tokenizer_config.json").write_text("{not json")
    assert has_chat_template(str(bad)) is None


@pytest.fixture
def no_weights(monkeypatch):
    from tests.test_chat_template_early_s45 import _Reached

    def reached(*args, **kwargs):
        raise _Reached()

    stop_at_model_load(monkeypatch, reached)
    from tokrag_model.base import Backbone

    def load(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(Backbone, "load", load)
    return _Reached


def test_the_run_is_refused_before_the_weights_load(tmp_path, no_weights):
    from tokrag_model.eval_cli import main

    folder = _without_tokenizer_config(tmp_path / "base")
    run = ["--model", "rag-standard", "--model_args", f"pretrained={folder}", "--device", "cpu", "--limit", "1",
           "--tasks", "nq_oracle_bm25"]
    with pytest.raises(ConfigError) as exc:
        main([*run, "--apply_chat_template"])
    assert str(exc.value) == no_chat_template_message("rag-standard", str(folder))
    assert getattr(exc.value, "_tokrag_before_load", False) is True  # exit 2, one line, under lm_eval
    with pytest.raises(no_weights):  # without the flag the run goes on to the model build
        main(run)


def _hub_model(hub, repo_id: str, folder, commit: str, main: bool = True):
    """``folder``'s files as the cached snapshot ``commit`` of hub model ``repo_id`` (``refs/main`` points at it if
    ``main``)."""
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    for f in folder.rglob("*"):
        if f.is_file():
            (snap / f.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
            (snap / f.relative_to(folder)).write_bytes(f.read_bytes())
    (repo / "refs").mkdir(exist_ok=True)
    if main:
        (repo / "refs" / "main").write_text(commit)
    return snap


@pytest.fixture
def hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


def test_an_offline_hub_snapshot_is_read_as_the_folder_the_load_reads(tmp_path, hub, monkeypatch):
    _hub_model(hub, "org/base", _without_tokenizer_config(tmp_path / "base"), "a" * 40)
    with pytest.raises(ConfigError) as exc:
        check_chat_template_before_load("rag-standard", "pretrained=org/base", True)
    assert str(exc.value) == no_chat_template_message("rag-standard", "org/base")
    assert has_chat_template("org/missing") is None  # not cached: the load says it
    # the revision's snapshot is read, not main's: main has no template, revision b*40 has one
    _hub_model(hub, "org/mixed", _without_tokenizer_config(tmp_path / "m1"), "c" * 40)
    _hub_model(hub, "org/mixed", _without_tokenizer_config(tmp_path / "m2", TEMPLATE), "b" * 40, main=False)
    assert has_chat_template("org/mixed") is False
    assert has_chat_template("org/mixed", revision="b" * 40) is True
    check_chat_template_before_load("rag-standard", f"pretrained=org/mixed,revision={'b' * 40}", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # online the load may fetch a template the cache lacks: unknown
    assert has_chat_template("org/base") is None
    assert chat_template_before_load("org/mixed", revision="b" * 40) is None


def test_an_offline_hub_snapshots_named_templates_are_checked_before_the_load(tmp_path, hub):
    folder = _without_tokenizer_config(tmp_path / "named", TEMPLATE)
    (folder / "additional_chat_templates").mkdir()
    (folder / "additional_chat_templates" / "rag.jinja").write_text(TEMPLATE, encoding="utf-8")
    _hub_model(hub, "org/named", folder, "d" * 40)
    assert chat_template_before_load("org/named") == {"default": TEMPLATE, "rag": TEMPLATE}
    check_chat_template_before_load("rag-standard", "pretrained=org/named", "rag")
    with pytest.raises(ConfigError, match=r"^--model rag-standard: --apply_chat_template 'tools' with "
                                          r"pretrained='org/named': "):
        check_chat_template_before_load("rag-standard", "pretrained=org/named", "tools")
