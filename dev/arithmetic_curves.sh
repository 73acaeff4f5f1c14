#!/usr/bin/env bash
# Learning curves of 3-digit multiplication (0.123*0.456=0.056088) for the five encodings: the same
# model and settings for each (config/arithmetic_small.py: 4 layers × 128, batch 128), a checkpoint
# kept every $KEEP steps, each scored by eval.py on the first $SAMPLES test samples (tools/curves.py).
# A finished training is not run again, an interrupted one resumes; curves.py reuses the report
# kept beside each checkpoint.
#
#   bash dev/arithmetic_curves.sh          # ~50 min on one CPU core
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-dev/results/arithmetic_curves}
RUNS=${RUNS:-out/arithmetic_curves}
STEPS=${STEPS:-1000}
KEEP=${KEEP:-250}
SAMPLES=${SAMPLES:-1000}
ENCODINGS=${ENCODINGS:-xval p10 p1000 b1999 fp15}
DATA=data/arithmetic_mult3
mkdir -p "$RUNS"
. dev/trained.sh
[ -f "$DATA/meta.json" ] || python prepare/arithmetic.py --variant mult3 --size small --out "$DATA" > /dev/null
for enc in $ENCODINGS; do
    [ -f "$DATA/$enc/test.ids.npy" ] || python tokenize_numbers.py "$DATA" --encoding "$enc" > /dev/null
done
runs=""
for enc in $ENCODINGS; do
    run="$RUNS/$enc"
    runs="$runs $run"
    trained "$run" "$STEPS" config/arithmetic_small.py --data_dir="$DATA" --encoding="$enc" \
        --max_iters="$STEPS" --eval_interval="$KEEP" --keep_every="$KEEP" --log_interval=100 --seed=1
done
mkdir -p "$OUT"
python tools/curves.py --runs="${runs# }" --quantity=answer --max_samples="$SAMPLES" --out="$OUT/curves"
