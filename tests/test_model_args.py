"""Model arguments, offline resolution and lm-eval registration (no model forward passes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrieval.errors import ConfigError, DataError, OfflineError
from tokrag_model.args import COMMON_ARGS, merge_lm_eval_flags, parse_args, to_batch_size
from tokrag_model.loading import resolve_device, resolve_pretrained
from tokrag_model.methods.replug import ReplugLM
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM
from tokrag_model.methods.tokrag import TokRAGLM
from tokrag_model.prompt import get_ctxs


def test_unknown_and_mistyped_model_args_list_valid_keys_with_suggestion():
    with pytest.raises(ConfigError) as exc:
        TokRAGLM(layr=12)  # raised before any model is loaded
    msg = str(exc.value)
    assert "'layr' (did you mean 'layer'?)" in msg
    assert "valid keys:" in msg and "js_threshold" in msg and "pretrained" in msg
    with pytest.raises(ConfigError, match="replug_temperature=.*invalid"):
        ReplugLM(replug_temperature="hot")
    with pytest.raises(ConfigError, match="replug_mode"):
        ReplugLM(replug_mode="pooling")
    # τ acts only on the score mixture and the answer vote; with uniform weights it used to be accepted and ignored
    with pytest.raises(ConfigError, match=r"^--model rag-replug: model argument replug_temperature=0.5 has no effect with "
                                          r"replug_mode='uniform'; add replug_mode=mixture or replug_mode=answer_vote "
                                          r"to use it, or drop replug_temperature$"):
        ReplugLM(replug_mode="uniform", replug_temperature=0.5)
    for unset in (None, "none"):  # YAML null and lm-eval's "none" mean "not set": nothing to refuse
        assert parse_args("rag-replug", {**COMMON_ARGS, **ReplugLM.EXTRA_ARGS},
                          {"replug_mode": "uniform", "replug_temperature": unset})["replug_temperature"] is None
    with pytest.raises(ConfigError, match=r"replug_temperature='' is invalid: it is empty"):  # s57 b1: `key=` (an unset
        parse_args("rag-replug", {**COMMON_ARGS, **ReplugLM.EXTRA_ARGS},  # shell variable) silently meant the default
                   {"replug_mode": "uniform", "replug_temperature": ""})
    with pytest.raises(ConfigError, match="unknown model argument.*'foo'"):
        ReplugLM(foo=1)


def test_lm_eval_style_values_are_cast():
    cfg = parse_args("rag-none", COMMON_ARGS, {"batch_size": "4", "k": "3", "trace": "false", "max_length": 1024.0})
    assert cfg["batch_size"] == 4 and cfg["k"] == 3 and cfg["trace"] is False and cfg["max_length"] == 1024
    assert to_batch_size("auto") == 1 and to_batch_size("auto:4") == 1
    assert resolve_device("cuda:0") in {"cpu", "cuda:0"}  # lm-eval's default falls back to CPU without CUDA
    with pytest.raises(ConfigError, match="layer="):
        TokRAGLM(layer="deep")
    with pytest.raises(ConfigError, match=r"weight_layout=.*\['auto', 'row', 'col'\]"):
        TokRAGLM(weight_layout="diagonal")


@pytest.mark.parametrize("method, key, value", [
    (TokRAGLM, "k", "0"), (TokRAGLM, "k", "-1"),  # get_ctxs' out[:k]: -1 dropped the last passage, 0 all of them
    (TokRAGLM, "max_passage_tokens", "-5"), (TokRAGLM, "max_length", "0"), (TokRAGLM, "max_gen_toks", "0"),
    (TokRAGLM, "n_anchors", "0"),  # every passage position became an anchor
    (TokRAGLM, "window_left", "-3"),  # an empty window: S_R = 0, always the pure token
    (TokRAGLM, "rag_top", "0"), (TokRAGLM, "pure_top", "-1"),  # (0, 0) scores / torch.topk out of range
    (TokRAGLM, "rate", "-1"), (TokRAGLM, "rate", "0"), (TokRAGLM, "rate", "nan"),  # a reversed or dead rule
    (ReplugLM, "k", "0"),
    (ReplugLM, "device", "gpu0"),  # RuntimeError: Invalid device string, after the weights loaded
    # r = P(Yes)/(P(Yes)+P(No)) lies in [0, 1]: above 1 kept no passage (every row closed-book), below 0 kept all
    (SelfRAGFilterLM, "relevance_threshold", "1.5"), (SelfRAGFilterLM, "relevance_threshold", "-0.1"),
    (SelfRAGFilterLM, "relevance_threshold", "nan"),
])
def test_values_that_silently_changed_the_method_are_refused(method, key, value):
    """Each of these used to run to rc 0 with another method than asked for; now a one-line ConfigError
    naming the argument, raised before any weights load."""
    with pytest.raises(ConfigError, match=rf"^--model {method.METHOD}: model argument {key}='{value}' is invalid: "
                                          r"expected an? (integer|number|device) "):
        method(**{key: value})


def test_bounds_keep_every_valid_value():
    cfg = parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS},
                     {"k": "1", "max_passage_tokens": "1", "window_left": "0", "window_right": "0", "n_anchors": "1",
                      "rag_top": "1", "pure_top": "1", "rate": "0.5", "max_length": "none", "js_threshold": "-1e-6"})
    assert (cfg["k"], cfg["max_passage_tokens"], cfg["window_left"], cfg["window_right"], cfg["n_anchors"]) == (1, 1, 0, 0, 1)
    assert (cfg["rag_top"], cfg["pure_top"], cfg["rate"], cfg["max_length"]) == (1, 1, 0.5, None)
    assert cfg["js_threshold"] == -1e-6  # a calibrated gap quantile may be negative (gap = D_RAG - D_pure)


def test_relevance_threshold_outside_the_ratio_range_is_refused_with_the_range():
    with pytest.raises(ConfigError, match=r"^--model rag-selfrag-filter: model argument relevance_threshold=1.01 is "
                                          r"invalid: expected a number in \[0, 1\], got 1.01 \(keep passages with "):
        SelfRAGFilterLM(relevance_threshold=1.01)  # a float, as lm-eval parses it; raised before any weights load
    schema = {**COMMON_ARGS, **SelfRAGFilterLM.EXTRA_ARGS}
    for value, expected in (("0", 0.0), ("1", 1.0), (0.5, 0.5), (None, 0.5)):  # both ends are usable thresholds
        assert parse_args("rag-selfrag-filter", schema, {"relevance_threshold": value})["relevance_threshold"] == expected


def test_device_in_model_args_and_on_the_command_line_is_not_a_type_error(caplog):
    """The README's GPU line passes device=cuda:0 in --model_args *and* --device cuda:0; lm-eval's base class
    handed both to the constructor (TypeError: got multiple values for keyword argument 'device')."""
    flags = {"batch_size": 1, "max_batch_size": None, "device": "cuda:0"}
    assert merge_lm_eval_flags("tokrag", {"device": "cuda:0", "k": 3}, flags) == {"device": "cuda:0", "k": 3, "batch_size": 1}
    assert merge_lm_eval_flags("tokrag", {"batch_size": 8}, flags) == {"batch_size": 8, "device": "cuda:0"}
    assert merge_lm_eval_flags("tokrag", {"batch_size": 8}, {"batch_size": "1"}) == {"batch_size": 8}  # given: '1'
    assert not caplog.records  # lm-eval's default batch_size 1 under batch_size=8 is not worth a warning
    # lm-eval hands device="cuda:0" when --device is not given (EvaluatorConfig's default): not worth a warning
    assert merge_lm_eval_flags("tokrag", {"device": "cpu"}, {"batch_size": 1, "device": "cuda:0"}) == {
        "device": "cpu", "batch_size": 1}
    assert not caplog.records
    assert merge_lm_eval_flags("tokrag", {"device": None}, {"device": "cuda:1"}) == {"device": "cuda:1"}  # None: not given
    assert merge_lm_eval_flags("tokrag", {"device": "cpu"}, {"device": "cuda:1"}) == {"device": "cpu"}
    assert "device=cuda:1 (lm-eval's --device, or a leaderboard spec's shared device) is overridden by model_args device=cpu" \
        in caplog.text
    # through lm-eval's hook: the argument check runs (k=0 refused), not a TypeError
    with pytest.raises(ConfigError, match="k='0' is invalid|k=0 is invalid"):
        TokRAGLM.create_from_arg_string("device=cpu,k=0", {"batch_size": "1", "max_batch_size": None, "device": "cpu"})
    with pytest.raises(ConfigError, match="k=0 is invalid|k='0' is invalid"):
        TokRAGLM.create_from_arg_obj({"device": "cpu", "k": 0}, {"batch_size": 1, "device": "cpu"})


def test_hub_id_offline_is_a_clear_offline_error(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # an empty cache: huggingface_hub reads $HF_HUB_CACHE once, at import (setting it here did nothing, and a
    # machine with this model cached found it); its constant is what snapshot_download reads at each call
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(OfflineError) as exc:
        resolve_pretrained("HuggingFaceTB/SmolLM2-135M-Instruct")
    msg = str(exc.value)
    assert "HF_HUB_OFFLINE=1" in msg and "local folder" in msg and "smollm2-135m-instruct" in msg


def test_hub_revision_selects_its_snapshot(tmp_path, monkeypatch, caplog):
    """``revision=v1`` loads the v1 snapshot of a hub id, as lm-eval's ``hf`` does: the snapshot folder was always
    main's, and ``from_pretrained`` of that local folder ignored the revision (a pinned revision silently ran
    main's weights). A fake offline cache with two revisions of one repo."""
    import huggingface_hub.constants

    hub = tmp_path / "hf" / "hub"
    repo = hub / "models--tokrag-test--two-revisions"
    main_sha, v1_sha = "a" * 40, "b" * 40
    for ref, sha, layers in (("main", main_sha, 4), ("v1", v1_sha, 2)):
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(sha)
        (repo / "snapshots" / sha).mkdir(parents=True)
        (repo / "snapshots" / sha / "config.json").write_text(json.dumps({"num_hidden_layers": layers}))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    assert resolve_pretrained("tokrag-test/two-revisions").path.name == main_sha
    res = resolve_pretrained("tokrag-test/two-revisions", revision="v1")
    assert (res.path.name, res.source) == (v1_sha, "hub:tokrag-test/two-revisions@v1")
    with pytest.raises(OfflineError, match=r"not in the local Hugging Face cache at revision='v2'"):
        resolve_pretrained("tokrag-test/two-revisions", revision="v2")
    # an alias or a local folder has no revisions: said, not silently ignored
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "config.json").write_text("{}")
    with caplog.at_level("WARNING", logger="tokrag_model.loading"):
        assert resolve_pretrained(str(tmp_path / "local"), revision="v1").source == "local"
    assert "is a local folder: revision='v1' has no effect" in caplog.text


