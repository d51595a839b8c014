"""The Self-RAG-style critic's refusal of a tokenizer that cannot tell Yes from No, through lm_eval (s57 r4, review of
a1's f922e58): a word-level tokenizer without Yes or No encodes all eight words as ``[UNK]``, the one token of both
lists. Before f922e58 the critic summed ``P([UNK])`` for Yes and for No alike, so every ratio was 0.5 and every passage
kept at the default threshold, silently; now the run stops in one line naming the tokenizer and what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_s57_r4_replug_doc_name import PASSAGES, _tiny_model

from retrieval.errors import ConfigError
from tokrag_model.methods.selfrag_filter import answer_token_ids


def test_the_word_level_tokenizer_gives_no_answer_tokens(tmp_path):
    from transformers import AutoTokenizer

    _tiny_model(tmp_path / "m")
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "m"))
    assert {w: tok.encode(w, add_special_tokens=False) for w in ("Yes", " No")} == {"Yes": [0], " No": [0]}  # [UNK]
    with pytest.raises(ConfigError) as err:
        answer_token_ids(tok)
    assert str(err.value).startswith(f"--model rag-selfrag-filter: tokenizer {str(tmp_path / 'm')!r} leaves the critic "
                                     "no Yes token")


def test_lm_eval_refuses_it_in_one_line(tmp_path):
    model = tmp_path / "tiny model"  # a space in the path
    _tiny_model(model)
    doc = {"id": "d1", "question": "Who wrote Hamlet?", "answers": ["William Shakespeare"],
           "ctxs": [{**c, "score": 7.1} for c in PASSAGES]}
    (tmp_path / "docs.jsonl").write_text(json.dumps(doc) + "\n", encoding="utf-8")
    (tmp_path / "my_qa.yaml").write_text(
        "task: my_qa\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {json.dumps(str(tmp_path / 'docs.jsonl'))}}}}}\n"
        "test_split: test\noutput_type: generate_until\n"
        'doc_to_text: "Question: {{question}}\\nAnswer:"\ndoc_to_target: "{{answers[0]}}"\n'
        'generation_kwargs: {until: ["\\n"], max_gen_toks: 4}\nmetric_list: [{metric: exact_match}]\n'
        "metadata: {version: 1.0}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TOKRAG_TRACEBACK"}
    env.update(HF_DATASETS_CACHE=str(tmp_path / "hf_datasets"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "rag-selfrag-filter", "--model_args", f"pretrained={model}",
         "--include_path", str(tmp_path), "--tasks", "my_qa", "--device", "cpu", "--output_path", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0  # on cfbac8a: 0, every passage kept with r = 0.5
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [f"python -m lm_eval: error: --model rag-selfrag-filter: tokenizer {str(model)!r} leaves the "
                      "critic no Yes token (the first tokens of 'Yes', ' Yes', 'yes', ' yes', 'No', ' No', 'no', ' no' "
                      "are blank or shared by Yes and No), so P(Yes)/(P(Yes)+P(No)) cannot be read; use a model whose "
                      "tokenizer encodes Yes and No apart"]
    assert not (tmp_path / "out").exists()
