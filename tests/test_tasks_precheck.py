"""Bad QA task metadata stops ``lm_eval`` before the model loads (``tasks.precheck``): a bring-your-own questions
file with a bad line, a corpus path that does not exist, an unknown corpus name, a file whose questions all went to
the dev/few-shot pool, ``questions`` on a task that scores its own questions. Each is the task build's own one-line
error, raised right after lm-eval resolves ``--tasks``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.errors import ConfigError, DataError
from tasks import TASK_DIR
from tasks.data import qa_split_of
from tasks.precheck import check_selected_tasks

POOL_ONLY = [{"id": "fr", "question": "Which city is the capital of France?", "answers": ["Paris"]},
             {"id": "mx", "question": "Where is Mexico?", "answers": ["North America"]}]


def _jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture
def files(tmp_path):
    corpus = _jsonl(tmp_path / "passages.jsonl", [{"id": "p1", "title": "Berlin", "text": "Berlin is in Germany."}])
    good = _jsonl(tmp_path / "q.jsonl", [{"id": "b", "question": "Where is Berlin?", "answers": ["Germany"]}])
    return corpus, good


def test_good_inputs_pass_and_other_tasks_are_not_read(manager, files, tmp_path):
    corpus, good = files
    check_selected_tasks(manager, ["rag_qa_bm25", "rag_qa_dense"], {"questions": str(good), "corpus": str(corpus)})
    check_selected_tasks(manager, ["nq_oracle_bm25", "wiki_lm_bm25"], {"pretrained": "x", "k": 3})
    # a hub id is left to the task build (it needs the network): nothing is loaded here
    check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": "my-org/my-questions", "corpus": str(corpus)})
    # not a QA task: no QA check runs here (its corpus file is not looked for), but wiki_lm_bm25 reads no corpus: its
    # loader's check refuses the key (tasks.utils.check_task_keys; its build refuses 'questions', tests/test_tasks_wiki.py)
    with pytest.raises(ConfigError, match=r"^wiki_lm_bm25: task metadata corpus='.*nope\.jsonl' is read by the QA tasks "
                                          r"and wikitext103_bm25_wiki, not by wiki_lm_bm25"):
        check_selected_tasks(manager, ["wiki_lm_bm25"], {"corpus": str(tmp_path / "nope.jsonl")})


def test_each_bad_input_is_the_task_builds_one_line_error(manager, files, tmp_path):
    corpus, good = files
    bad = _jsonl(tmp_path / "bad.jsonl", [{"question": "Where is Berlin?", "answers": ["Germany"]},
                                          {"question": "Where is Paris?"}])
    with pytest.raises(DataError, match=r"^.*bad\.jsonl:2: missing field 'answers' \(a list of gold answer strings"):
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": str(bad), "corpus": str(corpus)})
    with pytest.raises(ConfigError, match=r"^questions '.*missing\.jsonl': no such file"):
        check_selected_tasks(manager, ["rag_qa_hybrid"], {"questions": str(tmp_path / "missing.jsonl"), "corpus": str(corpus)})
    with pytest.raises(ConfigError, match=r"^corpus path .*nope\.jsonl does not exist$"):
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": str(good), "corpus": str(tmp_path / "nope.jsonl")})
    with pytest.raises(ConfigError, match=r"^unknown corpus 'nq-wiki-12' \(did you mean 'nq-wiki-12k'\?\)"):
        check_selected_tasks(manager, ["nq_open_bm25"], {"corpus": "nq-wiki-12"})
    assert [qa_split_of(r["question"]) for r in POOL_ONLY] == ["dev", "fewshot"]
    pool = _jsonl(tmp_path / "pool.jsonl", POOL_ONLY)
    with pytest.raises(DataError, match=r"^dataset 'byo', split 'test': no questions: of the 2 questions in .*pool\.jsonl, "
                                        r"0 are test, 1 dev and 1 few-shot .*evaluate the dev ones"):
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": str(pool), "corpus": str(corpus)})
    with pytest.raises(ConfigError, match=r"^rag_qa_bm25: task metadata hits='five' is not valid: expected an integer >= 1$"):
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": str(good), "corpus": str(corpus), "hits": "five"})
    with pytest.raises(ConfigError, match=r"read your own questions and corpus: --metadata"):
        check_selected_tasks(manager, ["rag_qa_bm25"], {"corpus": str(corpus)})
    # a group is expanded: its first QA task that would ignore 'questions' is named
    with pytest.raises(ConfigError, match=r"^nq_open_bm25: task metadata questions='.*q\.jsonl' is read only by"):
        check_selected_tasks(manager, ["rag_qa"], {"questions": str(good)})


def test_data_free_checks_of_the_build_run_too(manager, files, tmp_path):
    """What the task build refuses without reading data is refused here too (each used to pass the pre-check and stop
    the run only after the model loaded), with the build's own message; and bad paths are one line, no traceback."""
    corpus, good = files
    byo = {"questions": str(good), "corpus": str(corpus)}
    cases = [
        (["rag_qa_bm25"], {**byo, "retriever": "bm26"}, r"^unknown retriever 'bm26' \(did you mean 'bm25'\?\)"),
        (["rag_qa_bm25"], {**byo, "counterfactual": True}, r"^dataset='byo': counterfactual/gold-only tasks need gold passages"),
        (["nq_open_bm25_wiki"], {"noise": 0.2}, r"^corpus='prebuilt:wikipedia-dpr-100w': noise, counterfactual and gold-only "
                                                r"variants draw passages from a local corpus"),
        (["rag_qa_bm25"], {**byo, "dataset": "nq"}, r"^dataset='nq': expected one of nq_open, nq_oracle, webq, "),
        (["rag_qa_bm25"], {**byo, "corpus": [str(corpus)]}, r"^task metadata corpus=\[.*\]: expected one corpus name or path \(a string\)$"),
        (["rag_qa_bm25"], {**byo, "questions": 7}, r"^task metadata questions=7: expected one file path or hub id \(a string\)$"),
        (["rag_qa_bm25"], {**byo, "questions": "~no-such-user-tokrag/q.jsonl"},
         r"^questions '~no-such-user-tokrag/q.jsonl': cannot expand '~' \(.*\); give the full path$"),
        (["rag_qa_bm25"], {**byo, "corpus": "~no-such-user-tokrag/c.jsonl"},
         r"^corpus path '~no-such-user-tokrag/c.jsonl': cannot expand '~' \(.*\); give the full path$"),
        (["rag_qa_bm25"], {**byo, "corpus": "/tmp/" + "c" * 300 + ".jsonl"}, r"^corpus path '/tmp/c{75}'...: File name too long$"),
        # corpus files the build would refuse by their first line: a JSON array, an unknown format, an empty folder
        (["rag_qa_bm25"], {**byo, "corpus": str(_jsonl(tmp_path / "plist.json", ['[{"id": "p1", "title": "B", "text": "x"},',
                                                                                 '{"id": "p2", "title": "C", "text": "y"}]']))},
         r"plist\.json: one JSON array is no corpus format tokrag reads; write one \{id, title, text\} record per line"),
        (["rag_qa_bm25"], {**byo, "corpus": str(_jsonl(tmp_path / "c.csv", ["id,title,text"]))},
         r"^corpus file .*c\.csv: the extension '\.csv' is no corpus format tokrag reads"),
        (["rag_qa_bm25"], {**byo, "corpus": str(_jsonl(tmp_path / "empty" / "README", ["x"]).parent)},
         r"empty: folder holds no \.jsonl/\.json/\.tsv files$"),
        # both paths wrong: the questions are named first, as the build reads them first
        (["rag_qa_bm25"], {"questions": str(tmp_path / "nope.jsonl"), "corpus": str(tmp_path / "nope_corpus.jsonl")},
         r"^questions '.*nope\.jsonl': no such file"),
    ]
    for names, meta, message in cases:
        with pytest.raises((ConfigError, DataError), match=message):
            check_selected_tasks(manager, names, meta)