def test_the_hub_commit_a_revision_resolved_to_is_recorded(tmp_path, monkeypatch, backbone):
    """A hub id's snapshot folder is named after its commit: the load records it (results ``config`` and the
    leaderboard's provenance), so a result says which version of a hub model ran, not only the branch or tag. A fake
    offline cache whose ``v1`` snapshot holds SmolLM2's files; an alias or a local folder records null."""
    import huggingface_hub.constants

    from tokrag_model.base import Backbone
    from tokrag_model.methods import MODELS

    src = resolve_pretrained("smollm2-135m-instruct").path
    repo = tmp_path / "hub" / "models--tokrag-test--smollm2"
    sha = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "v1").write_text(sha)
    snap = repo / "snapshots" / sha
    snap.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file() and not f.name.startswith("."):
            (snap / f.name).symlink_to(f)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    res = resolve_pretrained("tokrag-test/smollm2", revision="v1")
    assert (res.hub_commit, res.source) == (sha, "hub:tokrag-test/smollm2@v1")
    bb = Backbone.load("tokrag-test/smollm2", revision="v1")
    info = MODELS["rag-none"].with_backbone(bb).get_model_info()
    assert (bb.hub_commit, info["tokrag_model_hub_commit"], info["tokrag_model_source"]) == (
        sha, sha, "hub:tokrag-test/smollm2@v1")
    assert info["tokrag_model_fingerprint"] == backbone.fingerprint  # the same weight files
    assert resolve_pretrained(str(snap)).hub_commit == sha  # the snapshot folder given as a path
    assert backbone.hub_commit is None and resolve_pretrained(str(src)).hub_commit is None
    assert MODELS["rag-none"].with_backbone(backbone).get_model_info()["tokrag_model_hub_commit"] is None


