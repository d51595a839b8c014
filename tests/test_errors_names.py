"""Every name a user types gets a one-line error naming the bad value and the closest valid ones (issue 12.3):
task names (through ``lm_eval`` and ``tokrag eval``), --model, model-argument keys, corpus, retriever, topic
sets, task metadata keys, leaderboard spec keys/tasks/models, ``pretrained`` aliases and paths."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from retrieval.errors import ConfigError, TokragError, closest, unknown_name

NOISE = ["nq_oracle_bm25", "nq_oracle_bm25_noise20", "nq_oracle_bm25_noise40", "nq_oracle_bm25_noise60",
         "nq_oracle_bm25_noise80", "nq_oracle_dense_noise20", "nq_open_bm25_noise20", "wiki_lm_bm25"]


def test_closest_keeps_the_equally_close_names_only() -> None:
    assert closest("nq_oracle_bm25_noise30", NOISE) == [
        "nq_oracle_bm25_noise20", "nq_oracle_bm25_noise40", "nq_oracle_bm25_noise60", "nq_oracle_bm25_noise80"]
    assert closest("wiki_lm", NOISE) == ["wiki_lm_bm25"]
    assert closest("zzz", NOISE) == []
    assert unknown_name("retriever", "bm2", ["bm25", "dense", "hybrid"]) == \
        "unknown retriever 'bm2' (did you mean 'bm25'?); valid: bm25, dense, hybrid"


def _cli(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.parametrize("cmd", [["lm_eval"], ["tokrag", "eval"]])
def test_unknown_task_is_one_line_with_the_closest_tasks(cmd: list[str]) -> None:
    bindir = os.path.dirname(sys.executable)
    proc = _cli([os.path.join(bindir, cmd[0]), *cmd[1:], "--model", "rag-none", "--tasks", "nq_oracle_bm25_noise30",
                 "--limit", "1"])
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    want = ("error: unknown task 'nq_oracle_bm25_noise30' (closest: nq_oracle_bm25_noise20, nq_oracle_bm25_noise40, "
            "nq_oracle_bm25_noise60, nq_oracle_bm25_noise80); 'lm_eval ls tasks' lists them all; a task YAML of your "
            "own needs --include_path <the folder that holds it>")  # no --include_path given: the hint (s55 f3)
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].endswith(want), proc.stderr[-2000:]


def test_unknown_model_name() -> None:
    import lm_eval.api.registry as registry

    import tokrag_model._lmeval_hook  # noqa: F401 - installs the patches when the .pth hook did not

    with pytest.raises(ConfigError) as exc:
        registry.get_model("rag-standrd")
    msg = str(exc.value)
    assert msg.startswith("unknown --model 'rag-standrd' (did you mean 'rag-standard'?)") and "\n" not in msg
    assert isinstance(exc.value, ValueError)  # still what lm-eval's callers expect
    assert registry.get_model("rag-standard").__name__ == "RagStandardLM"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("/nonexistent/path", "pretrained='/nonexistent/path': folder /nonexistent/path does not exist; pass a local "
                              "folder with config.json and weights (pretrained=/path/to/model), a hub id (org/name), "
                              "or an offline alias ("),
        ("smollm2-135m-instrct", "did you mean 'smollm2-135m-instruct'?"),
        ("./smollm2-135m-instrct", "did you mean 'smollm2-135m-instruct'?"),
    ],
)
def test_pretrained_path_and_alias_hints(value: str, want: str) -> None:
    from tokrag_model.loading import resolve_pretrained

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with pytest.raises(TokragError) as exc:
        resolve_pretrained(value)
    assert want in str(exc.value) and "\n" not in str(exc.value) and "smollm2-135m-instruct" in str(exc.value)


def test_corpus_retriever_params_and_topics(data_dir) -> None:
    from retrieval import retrieve
    from retrieval.cli import load_topics
    from retrieval.corpus import resolve_corpus

    with pytest.raises(ConfigError, match=r"unknown corpus 'nq-wiki-12' \(did you mean 'nq-wiki-12k'\?\); valid: "
                                          r"nq-dpr-1k, nq-wiki-12k, wiki-vital; or give a corpus file"):
        resolve_corpus("nq-wiki-12", data_dir)
    with pytest.raises(ConfigError, match=r"corpus path .*missing\.jsonl does not exist"):
        resolve_corpus("/nowhere/missing.jsonl")
    with pytest.raises(ConfigError, match=r"unknown retriever 'bm2' \(did you mean 'bm25'\?\); valid: bm25, dense, dpr, hybrid"):
        retrieve("nq-dpr-1k", {"q": "x"}, "bm2", data_dir=data_dir)
    with pytest.raises(ConfigError, match=r"unknown hybrid parameter 'fuson' \(did you mean 'fusion'\?\)"):
        retrieve("nq-dpr-1k", {"q": "x"}, "hybrid", params={"fuson": "rrf"}, data_dir=data_dir)
    with pytest.raises(ConfigError, match=r"--topics: unknown topic set 'nq-orcle' \(did you mean 'nq-oracle'\?\)"):
        load_topics("nq-orcle:5", str(data_dir))


def test_task_metadata_keys(data_dir) -> None:
    from tasks.utils import load_qa, load_wiki_lm

    with pytest.raises(ConfigError, match=r"^nq_oracle_bm25: unknown task metadata key 'noies' \(did you mean 'noise'\?\); "
                                          r"the task's keys: cache_dir, corpus, "):
        load_qa(dataset="nq_oracle", noies=0.2, config_source="/x/nq_oracle_bm25.yaml")
    with pytest.raises(ConfigError, match=r"unknown task metadata key 'retreiver' \(did you mean 'retriever'\?\)"):
        load_wiki_lm(retreiver="bm25")
    with pytest.raises(ConfigError, match=r"unknown task metadata key 'hit' \(did you mean 'hits'\?\)"):
        load_qa(dataset="nq_oracle", hit=3)
    # short keys one swap away (similarity 0.75 < 0.8: "hist" was ignored and the task ran with 5 passages)
    for typo, key in (("hist", "hits"), ("sede", "seed"), ("spilt", "split"), ("qeustions", "questions")):
        # 'questions' is not a key of nq_oracle (only the bring-your-own tasks read it): named, not suggested (stop 47)
        guess = (r"close to 'questions', which only the bring-your-own tasks read" if key == "questions"
                 else rf"did you mean '{key}'\?")
        with pytest.raises(ConfigError, match=rf"unknown task metadata key '{typo}' \({guess}\)"):
            load_qa(dataset="nq_oracle", **{typo: 3})
    with pytest.raises(ConfigError, match=r"unknown task metadata key 'qeustions' \(did you mean 'questions'\?\)"):
        load_qa(dataset="byo", qeustions=3)  # a bring-your-own task reads it
    from tasks.utils import _one_edit

    assert [_one_edit("hist", k) for k in ("hits", "hist", "host", "hists", "his", "shit", "hsti")] == [
        True, False, True, True, True, False, False]



def test_task_metadata_numbers(data_dir) -> None:
    """A metadata value that is not a number (--metadata '{"hits": "five"}') is one line naming the task and key,
    not a bare ValueError from int()/float() (checked before any data is read or retrieved)."""
    from tasks.utils import load_qa, load_wiki_lm
    from tasks.wikitext import load_wikitext103

    with pytest.raises(ConfigError, match=r"^nq_oracle_bm25: task metadata hits='five' is not valid: expected an integer >= 1"):
        load_qa(dataset="nq_oracle", hits="five", config_source="/x/nq_oracle_bm25.yaml")
    with pytest.raises(ConfigError, match=r"task metadata noise='high' is not valid: expected a number in \[0, 1\]"):
        load_qa(dataset="nq_oracle", noise="high")
    with pytest.raises(ConfigError, match=r"task metadata max_docs='ten' is not valid: expected an integer >= 0"):
        load_qa(dataset="nq_oracle", max_docs="ten")
    with pytest.raises(ConfigError, match=r"task metadata seed=1.5 is not valid: expected an integer"):
        load_qa(dataset="nq_oracle", seed=1.5)
    with pytest.raises(ConfigError, match=r"^wiki_lm_bm25: task metadata hits=0 is not valid: expected an integer >= 1"):
        load_wiki_lm(hits=0)
    with pytest.raises(ConfigError, match=r"^wikitext103_bm25_wiki: task metadata chunk_words='x' is not valid"):
        load_wikitext103(chunk_words="x")

def test_task_keys_never_share_a_name_with_a_model_argument() -> None:
    """lm-eval merges --model_args into task metadata: a task key named like a model argument would let the model
    argument change what the task retrieves (the model argument k used to set the task's k)."""
    import importlib

    import yaml

    from tasks import TASK_DIR
    from tasks.utils import _LMEVAL_KEYS, _WIKI_LM_KEYS, QA_TASK_KEYS
    from tasks.wikitext import WIKITEXT_KEYS
    from tokrag_model import MODEL_CLASSES
    from tokrag_model.args import COMMON_ARGS

    model_args = set(COMMON_ARGS)
    for target in MODEL_CLASSES.values():
        module, cls = target.split(":")
        model_args |= set(getattr(importlib.import_module(module), cls).EXTRA_ARGS)
    from tasks.precheck import PLAIN_TEXT  # a declaration of the task's YAML (wiki_lm_bm25), read by no loader

    task_keys = QA_TASK_KEYS | _WIKI_LM_KEYS | WIKITEXT_KEYS | {PLAIN_TEXT}
    assert not (model_args & task_keys), model_args & task_keys
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: None)
    for path in sorted(TASK_DIR.rglob("*.yaml")):
        meta = (yaml.load(path.read_text(), Loader=Loader) or {}).get("metadata") or {}
        assert set(meta) <= task_keys | _LMEVAL_KEYS, (path.name, set(meta) - task_keys)