def test_a_users_own_loader_of_the_same_name_is_left_to_its_build(files, tmp_path):
    """A user's YAML that includes rag_qa_bm25 but builds with its own ``my_utils.load_qa`` (which may read
    ``questions``/``corpus`` relative to its own folder) is not pre-checked as ours; one that keeps ours is."""
    from lm_eval.tasks import TaskManager

    corpus, good = files
    inc = tmp_path / "inc"
    inc.mkdir()
    base = f"include: {TASK_DIR / 'qa' / 'rag_qa_bm25.yaml'}\nmetadata:\n  version: 1.0\n  dataset: byo\n  corpus: nope.jsonl\n"
    (inc / "my_rel.yaml").write_text(f"task: my_rel\ncustom_dataset: !function my_utils.load_qa\n{base}  questions: q.jsonl\n")
    (inc / "my_byo.yaml").write_text(f"task: my_byo\n{base}  questions: {good}\n")
    tm = TaskManager(include_path=[str(TASK_DIR), str(inc)], include_defaults=False)
    check_selected_tasks(tm, ["my_rel"], {})
    with pytest.raises(ConfigError, match=r"^corpus path nope\.jsonl does not exist"):
        check_selected_tasks(tm, ["my_byo"], {})


def test_the_base_prompt_without_its_newline_stop_is_warned(manager, monkeypatch):
    """``--metadata '{"prompt": "base"}'`` without ``--gen_kwargs 'until=["\\n"]'`` ran the base format with the instruct
    format's stop strings (answers ran on past the line), silently."""
    import logging

    import tasks.precheck

    # eli5_bm25_wiki is over prebuilt:wikipedia-dpr-100w: its download check is tests/test_precheck_prebuilt_offline.py's
    monkeypatch.setattr(tasks.precheck, "check_prebuilt_download", lambda corpus, kw: None)
    # and its KILT questions (facebook/kilt_tasks, not here offline): tests/test_task_sources_s46f8.py checks them
    import tasks.sources

    monkeypatch.setattr(tasks.sources, "check_hub_source", lambda *args, **kwargs: None)

    got: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record.getMessage())

    lg, handler = logging.getLogger("tasks.precheck"), Keep(logging.WARNING)
    lg.addHandler(handler)
    try:
        check_selected_tasks(manager, ["nq_oracle_bm25"], {"prompt": "base"})
        assert got == ["nq_oracle_bm25: prompt=base keeps the instruct format's stop strings ['\\n\\n', 'Question:']; the base "
                       "format stops at a newline: add --gen_kwargs 'until=[\"\\n\"]' (tasks/README.md, \"Prompts\")"]
        check_selected_tasks(manager, ["nq_oracle_bm25"], {"prompt": "base"}, {"until": ["\n"]})
        check_selected_tasks(manager, ["nq_oracle_bm25"], {"prompt": "base"}, "until=\\n,max_gen_toks=16")
        check_selected_tasks(manager, ["nq_oracle_bm25"], {})  # instruct
        check_selected_tasks(manager, ["eli5_bm25_wiki"], {"prompt": "base"})  # long-form: its own stop, kept
        assert len(got) == 1
    finally:
        lg.removeHandler(handler)