def test_a_hub_download_keeps_the_chat_template_and_falls_back_to_bin_weights(tmp_path, monkeypatch):
    """What _hub_snapshot downloads of a hub model, through stand-ins for ``list_repo_files`` and ``snapshot_download``
    (which copies a fake repo's files matching ``allow_patterns`` with fnmatch, as huggingface_hub does): the chat
    template in ``chat_template.jinja`` (where transformers >= 4.47 saves it; it was left behind, so
    --apply_chat_template found no template) and remote code come along; ``pytorch_model*.bin`` weights only for a
    repo without safetensors (such a repo got no weights at all). Sub-folders and a second weights format are left
    out: ``*.safetensors`` also matched ``checkpoint-500/model.safetensors`` (fnmatch's ``*`` crosses ``/``), and a
    Mistral-style repo got its ``consolidated.safetensors`` (14.5 GB for a 7B model) beside the shards; the ``*.bin``
    fallback took ``training_args.bin`` and every checkpoint folder's optimizer state."""
    import fnmatch
    import shutil

    import huggingface_hub

    from tokrag_model import loading

    repos = {
        "org/new": ["config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja", "modeling_x.py",
                    "pytorch_model.bin", "README.md", "original/consolidated.pth", "original/params.json",
                    "checkpoint-500/model.safetensors", "additional_chat_templates/tool_use.jinja"],
        "org/old": ["config.json", "pytorch_model.bin", "tokenizer.model", "README.md", "training_args.bin",
                    "checkpoint-500/pytorch_model.bin", "checkpoint-500/optimizer.bin", "openvino/openvino_model.bin"],
        "org/mistral": ["config.json", "consolidated.safetensors", "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors", "model.safetensors.index.json", "params.json",
                        "tokenizer.model", "tokenizer.model.v3", "tokenizer_config.json"],
        "org/odd": ["config.json", "weights-1.safetensors", "tokenizer.json"],
    }
    calls = []

    def fake(repo_id, revision=None, local_files_only=False, allow_patterns=None, **_):
        calls.append((repo_id, local_files_only))
        out = tmp_path / "snap" / repo_id.replace("/", "--")
        out.mkdir(parents=True, exist_ok=True)
        for name in repos[repo_id]:
            if allow_patterns is None or any(fnmatch.fnmatch(name, pat) for pat in allow_patterns):
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                (out / name).write_text(name)
        return str(out)

    def files(folder):
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    monkeypatch.setattr(huggingface_hub, "list_repo_files", lambda repo_id, revision=None, **_: list(repos[repo_id]))
    assert files(loading._hub_snapshot("org/new")) == [
        "additional_chat_templates/tool_use.jinja", "chat_template.jinja", "config.json", "model.safetensors",
        "modeling_x.py", "tokenizer.json"]
    assert files(loading._hub_snapshot("org/old")) == ["config.json", "pytorch_model.bin", "tokenizer.model"]
    assert files(loading._hub_snapshot("org/mistral")) == [
        "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
        "model.safetensors.index.json", "params.json", "tokenizer.model", "tokenizer_config.json"]
    assert files(loading._hub_snapshot("org/odd")) == ["config.json", "tokenizer.json", "weights-1.safetensors"]
    assert calls == [("org/new", False), ("org/old", False), ("org/mistral", False), ("org/odd", False)]  # one download each
    # a variant beside the weights transformers loads is left (it loads model.safetensors unless asked for a variant);
    # a PEFT adapter's .bin weights are kept (the *.bin fallback took them, pytorch_model*.bin did not)
    assert loading.hub_files(["config.json", "model.safetensors", "model.fp16.safetensors"]) == [
        "config.json", "model.safetensors"]
    assert loading.hub_files(["adapter_config.json", "adapter_model.bin", "tokenizer.json"]) == [
        "adapter_config.json", "adapter_model.bin", "tokenizer.json"]
    assert loading.hub_files(["config.json", "model.fp16.safetensors"]) == ["config.json", "model.fp16.safetensors"]
    # offline: the cached snapshot as it is, nothing listed
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub, "list_repo_files", None)
    loading._hub_snapshot("org/new")
    assert calls[-1] == ("org/new", True)
    shutil.rmtree(tmp_path / "snap")


