#!/usr/bin/env bash
# The planets comparison at a larger scale on one GPU: data, MSE and GMM heads trained side by side
# (identical settings, same seed), then evaluated on the first 1,000 samples of each split (and
# of val for the MSE head, whose residual spread results/gmm/table.py needs). Writes logs and
# reports under ${OUT:-out/gmm_gpu}; a model whose training finished is not trained again.
set -euo pipefail
OUT=${OUT:-out/gmm_gpu}
STEPS=${STEPS:-2500}
mkdir -p "$OUT"
[ -f data/planets/xval/test.ids.npy ] || {
    python prepare/planets.py --size small --out data/planets --workers "$(nproc)" > /dev/null 2>&1
    python tokenize_numbers.py data/planets --encoding xval --workers "$(nproc)" > /dev/null
}
for head in mse gmm; do
    grep -qs "\"iter\": $STEPS, \"val_loss\"" "out/gpu_planets_$head/log.jsonl" && continue
    python train.py config/planets_small.py --data_dir=data/planets --out_dir="out/gpu_planets_$head" --num_head=$head \
        --n_layer=6 --n_head=6 --n_embd=384 --block_size=1024 --batch_size=64 --micro_batch_size=64 \
        --learning_rate=5e-4 --min_lr=5e-5 --warmup_iters=200 --max_iters="$STEPS" --eval_interval=500 \
        --eval_batches=10 --log_interval=100 --seed=1 > "out/gpu_planets_$head.txt" 2>&1 &
done
wait
for head in mse gmm; do
    mkdir -p "$OUT/planets_$head"
    cp "out/gpu_planets_$head.txt" "out/gpu_planets_$head/log.jsonl" "$OUT/planets_$head/" 2>/dev/null || true
    python eval.py --ckpt="out/gpu_planets_$head/ckpt_latest.pt" --max_samples=1000 --plots --save_predictions=True \
        --out="$OUT/planets_$head/eval" > "$OUT/planets_$head/eval.txt" 2>&1
done
python eval.py --ckpt=out/gpu_planets_mse/ckpt_latest.pt --splits=val --max_samples=1000 --save_predictions=True \
    --out="$OUT/planets_mse/eval_val" > /dev/null
