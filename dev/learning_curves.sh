#!/usr/bin/env bash
# The CPU recipes behind the learning criteria of dev/README.md, one training per core:
# planets (dev/config/planets_cpu.py), temperature with 10-19 and with 5-9 stations
# (dev/config/era5_cpu.py, dev/config/era5_cpu_s5.py), the 4-layer look-up on the paper-size data
# (dev/config/lookup_cpu.py --n_layer=4) and the look-up with 2-3 entries (dev/config/lookup_cpu_e23.py),
# each followed by its learning curve (tools/curves.py on every kept checkpoint) and eval.py on its last
# checkpoint. A finished training is not run again, an interrupted one resumes; curves.py reuses
# the reports kept by the checkpoints.
#
#   bash dev/learning_curves.sh        # ~3 hours on 2 CPU cores, in three pairs of about an hour
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
. dev/trained.sh

data() {
    [ -f data/planets/xval/test.ids.npy ] || { python prepare/planets.py --size small --out data/planets \
        && python tokenize_numbers.py data/planets --encoding xval; } > /dev/null
    if [ ! -f data/era5/xval/test.ids.npy ]; then
        [ -f data/era5_synthetic/t2m.nc ] || python prepare/era5_synthetic.py --out data/era5_synthetic
        python prepare/era5.py data/era5_synthetic/t2m.nc --land-sea-mask data/era5_synthetic/lsm.nc \
            --stations 10,19 --size small --out data/era5
        python tokenize_numbers.py data/era5 --encoding xval
    fi > /dev/null 2>&1
    [ -f data/era5_s5/xval/test.ids.npy ] || { python prepare/era5.py data/era5_synthetic/t2m.nc \
        --land-sea-mask data/era5_synthetic/lsm.nc --stations 5,9 --size small --out data/era5_s5 \
        && python tokenize_numbers.py data/era5_s5 --encoding xval; } > /dev/null 2>&1
    [ -f data/lookup_paper/xval/test.ids.npy ] || { python prepare/lookup.py --size paper --out data/lookup_paper \
        && python tokenize_numbers.py data/lookup_paper --encoding xval; } > /dev/null 2>&1
    [ -f data/lookup_e23/xval/test.ids.npy ] || { python prepare/lookup.py --size paper --entries 2,3 --out data/lookup_e23 \
        && python tokenize_numbers.py data/lookup_e23 --encoding xval; } > /dev/null 2>&1
}

scored() {  # scored RUN STEPS CURVE_SAMPLES EVAL_SAMPLES OUT QUANTITY...: curves of each quantity, eval.py of the last checkpoint
    local run=$1 steps=$2 samples=$3 eval_samples=$4 out=$5; shift 5
    mkdir -p "$out"
    for q in "$@"; do
        python tools/curves.py --runs="$run" --quantity="$q" --max_samples="$samples" --out="$out/curves_${q//+/}" > /dev/null
    done
    python eval.py --ckpt="$run/ckpt_$steps.pt" --max_samples="$eval_samples" --save_predictions=True --plots=True \
        --out="$out/$(basename "$run")" > /dev/null
}

data
{ trained out/planets_cpu/xval 9000 dev/config/planets_cpu.py && scored out/planets_cpu/xval 9000 300 300 dev/results/planets_cpu a0 dt; } & a=$!
{ trained out/era5_cpu/xval 8000 dev/config/era5_cpu.py && scored out/era5_cpu/xval 8000 300 1000 dev/results/era5_cpu t+1; } & b=$!
wait $a; wait $b  # a failure in either stops the script
{ trained out/era5_cpu_s5/xval 16000 dev/config/era5_cpu_s5.py && scored out/era5_cpu_s5/xval 16000 300 1000 dev/results/era5_cpu_s5 t+1; } & a=$!
{ trained out/lookup_cpu_e23/xval 30000 dev/config/lookup_cpu_e23.py \
    && python tools/curves.py --runs=out/lookup_cpu_e23/xval --quantity=answer --max_samples=3000 --out=dev/results/lookup_cpu/curves_e23 > /dev/null \
    && python eval.py --ckpt=out/lookup_cpu_e23/xval/ckpt_30000.pt --max_samples=10000 --save_predictions=True --plots=True \
        --out=dev/results/lookup_cpu/xval_e23 > /dev/null; } & b=$!
wait $a; wait $b
trained out/lookup_cpu/xval_4x4 14000 dev/config/lookup_cpu.py --n_layer=4 --max_iters=14000
scored out/lookup_cpu/xval_4x4 14000 3000 10000 dev/results/lookup_cpu answer
echo "results: dev/results/planets_cpu, dev/results/era5_cpu, dev/results/era5_cpu_s5, dev/results/lookup_cpu"