def test_an_online_hub_id_cached_without_a_template_is_left_to_the_load(tmp_path, monkeypatch):
    """has_chat_template of a hub id reads the cached snapshot only. Online, a snapshot cached without a template
    (by a tokrag that did not download chat_template.jinja, or main has moved on) is not a "no": the load fetches
    what the repo holds. So calibrate/analyze refused --apply-chat-template for such a model before loading it.
    Offline, the cache is what the load will see, so False stands; a template found is True either way."""
    import huggingface_hub.constants

    from tokrag_model.loading import has_chat_template

    hub = tmp_path / "hub"
    for name, cfg in (("bare", {"bos_token": "<s>"}), ("templated", {"chat_template": "{{ messages }}"})):
        repo = hub / f"models--org--{name}"
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text("c" * 40)
        (repo / "snapshots" / ("c" * 40)).mkdir(parents=True)
        (repo / "snapshots" / ("c" * 40) / "tokenizer_config.json").write_text(json.dumps(cfg))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert (has_chat_template("org/bare"), has_chat_template("org/templated")) == (None, True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (has_chat_template("org/bare"), has_chat_template("org/templated")) == (False, True)


def test_a_config_field_of_the_wrong_type_is_a_one_line_error(tmp_path):
    """``"num_hidden_layers": "30"`` in a model folder's config.json: transformers' strict config raised its own
    validation error (not OSError/ValueError) as a traceback out of the load; now one ConfigError line."""
    import shutil

    from tokrag_model.base import Backbone

    src = resolve_pretrained("smollm2-135m-instruct").path
    for f in src.iterdir():
        if f.suffix in {".json", ".jinja"}:
            shutil.copy(f, tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": "30"}))
    with pytest.raises(ConfigError) as exc:
        Backbone.load(str(tmp_path))
    msg = str(exc.value)
    assert msg.startswith(f"pretrained={str(tmp_path)!r}: cannot load a causal LM from {tmp_path}: ") and "\n" not in msg
    assert "Field 'num_hidden_layers' expected int, got str (value: '30')" in msg


def test_smollm2_conversion_is_keyed_by_the_gguf_bytes_not_the_install():
    """The converted folder is named after the sha256 of the installed GGUF (pip's RECORD) and the converter
    (loading.converter_key), so a new virtual environment with the same wheel and converter reuses it; a copy of
    the file with another mtime gets the same key."""
    import hashlib
    import importlib.util
    from pathlib import Path

    from tokrag_model import loading

    spec = loading.ALIASES["smollm2-135m-instruct"]
    gguf = Path(importlib.util.find_spec(spec["package"]).submodule_search_locations[0]) / spec["gguf"]
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert loading._installed_file_sha256(spec, gguf)[:12] == digest[:12]
    assert resolve_pretrained("smollm2-135m-instruct").path.name == \
        f"smollm2-135m-instruct-{digest[:12]}-c{loading.converter_key()}"
    # without a RECORD entry: the same content digest (hashed, memoised), not size + mtime
    assert loading._installed_file_sha256(dict(spec, dist="no-such-dist"), gguf)[:12] == digest[:12]


def test_missing_local_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_pretrained(str(tmp_path / "no_such_model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no config.json"):
        resolve_pretrained(str(tmp_path / "empty"))


def test_model_shape_is_read_from_the_config_without_loading_weights(tmp_path, monkeypatch):
    """The leaderboard's pre-run check reads the depth and the vocabulary size from the config: the converted
    folder's, else the GGUF's metadata (a fresh cache); None where only a load would tell (it then skips the check)."""
    import json

    import huggingface_hub.constants
    import transformers

    from tokrag_model.loading import ModelShape, model_shape

    def no_weights(*args, **kwargs):
        raise AssertionError("model_shape loaded weights")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # an empty cache (the constant transformers reads at each call; $HF_HUB_CACHE is read once, at import)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    # not converted: the GGUF's; 49152 is also the converted model's embedding rows (what the load compares)
    assert model_shape("smollm2-135m-instruct", models_dir=tmp_path / "models") == ModelShape(30, 49152)
    assert not (tmp_path / "models").exists()  # nothing converted or written
    assert model_shape("gemma-3-270m", models_dir=tmp_path / "models") is None  # its GGUF must be assembled first
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 4, "vocab_size": 100}))
    assert model_shape(str(folder)) == ModelShape(4, 100)
    # remote code may size its embedding otherwise than vocab_size: not known
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 4, "vocab_size": 100,
                                                    "auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}}))
    assert model_shape(str(folder)) == ModelShape(4, None)
    assert model_shape(str(tmp_path / "tiny" / "config.json")) is None  # a file, no model folder
    assert model_shape(str(tmp_path / "no_such_model")) is None  # the load says what is wrong
    assert model_shape("HuggingFaceTB/SmolLM2-135M-Instruct") is None  # a hub id not in the (empty) cache


