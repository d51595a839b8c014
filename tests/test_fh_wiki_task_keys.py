"""wiki_lm_bm25 and wikitext103_bm25_wiki read only their own metadata keys: wiki_lm_bm25 honours ``split`` (test | dev),
and a key that only another tokrag task reads (``noise``, ``corpus``, ``split`` on WikiText-103, ``context_words`` on a QA
task) is refused before the model load (tasks.precheck.check_selected_tasks) and at the task build, instead of being
ignored while lm-eval records it in the task's config (breaker b2, stop 47: ``--tasks nq_oracle_bm25,wiki_lm_bm25
--metadata '{"split": "dev"}'`` scored wiki_lm's test paragraphs under a record saying split: dev)."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


def test_wiki_lm_split_dev_gives_the_dev_paragraphs() -> None:
    from tasks.utils import load_wiki_lm, wiki_split_of

    test = list(load_wiki_lm(max_docs=3)["test"])
    dev = list(load_wiki_lm(max_docs=3, split="dev")["test"])
    assert [wiki_split_of(d["title"]) for d in test] == ["test"] * 3
    assert [wiki_split_of(d["title"]) for d in dev] == ["dev"] * 3
    assert dev[0]["title"] == "Ancient Egyptian literature" and test[0]["title"] == "The Adventures of Tintin"
    assert not {d["qid"] for d in dev} & {d["qid"] for d in test}
    with pytest.raises(ConfigError, match=r"^wiki_lm_bm25: task metadata split='val': expected 'test'"):
        load_wiki_lm(max_docs=1, split="val")


@pytest.mark.parametrize("key, value, readers", [
    ("noise", 0.6, "the QA tasks"),
    ("corpus", "nq-wiki-12k", "the QA tasks and wikitext103_bm25_wiki"),
    ("context_words", 8, "wikitext103_bm25_wiki"),
])
def test_wiki_lm_refuses_other_tasks_keys_at_build(key, value, readers) -> None:
    from tasks.utils import load_wiki_lm

    with pytest.raises(ConfigError) as err:
        load_wiki_lm(max_docs=1, **{key: value})
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"wiki_lm_bm25: task metadata {key}={value!r} is read by {readers}, not by wiki_lm_bm25")
    assert "wiki_lm_bm25 reads cache_dir, data_dir, hits, max_docs, query, retriever, retriever_params, split" in line
    assert f"run wiki_lm_bm25 in its own lm_eval call without {key!r}" in line


def test_seed_and_prompt_pass_on_the_plain_text_tasks() -> None:
    """Nothing to draw, no prompt format: a vllm/API model's seed argument and a contract's prompt reach every task."""
    from tasks.utils import wiki_lm_arguments
    from tasks.wikitext import wikitext_arguments

    assert wiki_lm_arguments({"seed": 3, "prompt": "base", "hits": "2", "split": "dev"}) == {"k": 2, "split": "dev"}
    assert wikitext_arguments({"seed": 3, "prompt": "base", "hits": 4}) == {"k": 4}


def test_wikitext_refuses_split_at_build(tmp_path) -> None:
    from tasks.wikitext import load_wikitext103

    with pytest.raises(ConfigError, match=r"^wikitext103_bm25_wiki: task metadata split='dev' is read by the QA tasks "
                                          r"and wiki_lm_bm25, not by wikitext103_bm25_wiki"):
        load_wikitext103(split="dev", max_docs=1, hub_id=str(tmp_path / "no-such-copy"))


def test_the_cli_check_refuses_them_before_the_model_load(manager) -> None:
    from tasks.precheck import check_selected_tasks

    # noise reaches the QA task, which reads it, and wiki_lm_bm25, which would not: the call is refused
    with pytest.raises(ConfigError, match=r"^wiki_lm_bm25: task metadata noise=0.6 is read by the QA tasks.*own lm_eval "
                                          r"call without 'noise'"):
        check_selected_tasks(manager, ["nq_oracle_bm25", "wiki_lm_bm25"], {"noise": 0.6})
    with pytest.raises(ConfigError, match=r"^wiki_lm_bm25: task metadata split='val'"):
        check_selected_tasks(manager, ["wiki_lm_bm25"], {"split": "val"})
    with pytest.raises(ConfigError, match=r"^wikitext103_bm25_wiki: task metadata split='dev' is read by"):
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {"split": "dev"})
    with pytest.raises(ConfigError, match=r"^nq_oracle_bm25: task metadata context_words=8 is read by "
                                          r"wikitext103_bm25_wiki, not by nq_oracle_bm25"):
        check_selected_tasks(manager, ["nq_oracle_bm25"], {"context_words": 8})
    # split dev is read by both; model arguments, seed and prompt pass
    check_selected_tasks(manager, ["nq_oracle_bm25", "wiki_lm_bm25"],
                         {"split": "dev", "seed": 5, "prompt": "base", "pretrained": "x", "k": 3})


def test_wiki_lm_split_rule_is_one_check_with_one_line() -> None:
    """The split rule of wiki_lm_bm25 is one check with one line, the task's: the metadata check (wiki_lm_arguments)
    and the builder (build_wiki_lm_docs, also called by tokrag analyze) said it in two wordings (a review, stop 47)."""
    from tasks.utils import build_wiki_lm_docs, wiki_lm_arguments

    line = ("wiki_lm_bm25: task metadata split='valid': expected 'test' (default: the held-out paragraphs) or 'dev' "
            "(the disjoint tuning pool)")
    for call in (lambda: wiki_lm_arguments({"split": "valid"}), lambda: build_wiki_lm_docs(split="valid")):
        with pytest.raises(ConfigError) as exc:
            call()
        assert str(exc.value) == line
