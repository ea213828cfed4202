#!/usr/bin/env bash
# The trainer on this machine's GPUs, one command, no network:
#
#   bench/gpu_throughput.sh [STEPS]        (default 20 per throughput run; the first 5 are warm-up, not counted)
#
# 1. tokens/s, MFU, peak memory (against `glassbox estimate`'s figure for the same batch) and torch.compile
#    time in bf16 of each config in CONFIGS (default train/configs/125m.yaml, 350m.yaml and 1b-1gpu.yaml) as
#    pure data parallel over NGPU GPUs (default: all visible), at global batch GLOBAL_BATCH (default 64
#    sequences: the micro-batch of the config, so per-token speed is the config's), compiled blocks, fused
#    AdamW, flash attention and the chunked loss as the trainer does by default on a GPU; each config once per
#    variant in VARIANTS (default: `causal`, model.document_masking=false; `docmask`, intra-document attention
#    on: flex attention with a block mask on a GPU; `muon`, docmask with optimizer.kind=muon: DeepSpeed's Muon under ZeRO-1, no clipping),
#    NAME:section.key=value[,section.key=value...] each;
# 2. a resharded resume (train/checkpoint/reshard.py): the 125m shape in fp32 (Adam eps 1e-3, so layouts compare to
#    ~1e-6; tests/train/checkpoint/test_train_reshard.py argues it) trains RESHARD_STEPS (10) steps with a checkpoint, goes on
#    5 steps in the same layout, and a copy of the checkpoint goes on 5 steps in another layout: tp=2 with
#    half the data ranks on 2+ GPUs, ZeRO stage 1 -> 0 on one GPU (one process per GPU, so the only layout change
#    one GPU allows). Reports the largest relative loss difference of those 5 steps (pass: <= 1e-4; GPU
#    kernels add nondeterministic atomics to the summation-order noise). RESHARD_SETS (default
#    model.document_masking=true): options the resumed runs train with, comma-separated.
#
# Data: random token ids (vocab 32000) built once under WORK (bench/synthetic_manifest.py), or MANIFEST=...
# Output: everything (runs, logs, summary.json, summary.txt) under OUT (default build/bench/gpu/<time>).
# Every step runs under `timeout STEP_TIMEOUT` (default 300 s); a failed step is reported in the summary table
# and the script goes on, exiting 1 at the end. MFU uses the peak table in train/loop/metrics.py (PEAK_TFLOPS=<per-GPU
# TFLOP/s> for a GPU not in it).
#
# Without a GPU: DRY_RUN=1 runs the same steps on the CPU (gloo, 2 processes) with train/configs/tiny.yaml in
# fp32 and a few steps, to check the script itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PY:-.venv/bin/python}
# The launcher: .venv's torchrun, else `$PY -m torch.distributed.run` (a machine without the venv); TORCHRUN may be
# a command of several words.
if [ -z "${TORCHRUN:-}" ]; then
  if [ -x .venv/bin/torchrun ]; then TORCHRUN=.venv/bin/torchrun; else TORCHRUN="$PY -m torch.distributed.run"; fi
fi
read -r -a LAUNCH <<< "$TORCHRUN"
WORK=${WORK:-build/bench/gpu}
OUT=${OUT:-$WORK/$(date +%Y%m%d-%H%M%S)}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
DRY_RUN=${DRY_RUN:-0}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/bench.log") 2>&1

if [ "$DRY_RUN" = 1 ]; then
  NGPU=${NGPU:-2}
  STEPS=${1:-${STEPS:-8}}
  CONFIGS=${CONFIGS:-train/configs/tiny.yaml}
  PRECISION=fp32
  GLOBAL_BATCH=${GLOBAL_BATCH:-16}
  RESHARD_CONFIG=${RESHARD_CONFIG:-train/configs/tiny.yaml}
  RESHARD_SEQ=${RESHARD_SEQ:-128}
  SYNTH_TOKENS=${SYNTH_TOKENS:-2e6}
  export DS_ACCELERATOR=cpu OMP_NUM_THREADS=1