def test_model_shape_never_runs_a_folders_code_and_never_raises(tmp_path, monkeypatch):
    """A config with auto_map.AutoConfig and a model_type transformers does not know made AutoConfig ask "Do you
    wish to run the custom code? [y/N]" and, on "y", run the folder's configuration_x.py; a config transformers
    refuses ("num_hidden_layers": "30") was a TypeError traceback out of the pre-run check. Both: None, no prompt,
    no code run (trust_remote_code=False)."""
    import builtins
    import json

    from tokrag_model.loading import model_shape

    folder, marker = tmp_path / "remote", tmp_path / "MARKER"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "tokrag-test-unknown", "auto_map": {"AutoConfig": "configuration_x.XConfig"},
        "num_hidden_layers": 4, "vocab_size": 100}))
    (folder / "configuration_x.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import PretrainedConfig\n\n\nclass XConfig(PretrainedConfig):\n    model_type = 'tokrag-test-unknown'\n")
    asked = []
    monkeypatch.setattr(builtins, "input", lambda *a: asked.append(a) or "y")
    assert model_shape(str(folder)) is None
    assert not asked and not marker.exists()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": "30", "vocab_size": 100}))
    assert model_shape(str(folder)) is None


def test_doc_without_ctxs_says_to_use_a_retrieval_task():
    with pytest.raises(DataError, match="use a retrieval task"):
        get_ctxs({"question": "q"}, "tokrag", None)
    # the list order is the ranking (s57 r9, c427cef: no longer sorted by rank); the top k of it reach the method
    ctxs = get_ctxs({"ctxs": [{"text": "a", "rank": 1}, {"text": "b", "rank": 2}, {"text": "c", "rank": 3}]}, "x", 2)
    assert [c["text"] for c in ctxs] == ["a", "b"]
    # ranks that contradict the list order are refused, naming both positions, not silently sorted
    with pytest.raises(DataError, match=r"doc\['ctxs'\]\[1\].*has rank 1 but is listed after doc\['ctxs'\]\[0\] of rank 2"):
        get_ctxs({"ctxs": [{"text": "b", "rank": 2}, {"text": "a", "rank": 1}, {"text": "c", "rank": 3}]}, "x", 2)


