"""REPLUG's refusals name the doc a task's own docs file keys by ``id`` (s57 r4, review of a1's 4e4deb8).

The non-finite-score refusal (and the missing-score and temperature ones) named the doc by ``doc["qid"]`` only, so the
docs of a task of one's own (``dataset_path: json``, tasks/README.md's example keys them by ``id``) were all ``doc
'?'``: the line named no doc. An int score too large for a float was written out in full (401 digits for ``10**400``),
and one of over 4300 digits raised Python 3.11's ValueError while the message was built, instead of the one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrieval.errors import ConfigError, DataError
from tokrag_model.methods.replug import doc_temperature, passage_scores

TAIL = ("; the weights softmax(score/τ) need a finite one for every passage: give it its retriever's score in the "
        "docs, rebuild them with a tokrag retrieval task (it scores every attached passage), or use "
        "replug_mode=uniform")
PASSAGES = [{"docid": "p1", "title": "William Shakespeare", "rank": 1, "score": 7.1,
             "text": "William Shakespeare was an English playwright who wrote Hamlet."},
            {"docid": "p2", "title": "Paris", "text": "Paris is the capital of France.", "score": "NaN", "rank": 2}]


def _docs_line(score: str) -> str:
    """One docs-file line (``id``-keyed, as tasks/README.md's example) whose second passage has ``score`` (JSON)."""
    text = json.dumps({"id": "d1", "question": "Who wrote Hamlet?", "answers": ["William Shakespeare"],
                       "ctxs": PASSAGES})
    return text.replace('"score": "NaN"', f'"score": {score}')


@pytest.mark.parametrize("score, shown", [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf")])
def test_an_id_keyed_doc_is_named_by_its_id(score, shown):
    doc = json.loads(_docs_line(score))
    with pytest.raises(DataError) as err:
        passage_scores(doc, doc["ctxs"])
    assert str(err.value) == (f"--model rag-replug (replug_mode=mixture): doc 'd1', passage 'p2' (rank 2) has a score "
                              f"that is not a finite number ({shown})" + TAIL)  # old: doc '?'


def test_the_id_fields_are_read_in_the_topics_order_and_a_doc_without_one_by_its_question():
    both = {"qid": "q7", "id": "d7", "ctxs": [{"docid": "a", "rank": 1}]}
    with pytest.raises(DataError, match=r"\): doc 'q7', passage 'a' \(rank 1\) has no retriever score \(None\);"):
        passage_scores(both, both["ctxs"])  # qid first, as before
    numbered = {"_id": 12, "ctxs": [{"docid": "a", "rank": 1}]}
    with pytest.raises(DataError, match=r"\): doc '12', passage 'a'"):
        passage_scores(numbered, numbered["ctxs"])
    asked = {"question": "  Who wrote\nHamlet?  ", "ctxs": [{"docid": "a", "rank": 1, "score": None}]}
    with pytest.raises(DataError, match=r"\): doc \(question 'Who wrote Hamlet\?'\), passage 'a'"):
        passage_scores(asked, asked["ctxs"])
    long_q = {"query": "x" * 70, "ctxs": [{"docid": "a", "rank": 1}]}
    with pytest.raises(DataError, match=r"\): doc \(question '" + "x" * 60 + r"\.\.\.'\), passage 'a'"):
        passage_scores(long_q, long_q["ctxs"])
    bare = {"ctxs": [{"docid": "a", "rank": 1}]}
    with pytest.raises(DataError, match=r"\): doc '\?', passage 'a'"):
        passage_scores(bare, bare["ctxs"])


def test_the_temperature_refusals_name_an_id_keyed_doc_too():
    with pytest.raises(ConfigError) as err:
        doc_temperature({"id": "d1"}, None)
    assert str(err.value) == ("--model rag-replug: doc 'd1' does not record which retriever scored its passages "
                              "(doc['scored_by']); pass replug_temperature=τ explicitly")  # old: doc '?'
    with pytest.raises(ConfigError, match=r"from 'dense-ip' \(doc 'd1'; "):
        doc_temperature({"id": "d1", "scored_by": "dense-ip"}, None)
    with pytest.raises(ConfigError, match=r"from 'splade' \(doc 'd1'; defaults: bm25=1.0"):
        doc_temperature({"id": "d1", "scored_by": "splade"}, None)


@pytest.fixture
def int_digit_limit():
    """Python's default limit of 4300 digits for int <-> str (3.11+), whatever PYTHONINTMAXSTRDIGITS says."""
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("Python before 3.11 has no int digit limit")
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    yield
    sys.set_int_max_str_digits(before)


def test_an_int_too_large_for_a_float_is_shown_by_its_size(int_digit_limit):
    doc = {"qid": "q8", "ctxs": [{"docid": "d1", "score": 10 ** 400, "rank": 1}]}
    with pytest.raises(DataError) as err:
        passage_scores(doc, doc["ctxs"])
    # 10**400 has 1329 bits (2**1328 < 10**400 < 2**1329); old: its 401 digits
    assert str(err.value) == ("--model rag-replug (replug_mode=mixture): doc 'q8', passage 'd1' (rank 1) has a score "
                              "that is not a finite number (an integer of 1329 bits, too large for a float)" + TAIL)
    doc["ctxs"][0]["score"] = 10 ** 5000  # old: ValueError (Exceeds the limit (4300 digits) ...) building the message
    with pytest.raises(DataError, match=r"not a finite number \(an integer of 16610 bits, too large for a float\);"):
        passage_scores(doc, doc["ctxs"])


def _tiny_model(folder) -> None:
    """A 1-layer random Llama with a word-level tokenizer: loads in a moment; the refusal comes before any forward."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["[UNK]", "<s>", "</s>", "Question", ":", "Answer", "Who", "wrote", "Hamlet", "?", "\n"]
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Split(pattern=r"\w+|[^\w\s]|\n", behavior="isolated")
    tk.decoder = decoders.WordPiece()
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", bos_token="<s>", eos_token="</s>").save_pretrained(folder)
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                                 bos_token_id=1, eos_token_id=2)).save_pretrained(folder)


def test_lm_eval_on_a_docs_file_with_a_nan_score_names_the_doc_in_one_line(tmp_path):
    """The real task path: lm-eval reads the docs file through ``datasets``' json loader (NaN read as a float), the
    model refuses at the first request."""
    model = tmp_path / "tiny model"  # a space in the path, as users' folders have
    _tiny_model(model)
    (tmp_path / "docs.jsonl").write_text(_docs_line("NaN") + "\n", encoding="utf-8")
    (tmp_path / "my_qa_nan.yaml").write_text(
        "task: my_qa_nan\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {json.dumps(str(tmp_path / 'docs.jsonl'))}}}}}\n"
        "test_split: test\noutput_type: generate_until\n"
        'doc_to_text: "Question: {{question}}\\nAnswer:"\ndoc_to_target: "{{answers[0]}}"\n'
        'generation_kwargs: {until: ["\\n"], max_gen_toks: 4}\nmetric_list: [{metric: exact_match}]\n'
        "metadata: {version: 1.0}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TOKRAG_TRACEBACK"}
    env.update(HF_DATASETS_CACHE=str(tmp_path / "hf_datasets"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "rag-replug", "--model_args",
         f"pretrained={model},replug_temperature=1", "--include_path", str(tmp_path), "--tasks", "my_qa_nan",
         "--device", "cpu", "--output_path", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == ["python -m lm_eval: error: --model rag-replug (replug_mode=mixture): doc 'd1', passage 'p2' "
                      "(rank 2) has a score that is not a finite number (nan)" + TAIL]  # old: doc '?'
    assert not (tmp_path / "out").exists()
