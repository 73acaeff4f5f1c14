#!/usr/bin/env bash
# The one-entry look-up ({d:1.53}d=1.53) for the five encodings, three seeds each, with the same
# model and settings (dev/config/lookup_cpu_e1.py); then the learning curve of seed 1 on test and on
# test_ood (tools/curves.py, every kept checkpoint), and eval.py of the three seeds' last checkpoints
# together (mean ± std over seeds) on test and test_ood, with the predicted-vs-true figures.
# A finished training is not run again, an interrupted one resumes.
#
#   bash dev/lookup_e1.sh          # ~1 hour on one CPU core
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-dev/results/lookup_e1}
RUNS=${RUNS:-out/lookup_e1}
STEPS=${STEPS:-3000}
SAMPLES=${SAMPLES:-3000}
SEEDS=${SEEDS:-1 2 3}
ENCODINGS=${ENCODINGS:-xval p10 p1000 b1999 fp15}
DATA=data/lookup_e1
. dev/trained.sh
[ -f "$DATA/meta.json" ] || python prepare/lookup.py --size paper --entries 1,1 --out "$DATA" > /dev/null 2>&1
for enc in $ENCODINGS; do
    [ -f "$DATA/$enc/test.ids.npy" ] || python tokenize_numbers.py "$DATA" --encoding "$enc" > /dev/null
done
mkdir -p "$RUNS" "$OUT"
for seed in $SEEDS; do
    for enc in $ENCODINGS; do
        trained "$RUNS/${enc}_s$seed" "$STEPS" dev/config/lookup_cpu_e1.py --encoding="$enc" --seed="$seed"
    done
done
first=""
for enc in $ENCODINGS; do first="$first $RUNS/${enc}_s${SEEDS%% *}"; done
for split in test test_ood; do
    python tools/curves.py --runs="${first# }" --quantity=answer --split="$split" --max_samples="$SAMPLES" \
        --out="$OUT/curves_$split" > /dev/null
done
for enc in $ENCODINGS; do
    ckpts=""
    for seed in $SEEDS; do ckpts="$ckpts $RUNS/${enc}_s$seed/ckpt_$STEPS.pt"; done
    python eval.py --ckpt="${ckpts# }" --max_samples="$SAMPLES" --save_predictions=True --plots=True \
        --out="$OUT/$enc" > /dev/null
done
echo "results: $OUT"