def test_lm_eval_stops_on_a_bad_questions_line_before_loading_the_model(files, tmp_path):
    """The model path does not exist: the error is the questions file's, so the model was never loaded."""
    corpus, _ = files
    bad = _jsonl(tmp_path / "bad.jsonl", [{"question": "Where is Berlin?", "answers": []}])
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lm_eval"), "--model", "rag-standard", "--model_args",
         f"pretrained={tmp_path / 'no-such-model'}", "--tasks", "rag_qa_bm25", "--limit", "1",
         "--metadata", json.dumps({"questions": str(bad), "corpus": str(corpus)})],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "no-such-model" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].endswith(f"{bad}:1: 'answers' is empty; give at least one gold answer"), \
        proc.stderr[-2000:]


def test_a_seed_model_argument_that_reseeds_the_noise_passages_is_warned(manager, caplog):
    """lm-eval's vllm, API (local-completions, ...) and TensorRT-LLM models take a ``seed`` model argument, and lm-eval
    merges ``--model_args`` into every task's metadata, where ``seed`` draws the noise and counterfactual passages: such
    a run silently got other noise passages than a run of another model without it (the comparison the tasks exist
    for). One WARNING per task that draws with it; none where the seed draws nothing or --metadata sets it."""
    import logging

    def warned(names, metadata, model_args):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tasks.precheck"):
            check_selected_tasks(manager, names, metadata, None, model_args)
        return [r.getMessage() for r in caplog.records if r.name == "tasks.precheck"]

    merged = {"pretrained": "m", "seed": 42}  # what lm-eval passes: --model_args | --metadata
    assert warned(["nq_oracle_bm25_noise60", "nq_oracle_bm25", "nq_oracle_gold_counterfactual"], merged,
                  "pretrained=m,seed=42") == [
        f"{task}: --model_args seed=42 also seeds this task's noise/counterfactual passages (lm-eval merges --model_args "
        "into task metadata), so they differ from a run without it (default seed 1234); add --metadata "
        "'{\"seed\": 1234}' to keep the default draw" for task in ("nq_oracle_bm25_noise60", "nq_oracle_gold_counterfactual")]
    assert warned(["nq_oracle_bm25_noise60"], {"pretrained": "m", "seed": 1234}, {"pretrained": "m", "seed": 42}) == []
    assert warned(["nq_oracle_bm25_noise60"], {"pretrained": "m"}, "pretrained=m") == []
    # the default seed given again draws the default passages: nothing to warn about
    assert warned(["nq_oracle_bm25_noise60"], {"pretrained": "m", "seed": 1234}, "pretrained=m,seed=1234") == []


def test_num_fewshot_on_a_task_without_a_few_shot_pool(manager, files):
    """A bring-your-own file whose questions all stay in the test split has an empty few-shot pool: "has 0 few-shot
    examples ...; pass --num_fewshot 0 or fewer" read oddly (a new-user trial); now it says to drop the flag."""
    corpus, good = files
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": str(good), "corpus": str(corpus)}, num_fewshot=3)
    assert str(exc.value) == ("--num_fewshot 3: task rag_qa_bm25 has no few-shot examples (its 'fewshot' split is empty, "
                              "tasks/README.md \"Splits\"); drop --num_fewshot")
    check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": str(good), "corpus": str(corpus)}, num_fewshot=0)
