"""End to end: plain ``lm_eval --model tokrag`` (registered by the .pth hook) runs offline on a retrieval-style
task and ``--log_samples`` carries the method's decisions in the samples JSONL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TASK = Path(__file__).parent / "fixtures" / "tokrag_model_task"


def test_lm_eval_cli_tokrag_offline_with_traces(tmp_path):
    """Also: ``preset=PATH`` (a ``tokrag calibrate`` preset) is applied under the explicit model arguments
    and recorded in the results' config (path, sha256, params)."""
    from tokrag_model.loading import resolve_pretrained, weights_fingerprint

    lm_eval = Path(sys.executable).parent / "lm_eval"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps({
        "format": "tokrag-preset/1", "method": "tokrag", "calibration": {"policy": "dynamic"},
        "model": {"pretrained": "smollm2-135m-instruct", "n_layers": 30,
                  "fingerprint": weights_fingerprint(resolve_pretrained("smollm2-135m-instruct").path)},
        "params": {"layer": 7, "js_threshold": 1e-4, "js_min_layer": 12, "layer_fallback": 21}}))
    cmd = [str(lm_eval), "--model", "tokrag", "--model_args",
           f"pretrained=smollm2-135m-instruct,layer=dynamic,k=2,preset={preset}",
           "--tasks", "tokrag_model_mini", "--include_path", str(TASK), "--limit", "1",
           "--output_path", str(tmp_path / "out"), "--log_samples"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert re.search(r"^\|tokrag_model_mini\s*\|\s*1\|", out.stdout, re.M), out.stdout[-2000:]  # n per task (issue 12.6)
    results = list((tmp_path / "out").rglob("results_*.json"))
    samples = list((tmp_path / "out").rglob("samples_tokrag_model_mini_*.jsonl"))
    assert len(results) == 1 and len(samples) == 1
    res = json.loads(results[0].read_text())
    cfg = res["config"]
    assert cfg["tokrag_method"] == "tokrag" and len(cfg["tokrag_model_fingerprint"]) == 16
    rc = cfg["tokrag_resolved_config"]
    assert rc["layer"] == "dynamic" and rc["k"] == 2  # the explicit argument wins over the preset's layer 7
    assert (rc["js_threshold"], rc["js_min_layer"], rc["layer_fallback"]) == (1e-4, 12, 21)  # the rest from the preset
    assert cfg["tokrag_preset"]["path"] == str(preset) and cfg["tokrag_preset"]["params"]["layer"] == 7
    assert cfg["tokrag_preset"]["sha256"] == __import__("hashlib").sha256(preset.read_bytes()).hexdigest()
    assert "answer_match,none" in res["results"]["tokrag_model_mini"]
    lines = [json.loads(x) for x in samples[0].read_text().splitlines()]
    assert len(lines) == 1
    for line in lines:
        trace = line["arguments"]["gen_args_0"]["arg_2"]["tokrag_trace"]
        assert trace["method"] == "tokrag" and trace["passages"] == [c["docid"] for c in line["doc"]["ctxs"]]
        assert 0 < len(trace["tokens"]) <= 4  # max_gen_toks of the task
        assert trace["n_rag"] + trace["n_pure"] == len(trace["tokens"]) > 0
        for branch, s_r, s_l, layer, text in trace["tokens"]:
            assert branch[0] in "RL" and isinstance(text, str)
            assert layer is None or 12 <= layer <= 28  # pairs above js_min_layer 12 give layers 12..28 (fallback 21)
        assert "".join(t[4] for t in trace["tokens"]).strip().startswith(line["resps"][0][0].strip())