def test_pth_hook_registers_models_and_keeps_hf():
    """After `pip install -e .`/`pip install .`, a fresh interpreter resolves our models and lm-eval's hf."""
    code = ("from lm_eval.api.registry import get_model; "
            "print(get_model('tokrag').__name__, get_model('rag-selfrag-filter').__name__, get_model('hf').__name__)")
    env = {**os.environ, "PYTHONPATH": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["TokRAGLM", "SelfRAGFilterLM", "HFLM"]


def test_pth_hook_never_raises_without_lm_eval_import():
    """The hook alone imports neither torch nor lm_eval."""
    code = "import sys; import tokrag_model._lmeval_hook; print('torch' in sys.modules, 'lm_eval' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0 and out.stdout.split() == ["False", "False"]


def test_pth_line_is_silent_when_the_package_is_missing(tmp_path):
    """A stale .pth (package uninstalled) must not print errors at every interpreter start."""
    from pathlib import Path

    import tokrag_model

    pth = Path(tokrag_model.__file__).parent / "tokrag_lmeval.pth"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / pth.name).write_text(pth.read_text())
    code = f"import site, sys; site.addsitedir({str(tmp_path / 'site')!r}); print('tokrag_model' in sys.modules)"
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0 and out.stdout.strip() == "False" and out.stderr == ""


