#!/usr/bin/env bash
# The planets experiment of the Gaussian-mixture head: an xVal model with the MSE head and one with
# the GMM head, identical settings and seed, then eval.py on the first $SAMPLES samples of test and
# both OoD sets (and of val for the MSE head: its residual spread scores it as a distribution), and
# the side-by-side table. A finished training is not run again; an interrupted one resumes.
#
#   bash results/gmm/run.sh                       # CPU scale (the defaults below): ~15 min per model on one core
#   MODEL="--n_layer=6 --n_head=6 --n_embd=384" BATCH=64 STEPS=2500 LR=5e-4 bash results/gmm/run.sh   # one GPU
set -euo pipefail
OUT=${OUT:-results/gmm}
RUNS=${RUNS:-out/gmm}
STEPS=${STEPS:-2500}
BATCH=${BATCH:-8}
LR=${LR:-1e-3}
SAMPLES=${SAMPLES:-300}
MODEL=${MODEL:---n_layer=2 --n_head=2 --n_embd=64}
[ -f data/planets/xval/test.ids.npy ] || {
    python prepare/planets.py --size small --out data/planets > /dev/null
    python tokenize_numbers.py data/planets --encoding xval > /dev/null
}
for head in mse gmm; do
    run="$RUNS/planets_$head"
    grep -qs "\"iter\": $STEPS, \"val_loss\"" "$run/log.jsonl" && continue
    resume=$([ -f "$run/ckpt_latest.pt" ] && echo --resume || echo --overwrite=True)
    # shellcheck disable=SC2086
    python train.py config/planets_small.py --data_dir=data/planets --out_dir="$run" --num_head=$head $MODEL \
        --block_size=1024 --batch_size="$BATCH" --micro_batch_size="$BATCH" --learning_rate="$LR" \
        --min_lr="$(python -c "print($LR / 10)")" --warmup_iters=100 --max_iters="$STEPS" --eval_interval=500 \
        --eval_batches=10 --log_interval=50 --seed=1 "$resume" > "$run.txt"
done
for head in mse gmm; do
    mkdir -p "$OUT/planets_$head"
    cp "$RUNS/planets_$head/log.jsonl" "$OUT/planets_$head/"
    python eval.py --ckpt="$RUNS/planets_$head/ckpt_best.pt" --max_samples="$SAMPLES" --plots --save_predictions=True \
        --out="$OUT/planets_$head/eval" > "$OUT/planets_$head/eval.txt"
done
python eval.py --ckpt="$RUNS/planets_mse/ckpt_best.pt" --splits=val --max_samples="$SAMPLES" --save_predictions=True \
    --out="$OUT/planets_mse/eval_val" > /dev/null
python results/gmm/table.py "$OUT/planets_mse/eval_val.json" "$OUT/planets_mse/eval.json" \
    "$OUT/planets_gmm/eval.json" > "$OUT/table.md"
cat "$OUT/table.md"
