#!/usr/bin/env bash
# The planets comparison at a larger scale on one GPU: data, MSE and GMM heads trained side by side
# (identical settings, same seed), then evaluated. Writes logs and reports under ${OUT:-out/gmm_gpu}.
set -euo pipefail
OUT=${OUT:-out/gmm_gpu}
STEPS=${STEPS:-3000}
mkdir -p "$OUT"
[ -f data/planets/xval/test.ids.npy ] || {
    python prepare/planets.py --size small --out data/planets --workers "$(nproc)" > /dev/null 2>&1
    python tokenize_numbers.py data/planets --encoding xval --workers "$(nproc)" > /dev/null
}
for head in mse gmm; do
    python train.py config/planets_small.py --data_dir=data/planets --out_dir="out/gpu_planets_$head" --num_head=$head \
        --n_layer=6 --n_head=6 --n_embd=384 --block_size=1024 --batch_size=64 --micro_batch_size=64 \
        --learning_rate=5e-4 --min_lr=5e-5 --warmup_iters=200 --max_iters="$STEPS" --eval_interval=1000 \
        --eval_batches=10 --log_interval=100 --seed=1 > "$OUT/train_$head.txt" 2>&1 &
done
wait
for head in mse gmm; do
    python eval.py --ckpt="out/gpu_planets_$head/ckpt_latest.pt" --max_samples=1000 --plots --save_predictions \
        --out="$OUT/planets_$head/eval" > "$OUT/eval_$head.txt" 2>&1
    cp "out/gpu_planets_$head/log.jsonl" "$OUT/planets_$head/log.jsonl"
done
