#!/usr/bin/env bash
# The Gaussian-mixture head against the MSE head: two xVal models per task, identical settings and
# seed except --num_head, then eval.py (with predictions) on the first $SAMPLES samples of every
# split (and of val for the MSE head: its residual spread scores it as a distribution), and the
# side-by-side table (dev/gmm_table.py). Two tasks: planets, where m0 is uncertain, and 3-digit
# multiplication, where the MSE head already works. A finished training is not run again, an
# interrupted one resumes, and a report newer than its checkpoint is kept.
#
#   bash dev/gmm.sh                       # CPU scale (the defaults below): ~15 min per planets model on one core
#   MODEL="--n_layer=6 --n_head=6 --n_embd=384" BATCH=64 STEPS=2500 LR=5e-4 bash dev/gmm.sh   # one GPU (planets)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-dev/results/gmm}
RUNS=${RUNS:-out/gmm}
STEPS=${STEPS:-2500}
BATCH=${BATCH:-8}
LR=${LR:-1e-3}
SAMPLES=${SAMPLES:-300}
MODEL=${MODEL:---n_layer=2 --n_head=2 --n_embd=64}
ARITH_STEPS=${ARITH_STEPS:-1000}
mkdir -p "$RUNS"
. dev/trained.sh

prepared() {  # prepared NAME PREPARE_ARGS...: the small dataset data/NAME, xVal-tokenized
    local name=$1; shift
    [ -f "data/$name/xval/test.ids.npy" ] && return
    python "$@" --size small --out "data/$name" > /dev/null
    python tokenize_numbers.py "data/$name" --encoding xval > /dev/null
}

compare() {  # compare NAME STEPS TRAIN_ARGS...: train both heads, evaluate them, write $OUT/NAME_table.md
    local name=$1 steps=$2; shift 2
    for head in mse gmm; do
        trained "$RUNS/${name}_$head" "$steps" "$@" --num_head=$head --max_iters="$steps" --seed=1
    done
    for head in mse gmm; do
        local run="$RUNS/${name}_$head" dir="$OUT/${name}_$head"
        mkdir -p "$dir"
        [ "$dir/eval.json" -nt "$run/ckpt_best.pt" ] || python eval.py --ckpt="$run/ckpt_best.pt" \
            --max_samples="$SAMPLES" --plots --save_predictions=True --out="$dir/eval" > "$dir/eval.txt"
    done
    [ "$OUT/${name}_mse/eval_val.json" -nt "$RUNS/${name}_mse/ckpt_best.pt" ] || python eval.py --splits=val \
        --ckpt="$RUNS/${name}_mse/ckpt_best.pt" --max_samples="$SAMPLES" --save_predictions=True \
        --out="$OUT/${name}_mse/eval_val" > /dev/null
    python dev/gmm_table.py "$OUT/${name}_mse/eval_val.json" "$OUT/${name}_mse/eval.json" \
        "$OUT/${name}_gmm/eval.json" > "$OUT/${name}_table.md"
    cat "$OUT/${name}_table.md"
}

prepared planets prepare/planets.py
# shellcheck disable=SC2086
compare planets "$STEPS" config/planets_small.py --data_dir=data/planets $MODEL --block_size=1024 \
    --batch_size="$BATCH" --micro_batch_size="$BATCH" --learning_rate="$LR" --min_lr="$(python -c "print($LR / 10)")" \
    --warmup_iters=100 --eval_interval=500 --eval_batches=10 --log_interval=50

prepared arithmetic_mult3 prepare/arithmetic.py --variant mult3
compare mult3 "$ARITH_STEPS" config/arithmetic_small.py --data_dir=data/arithmetic_mult3 --eval_interval=250 \
    --log_interval=100