else
  NGPU=${NGPU:-$($PY -c 'import torch; print(torch.cuda.device_count())')}
  if [ "$NGPU" -lt 1 ]; then
    echo "error: no GPU visible; DRY_RUN=1 checks this script on the CPU" >&2
    exit 1
  fi
  STEPS=${1:-${STEPS:-20}}
  CONFIGS=${CONFIGS:-train/configs/125m.yaml train/configs/350m.yaml train/configs/1b-1gpu.yaml}
  PRECISION=bf16
  GLOBAL_BATCH=${GLOBAL_BATCH:-64}
  RESHARD_CONFIG=${RESHARD_CONFIG:-train/configs/125m.yaml}
  RESHARD_SEQ=${RESHARD_SEQ:-1024}
  SYNTH_TOKENS=${SYNTH_TOKENS:-2e7}
fi
RESHARD_STEPS=${RESHARD_STEPS:-10}
# muon: bf16 runs under ZeRO-1, so DeepSpeed's own Muon, which clips the update rather than the gradient: grad_clip 0.
VARIANTS=${VARIANTS:-causal:model.document_masking=false docmask:model.document_masking=true muon:model.document_masking=true,optimizer.kind=muon,optimizer.grad_clip=0}
echo "== gpu_throughput: NGPU=$NGPU STEPS=$STEPS CONFIGS=($CONFIGS) DRY_RUN=$DRY_RUN OUT=$OUT"
if [ "$DRY_RUN" != 1 ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi

ROWS=$OUT/rows.jsonl
: > "$ROWS"
FAILED=0

row() {  # one JSON row of the summary
  $PY -c 'import json, sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' "$@" >> "$ROWS"
}

timed() {  # timed NAME CMD...: run under the step timeout, log to OUT/NAME.log; sets RC and WALL
  local name=$1; shift
  local t0; t0=$(date +%s)
  echo "-- $name: $*"
  set +e
  timeout --kill-after=30 "$STEP_TIMEOUT" "$@" > "$OUT/$name.log" 2>&1
  RC=$?
  set -e
  WALL=$(( $(date +%s) - t0 ))
  tail -n 3 "$OUT/$name.log"
  if [ "$RC" -ne 0 ]; then
    FAILED=1
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then echo "   $name: TIMEOUT after ${STEP_TIMEOUT}s"; else echo "   $name: FAILED (exit $RC)"; fi
  fi
}

train() {  # train NAME RUN NPROC STEPS ARGS...: the trainer via torchrun
  local name=$1 run=$2 nproc=$3 steps=$4; shift 4
  timed "$name" "${LAUNCH[@]}" --standalone --nproc_per_node="$nproc" -m train.pretrain --manifest "$MANIFEST" \
    --run-dir "$run" --steps "$steps" --set eval.every=0 --set log.every=5 --set log.sample_every=0 "$@"
}

# -- data
MANIFEST=${MANIFEST:-}
if [ -z "$MANIFEST" ]; then
  SEQ=0
  for c in $CONFIGS $RESHARD_CONFIG; do
    s=$($PY -c "import yaml,sys; print(yaml.safe_load(open('$c'))['data'].get('seq_len') or 0)")
    [ "$s" -gt "$SEQ" ] && SEQ=$s
  done
  DATA=$WORK/data-$SEQ
  timed data $PY bench/synthetic_manifest.py --out "$DATA" --vocab 32000 --tokens "$SYNTH_TOKENS" --seq-len "$SEQ"
  if [ "$RC" -ne 0 ]; then echo "error: no data" >&2; exit 1; fi
  MANIFEST=$DATA/manifests/synthetic.json
fi
PEAK=()
if [ -n "${PEAK_TFLOPS:-}" ]; then PEAK=(--set "log.peak_tflops=$PEAK_TFLOPS"); fi

# -- 1. throughput
for CONFIG in $CONFIGS; do
 for VARIANT in $VARIANTS; do
  vname=${VARIANT%%:*}
  VSETS=()
  IFS=, read -r -a vkeys <<< "${VARIANT#*:}"
  for kv in "${vkeys[@]}"; do VSETS+=(--set "$kv"); done
  name=$(basename "$CONFIG" .yaml)-$vname
  mb=$($PY -c "import yaml; print(yaml.safe_load(open('$CONFIG'))['train']['micro_batch_size'])")
  G=$(( GLOBAL_BATCH > mb * NGPU ? GLOBAL_BATCH / (mb * NGPU) * mb * NGPU : mb * NGPU ))
  train "throughput-$name" "$OUT/runs/throughput-$name" "$NGPU" "$STEPS" --config "$CONFIG" \
    --set parallel.tp=1 --set parallel.pp=1 --set parallel.dp="$NGPU" --set train.precision=$PRECISION \
    --set train.global_batch_size=$G --set checkpoint.every=0 --set checkpoint.keep=1 "${PEAK[@]}" "${VSETS[@]}"
  if [ "$RC" -eq 0 ]; then
    EST=$($PY -m train.estimate --config "$CONFIG" --gpu-mem 141 --dp "$NGPU" --zero 1 --json \
          | $PY -c 'import json, sys; print(round(json.load(sys.stdin)["training_gb"]["total"] / 1.073741824, 1))' \
          || echo "-")
    read -r TPS MFU NCOUNT PEAK_GIB COMPILE_S < <($PY - "$OUT/runs/throughput-$name" <<'PY'
import json, statistics, sys
every = [json.loads(l) for l in open(f"{sys.argv[1]}/metrics.jsonl") if '"kind": "train"' in l]
rows = every[5:]
tps = statistics.median(r["tokens_per_s"] for r in rows) if rows else 0
mfu = [r["mfu"] for r in rows if r.get("mfu") is not None]
peak = max((r["peak_mem_gib"] for r in every if r.get("peak_mem_gib")), default=None)
comp = max((r["compile_s"] for r in every if r.get("compile_s")), default=None)
print(round(tps), round(statistics.median(mfu), 4) if mfu else "-", len(rows),
      "-" if peak is None else round(peak, 1), "-" if comp is None else round(comp, 1))
PY
)
    row what "throughput" config "$name" precision $PRECISION layout "tp1 pp1 dp$NGPU" global_batch "$G" \
      steps_counted "$NCOUNT" tokens_per_s "$TPS" tokens_per_s_per_gpu "$(( TPS / NGPU ))" mfu "$MFU" \
      peak_gib "$PEAK_GIB" estimate_gib "$EST" compile_s "$COMPILE_S" wall_s "$WALL" status ok
  else
    row what "throughput" config "$name" precision $PRECISION layout "tp1 pp1 dp$NGPU" wall_s "$WALL" status "failed ($RC)"
  fi
 done
done

# -- 2. a resharded resume
if [ "$NGPU" -ge 2 ] && [ $(( NGPU % 2 )) -eq 0 ]; then
  FROM=(--set parallel.tp=1 --set parallel.dp="$NGPU" --set train.zero_stage=1); FROM_TXT="tp1 pp1 dp$NGPU zero1"
  TO=(--set parallel.tp=2 --set parallel.dp=$(( NGPU / 2 )) --set train.zero_stage=1); TO_TXT="tp2 pp1 dp$(( NGPU / 2 )) zero1"
else
  FROM=(--set parallel.tp=1 --set parallel.dp="$NGPU" --set train.zero_stage=1); FROM_TXT="tp1 pp1 dp$NGPU zero1"
  TO=(--set parallel.tp=1 --set parallel.dp="$NGPU" --set train.zero_stage=0); TO_TXT="tp1 pp1 dp$NGPU zero0"
fi
rmb=$($PY -c "import yaml; print(yaml.safe_load(open('$RESHARD_CONFIG'))['train']['micro_batch_size'])")
RG=$(( rmb * NGPU * 2 ))
# The resume runs with the new options on (RESHARD_SETS: intra-document attention; the flex kernel on a GPU).
RSETS=()
IFS=, read -r -a rkeys <<< "${RESHARD_SETS-model.document_masking=true}"
for kv in "${rkeys[@]}"; do RSETS+=(--set "$kv"); done
COMMON=("${RSETS[@]}" --config "$RESHARD_CONFIG" --set parallel.pp=1 --set train.precision=fp32 --set optimizer.eps=1e-3
        --set data.seq_len="$RESHARD_SEQ" --set train.global_batch_size="$RG" --set train.steps=$(( RESHARD_STEPS + 5 ))
        --set schedule.warmup_steps=2 --set checkpoint.every=$RESHARD_STEPS --set checkpoint.keep=0)
R=$OUT/runs/reshard
RESHARD_STATUS="failed"
DIFF="-"
T0=$(date +%s)
train reshard-a "$R-same" "$NGPU" "$RESHARD_STEPS" "${COMMON[@]}" "${FROM[@]}"
if [ "$RC" -eq 0 ]; then
  cp -r "$R-same" "$R-new"
  train reshard-same "$R-same" "$NGPU" $(( RESHARD_STEPS + 5 )) "${COMMON[@]}" "${FROM[@]}"
  RC_SAME=$RC
  nproc_to=$NGPU
  train reshard-new "$R-new" "$nproc_to" $(( RESHARD_STEPS + 5 )) "${COMMON[@]}" "${TO[@]}"
  if [ "$RC_SAME" -eq 0 ] && [ "$RC" -eq 0 ]; then
    if ! grep -q "in a new layout" "$OUT/reshard-new.log"; then
      echo "   reshard-new: the resumed run did not report a layout change"; FAILED=1
    else
      DIFF=$($PY - "$R-same" "$R-new" "$RESHARD_STEPS" <<'PY'
import json, sys
def rows(run):
    return {r["step"]: r for r in map(json.loads, open(f"{run}/metrics.jsonl")) if r.get("kind") == "train"}
a, b, k = rows(sys.argv[1]), rows(sys.argv[2]), int(sys.argv[3])
steps = [s for s in a if s > k]
assert steps and all(s in b for s in steps), (sorted(a), sorted(b))
print(f"{max(abs(b[s]['loss'] - a[s]['loss']) / abs(a[s]['loss']) for s in steps):.2e}")
PY
)
      if $PY -c "import sys; sys.exit(0 if float('$DIFF') <= 1e-4 else 1)"; then RESHARD_STATUS=ok; else
        RESHARD_STATUS="MISMATCH"; FAILED=1; fi
    fi
  fi
fi
row what "resharded resume" config "$(basename "$RESHARD_CONFIG" .yaml)" precision fp32 \
  layout "$FROM_TXT -> $TO_TXT at step $RESHARD_STEPS" global_batch "$RG" \
  max_rel_loss_diff "$DIFF" wall_s "$(( $(date +%s) - T0 ))" status "$RESHARD_STATUS"

# -- summary
$PY - "$ROWS" "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cols = [("what", "what"), ("config", "config"), ("precision", "prec"), ("layout", "layout"),
        ("global_batch", "batch"), ("tokens_per_s", "tokens/s"), ("tokens_per_s_per_gpu", "tokens/s/GPU"),
        ("mfu", "MFU"), ("peak_gib", "peak GiB"), ("estimate_gib", "estimate GiB"), ("compile_s", "compile s"),
        ("max_rel_loss_diff", "max rel loss diff"), ("wall_s", "wall s"), ("status", "status")]
cols = [(k, h) for k, h in cols if any(k in r for r in rows)]
table = [[h for _, h in cols]] + [[str(r.get(k, "")) for k, _ in cols] for r in rows]
width = [max(len(x[i]) for x in table) for i in range(len(cols))]
text = "\n".join("  ".join(c.ljust(w) for c, w in zip(line, width)) for line in table)
open(f"{sys.argv[2]}/summary.txt", "w").write(text + "\n")
json.dump(rows, open(f"{sys.argv[2]}/summary.json", "w"), indent=1)
print("\n== summary (" + sys.argv[2] + "/summary.txt)\n" + text)
PY
exit $FAILED
