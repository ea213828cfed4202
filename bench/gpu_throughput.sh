#!/usr/bin/env bash
# Tokens/s and MFU of the trainer on this machine's GPUs, one command:
#
#   bench/gpu_throughput.sh [STEPS]        (default 30; the first 5 steps are warm-up and not counted)
#
# Runs train/configs/125m.yaml in bf16 (CONFIG=... for another) as pure data parallel over NGPU GPUs
# (default: all visible), on MANIFEST or else on synthetic random tokens (vocab 32000, built once under
# WORK). Prints the median tokens/s (all GPUs) and MFU from the run's metrics.jsonl; MFU uses the peak
# table in train/metrics.py (PEAK_TFLOPS=<per-GPU bf16 TFLOP/s> for a GPU not in it).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-${STEPS:-30}}
PY=${PY:-.venv/bin/python}
CONFIG=${CONFIG:-train/configs/125m.yaml}
WORK=${WORK:-build/bench/gpu}
NGPU=${NGPU:-$($PY -c 'import torch; print(torch.cuda.device_count())')}
if [ "$NGPU" -lt 1 ]; then echo "no GPU visible" >&2; exit 1; fi
SEQ=$($PY -c "import yaml,sys; print(yaml.safe_load(open('$CONFIG'))['data']['seq_len'])")
MANIFEST=${MANIFEST:-}
if [ -z "$MANIFEST" ]; then
  $PY bench/synthetic_manifest.py --out "$WORK/data" --vocab 32000 --tokens "${SYNTH_TOKENS:-5e7}" --seq-len "$SEQ"
  MANIFEST=$WORK/data/manifests/synthetic.json
fi
RUN=$WORK/run-$(date +%Y%m%d-%H%M%S)
EXTRA=()
if [ -n "${PEAK_TFLOPS:-}" ]; then EXTRA+=(--set "log.peak_tflops=$PEAK_TFLOPS"); fi
.venv/bin/torchrun --standalone --nproc_per_node="$NGPU" -m train.pretrain --config "$CONFIG" \
  --manifest "$MANIFEST" --run-dir "$RUN" --steps "$STEPS" \
  --set parallel.tp=1 --set parallel.pp=1 --set parallel.dp="$NGPU" --set eval.every=0 \
  --set checkpoint.every=0 --set log.every=5 "${EXTRA[@]}"
$PY - "$RUN" "$NGPU" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/metrics.jsonl") if '"kind": "train"' in l][5:]
tps = statistics.median(r["tokens_per_s"] for r in rows)
mfu = [r["mfu"] for r in rows if r["mfu"] is not None]
print(json.dumps({"gpus": int(sys.argv[2]), "steps_counted": len(rows), "tokens_per_s": round(tps),
                  "tokens_per_s_per_gpu": round(tps / int(sys.argv[2])),
                  "mfu": round(statistics.median(mfu), 4) if mfu else None, "run": sys.argv[1]}))
PY