def test_tokrag_eval_wrapper_registers_and_runs_lm_eval_cli(capsys):
    from lm_eval.api.registry import get_model

    from tokrag_model.eval_cli import main

    assert main(["--help"]) == 0
    assert "--model_args" in capsys.readouterr().out
    assert get_model("rag-replug").__name__ == "ReplugLM" and get_model("hf").__name__ == "HFLM"


def test_max_gen_toks_model_argument_overridden_by_the_task_is_refused():
    """``--model_args max_gen_toks=4`` on a QA task whose generation_kwargs set 32: the run generated 32 tokens
    while ``tokrag_resolved_config`` recorded 4 (a user compared methods on budgets they did not choose). As in
    lm-eval's hf the request's value wins, so an explicit model argument that it overrides is refused."""
    from tokrag_model.methods import MODELS

    lm = object.__new__(MODELS["rag-standard"])  # _gen_settings reads only these attributes
    lm.max_length, lm.resolved_config = 2048, {"max_gen_toks": 4}
    lm.given_args = {"max_gen_toks": "4"}
    with pytest.raises(ConfigError, match=r"^--model rag-standard: max_gen_toks=4 \(model argument\) has no effect: the "
                                          r"task's generation_kwargs set max_gen_toks=32.*pass --gen_kwargs max_gen_toks=4 instead$"):
        lm._gen_settings({"until": ["\n"], "max_gen_toks": 32}, "</s>")
    assert lm._gen_settings({"until": ["\n"], "max_gen_toks": 4}, "</s>")[1:] == (4, 2044)  # the same budget: fine
    assert lm._gen_settings({"until": ["\n"]}, "</s>")[1] == 4  # the task gives none: the model argument applies
    lm.given_args, lm.resolved_config = {}, {"max_gen_toks": 256}  # not given: the task's budget, as before
    assert lm._gen_settings({"until": ["\n"], "max_gen_toks": 32}, "</s>")[1] == 32
    lm.given_args = {"max_gen_toks": None}  # YAML null: not given
    assert lm._gen_settings({"until": ["\n"], "max_gen_toks": 32}, "</s>")[1] == 32


def test_a_generation_budget_without_room_in_max_length_is_refused_at_the_first_generation_request(backbone):
    """The budget check the early argument check was taken back to: max_length=16 and the task's max_gen_toks=32 leave
    no prompt budget, a one-line error at the first generate_until request; the same arguments score a
    loglikelihood request (which has no generation budget)."""
    from lm_eval.api.instance import Instance

    from retrieval.errors import ConfigError
    from tokrag_model.methods import MODELS

    lm = MODELS["rag-standard"].with_backbone(backbone, max_length=16, max_gen_toks=16)
    doc = {"id": "q0", "question": "Who wrote Hamlet", "answers": ["Shakespeare"], "ctxs": [], "retriever": "bm25"}
    with pytest.raises(ConfigError, match=r"^--model rag-standard: max_gen_toks=16 leaves no room in max_length=16$"):
        lm.generate_until([Instance("generate_until", doc, ("Question: Who wrote Hamlet\nAnswer:", {"until": ["\n"]}), 0)])
    (ll, _), = lm.loglikelihood([Instance("loglikelihood", doc, ("Question: Who wrote Hamlet\nAnswer:", " Shakespeare"), 0)])
    assert ll < 0
