"""Online, ``--apply_chat_template`` with a hub id that is not cached (or cached without a template) was refused only
after the load, which downloads the weights first (15 GB for a 7B model), though the answer is in the small tokenizer
files the load fetches with them (s52 f3's open point). The pre-load check now lists the repo once (``model_info``) and
fetches its files besides the weights (the load fetches them anyway, and then only the weights), and reads them as the
folder the load reads. No hub is reachable here: ``model_info`` and ``snapshot_download`` are replaced by a fake hub
that serves a local folder and records what was asked for (s53 f4)."""

from __future__ import annotations

import shutil
from fnmatch import fnmatch
from types import SimpleNamespace

import pytest

from retrieval.errors import ConfigError
from tests.test_chat_template_early_s45 import TEMPLATE, _tiny_folder
from tests.eval_helpers import stop_at_model_load
from tests.test_s52_f3_chat_template_no_tokenizer_config import _without_tokenizer_config
from tokrag_model.base import check_chat_template_before_load, no_chat_template_message
from tokrag_model.loading import chat_template_before_load, has_chat_template


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A fake online hub: ``repos[repo_id] = folder``; each repo also lists weights (``model.safetensors``) and a
    sub-folder file the load never fetches. ``asked`` records ``(repo_id, revision, allow_patterns)`` per download."""
    import huggingface_hub

    repos: dict = {}
    asked: list = []

    def model_info(self, repo_id, revision=None, timeout=None, **kwargs):
        if repo_id not in repos:
            raise huggingface_hub.errors.RepositoryNotFoundError(f"404 {repo_id}")
        names = sorted(p.relative_to(repos[repo_id]).as_posix() for p in repos[repo_id].rglob("*") if p.is_file())
        return SimpleNamespace(sha="f" * 40, siblings=[SimpleNamespace(rfilename=n) for n in
                                                      [*names, "model.safetensors", "onnx/model.json"]])

    def snapshot_download(repo_id, revision=None, allow_patterns=None, **kwargs):
        asked.append((repo_id, revision, sorted(allow_patterns) if allow_patterns is not None else None))
        snap = tmp_path / "hub" / repo_id.replace("/", "--") / revision
        for f in repos[repo_id].rglob("*"):
            rel = f.relative_to(repos[repo_id]).as_posix()
            if f.is_file() and any(fnmatch(rel, pat) for pat in allow_patterns or []):
                (snap / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, snap / rel)
        return str(snap)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))  # nothing cached
    return SimpleNamespace(repos=repos, asked=asked)


def test_a_hub_id_without_a_template_is_refused_before_its_weights_download(tmp_path, hub):
    hub.repos["org/base"] = _without_tokenizer_config(tmp_path / "base")  # tokenizer.json alone: no template
    assert has_chat_template("org/base") is False  # was None: unknown until the load
    assert hub.asked == [("org/base", "f" * 40, ["config.json", "tokenizer.json"])]  # no weights, no sub-folder
    with pytest.raises(ConfigError) as exc:
        check_chat_template_before_load("rag-standard", "pretrained=org/base", True)
    assert str(exc.value) == no_chat_template_message("rag-standard", "org/base")
    hub.repos["org/plain"] = _tiny_folder(tmp_path / "plain", None)  # a tokenizer_config.json without a template
    assert has_chat_template("org/plain") is False
    assert all("model.safetensors" not in pats for _, _, pats in hub.asked)


def test_a_hub_id_with_a_template_and_its_named_templates(tmp_path, hub):
    hub.repos["org/chat"] = _tiny_folder(tmp_path / "chat", TEMPLATE)
    assert has_chat_template("org/chat") is True
    check_chat_template_before_load("rag-standard", "pretrained=org/chat", True)
    named = _without_tokenizer_config(tmp_path / "named", TEMPLATE)
    (named / "additional_chat_templates").mkdir()
    (named / "additional_chat_templates" / "rag.jinja").write_text(TEMPLATE, encoding="utf-8")
    hub.repos["org/named"] = named
    assert chat_template_before_load("org/named") == {"default": TEMPLATE, "rag": TEMPLATE}
    check_chat_template_before_load("rag-standard", "pretrained=org/named", "rag")
    with pytest.raises(ConfigError, match=r"^--model rag-standard: --apply_chat_template 'tools' with "
                                          r"pretrained='org/named': "):
        check_chat_template_before_load("rag-standard", "pretrained=org/named", "tools")
    assert ("org/named", "f" * 40, ["additional_chat_templates/rag.jinja", "chat_template.jinja", "config.json",
                                    "tokenizer.json"]) in hub.asked


def test_a_hub_that_does_not_answer_is_left_to_the_load(hub):
    assert has_chat_template("org/missing") is None  # 404 (or unreachable, gated): the load says why
    assert chat_template_before_load("org/missing") is None
    check_chat_template_before_load("rag-standard", "pretrained=org/missing", True)  # not refused here
    assert hub.asked == []


class _Reached(Exception):
    pass


def test_the_run_is_refused_before_the_model_build(tmp_path, hub, monkeypatch):
    """Through the eval CLI (lm-eval's start-up hook): exit 2 before the model build; the old code went on to it."""
    from tokrag_model.eval_cli import main

    def reached(*args, **kwargs):
        raise _Reached()

    stop_at_model_load(monkeypatch, reached)  # the model build raises _Reached (the old code got there)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # stop_at_model_load sets 1: online, the fake hub answers
    hub.repos["org/base"] = _without_tokenizer_config(tmp_path / "base")
    with pytest.raises(ConfigError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=org/base", "--device", "cpu", "--limit", "1",
              "--tasks", "nq_oracle_bm25", "--apply_chat_template"])
    assert str(exc.value) == no_chat_template_message("rag-standard", "org/base")
    assert getattr(exc.value, "_tokrag_before_load", False) is True
    assert hub.asked == [("org/base", "f" * 40, ["config.json", "tokenizer.json"])]
