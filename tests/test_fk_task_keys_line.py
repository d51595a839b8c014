"""The refusal of a key that another tokrag task reads listed, among the keys a QA task "reads", ``questions`` (which
the same task refuses: only the bring-your-own tasks read it) and the keys its YAML sets (``dataset``, ``gold_only``),
none of which a user sets on it (new-user trial t1, stop 47). The line now lists the keys a user may set on the task
(:func:`tasks.utils.user_task_keys`); what is accepted and refused is unchanged."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks.utils import QA_TASK_KEYS, check_task_keys, qa_arguments

USER_KEYS = ("cache_dir, corpus, counterfactual_scope, data_dir, hits, hub_id, hub_split, instruction, max_docs, noise, "
             "oracle_file, prompt, retriever, retriever_params, seed, split")


def _line(metadata: dict, task: str) -> str:
    with pytest.raises(ConfigError) as exc:
        qa_arguments(metadata, task)
    return str(exc.value)


def test_a_qa_task_lists_the_keys_a_user_sets():
    line = _line({"dataset": "nq_oracle", "corpus": "nq-wiki-12k", "context_words": 16}, "nq_oracle_bm25")
    assert line == ("nq_oracle_bm25: task metadata context_words=16 is read by wikitext103_bm25_wiki, not by "
                    "nq_oracle_bm25, which would ignore it and record it in its results; nq_oracle_bm25 reads "
                    f"{USER_KEYS}: run nq_oracle_bm25 in its own lm_eval call without 'context_words' (--metadata goes "
                    "to every task of a call)"), line


def test_a_bring_your_own_task_lists_questions():
    line = _line({"dataset": "byo", "questions": "q.jsonl", "corpus": "c.jsonl", "query": "lead"}, "rag_qa_bm25")
    keys = USER_KEYS.replace("prompt, ", "prompt, questions, ")
    assert f"; rag_qa_bm25 reads {keys}: run rag_qa_bm25 in its own lm_eval call without 'query'" in line, line


def test_what_is_accepted_is_unchanged():
    for key in sorted(QA_TASK_KEYS):  # every key a QA task reads passes this check, the YAML's ones too
        check_task_keys({key: "x"}, "tasks.utils.load_qa", "nq_oracle_bm25")
    with pytest.raises(ConfigError, match=r"^nq_oracle_bm25: task metadata query='lead' is read by wiki_lm_bm25"):
        check_task_keys({"query": "lead"}, "tasks.utils.load_qa", "nq_oracle_bm25")


def test_the_near_miss_line_lists_the_keys_a_user_sets():
    """A typo's line ("did you mean 'noise'?") listed every key the loader reads, ``dataset`` and ``questions``
    included, apart from the line above (fixer fk's note, stop 47)."""
    from tasks.utils import load_qa

    with pytest.raises(ConfigError) as exc:
        load_qa(dataset="nq_oracle", noies=0.2, config_source="/x/nq_oracle_bm25.yaml")
    assert str(exc.value) == ("nq_oracle_bm25: unknown task metadata key 'noies' (did you mean 'noise'?); the task's keys: "
                              + USER_KEYS)
    with pytest.raises(ConfigError) as exc:
        load_qa(dataset="byo", noies=0.2, config_source="/x/rag_qa_bm25.yaml")
    assert str(exc.value).endswith("prompt, questions, retriever, retriever_params, seed, split")


def test_a_miss_of_a_key_left_out_of_the_list_is_not_suggested():
    """The near-miss line suggested keys its own list leaves out ('gold_onyl' -> did you mean 'gold_only'?, 'question'
    -> 'questions' on a built-in data set, where 'questions' is refused; reviewer r3, stop 47): it says whose key it is."""
    from tasks.utils import load_qa

    def line(**kw):
        with pytest.raises(ConfigError) as exc:
            load_qa(dataset="nq_oracle", config_source="/x/nq_oracle_bm25.yaml", **kw)
        return str(exc.value)

    assert line(gold_onyl=True) == ("nq_oracle_bm25: unknown task metadata key 'gold_onyl' (close to 'gold_only', which "
                                    "the task's YAML sets); the task's keys: " + USER_KEYS)
    assert line(question="x") == ("nq_oracle_bm25: unknown task metadata key 'question' (close to 'questions', which only "
                                  "the bring-your-own tasks read); the task's keys: " + USER_KEYS)
