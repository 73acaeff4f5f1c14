#!/usr/bin/env bash
# The paper's four tasks × five encodings at a reduced scale that fits a 2-core CPU: prepare the
# data, train every model, evaluate, and write the tables and figures of dev/results/.
#
#   ./dev/reproduce.sh                 # the tables (about 1.5 hours on 2 CPU cores)
#   ./dev/reproduce.sh data train      # some stages only: data, train, eval
#   ./dev/reproduce.sh curves          # the learning curves, the one-entry look-up and the Gaussian-mixture
#                                  # head (about 6 hours on 2 CPU cores; each script skips what it has done)
#   ./dev/reproduce.sh claims          # the longer trainings behind claims 3, 6 and 9 (dev/claims_cpu.sh:
#                                  # planets xVal and B1999 to 9,000 steps, arithmetic to 3,000 and the
#                                  # multi-operand table (5,000 steps), multiplication again to 6,000 and
#                                  # 12,000, temperature xVal to 32,000 and FP15 to 16,000; about 11 hours
#                                  # on 2 CPU cores, resumable)
#   LANES=1 ./dev/reproduce.sh         # one training at a time (default 2, one thread each)
#
# The scale (stated in dev/README.md): 40k training samples per task; small models
# (config/<task>_small.py) trained for a few hundred to 1,500 steps; the same settings for all
# five encodings of a task. Temperature uses a synthetic ERA5-like field (prepare/era5_synthetic.py)
# and 10-19 stations per sample unless ERA5 files are given: ERA5="a.nc b.nc" LSM=lsm.nc.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${DATA:-data/repro}
OUT=${OUT:-out/repro}
RESULTS=${RESULTS:-dev/results}
LANES=${LANES:-2}
SEEDS=${SEEDS:-"1 2 3"}          # look-up: several seeds, combined as mean ± std and median prediction
ENCODINGS="xval fp15 b1999 p1000 p10"
STAGES=${*:-data train eval}
export OMP_NUM_THREADS=1         # each training gets one core; LANES of them run side by side

for stage in $STAGES; do
    case $stage in data|train|eval|curves|claims) ;; *) echo "error: unknown stage '$stage'; expected data, train, eval, curves or claims" >&2; exit 2 ;; esac
done
has() { [[ " $STAGES " == *" $1 "* ]]; }

if has data; then
    [ -f "$DATA/arithmetic_mult3/meta.json" ] || python prepare/arithmetic.py --variant mult3 --size small --out "$DATA/arithmetic_mult3"
    [ -f "$DATA/lookup/meta.json" ] || python prepare/lookup.py --size small --out "$DATA/lookup"
    [ -f "$DATA/planets/meta.json" ] || python prepare/planets.py --size small --out "$DATA/planets"
    if [ ! -f "$DATA/era5/meta.json" ]; then
        if [ -n "${ERA5:-}" ]; then
            python prepare/era5.py $ERA5 ${LSM:+--land-sea-mask $LSM} --size small --out "$DATA/era5"
        else
            [ -f "$DATA/era5_synthetic/t2m.nc" ] || python prepare/era5_synthetic.py --out "$DATA/era5_synthetic"
            python prepare/era5.py "$DATA/era5_synthetic/t2m.nc" --land-sea-mask "$DATA/era5_synthetic/lsm.nc" \
                --stations 10,19 --size small --out "$DATA/era5"
        fi
    fi
    for d in arithmetic_mult3 lookup planets era5; do
        python tokenize_numbers.py "$DATA/$d" --encoding all
    done
fi

# one line per model: name, config, data folder, steps, seed, encoding, other settings
SMALL="--n_layer=2 --n_head=2 --n_embd=64 --batch_size=8 --micro_batch_size=8 --warmup_iters=40"
jobs() {  # the first seed of every setting first, so that a partial run already covers every table
    for enc in $ENCODINGS; do echo "arithmetic_mult3_$enc config/arithmetic_small.py arithmetic_mult3 600 1 $enc"; done
    for enc in $ENCODINGS; do echo "lookup_${enc}_s1 config/lookup_small.py lookup 400 1 $enc"; done
    # long samples (P10: ~1,700 tokens): a 2-layer, 64-wide model keeps a step near a second
    for enc in $ENCODINGS; do echo "planets_$enc config/planets_small.py planets 300 1 $enc $SMALL"; done
    for enc in $ENCODINGS; do echo "era5_$enc config/era5_small.py era5 300 1 $enc $SMALL"; done
    for seed in $SEEDS; do
        [ "$seed" = 1 ] && continue
        for enc in $ENCODINGS; do echo "lookup_${enc}_s$seed config/lookup_small.py lookup 400 $seed $enc"; done
    done
    # some settings again, 4-10 times longer (the CPU time allowed no more): 300-400 steps teach
    # no encoding the look-up or temperature, and teach the text encodings no planets number
    echo "era5_long_xval config/era5_small.py era5 3000 1 xval $SMALL"
    for enc in xval p10; do echo "lookup_long_$enc config/lookup_small.py lookup 1500 1 $enc"; done
    for enc in xval p1000; do echo "planets_long_$enc config/planets_small.py planets 1500 1 $enc $SMALL"; done
}

train_one() {  # name config data steps seed encoding [settings...]
    local dir="$OUT/$1"
    [ -f "$dir/done" ] && return 0
    mkdir -p "$dir"
    exec 9> "$dir/lock"
    flock -n 9 || return 0  # another dev/reproduce.sh is training this one
    local t0=$SECONDS
    python train.py "$2" --data_dir="$DATA/$3" --out_dir="$dir" --max_iters="$4" --seed="$5" --encoding="$6" \
        --eval_interval="$4" --device=cpu --overwrite=True "${@:7}" > "$dir/train.txt" 2>&1 || { echo "FAILED: $1 (see $dir/train.txt)"; return 1; }
    echo $((SECONDS - t0)) > "$dir/wall_s"
    touch "$dir/done"
    echo "trained $1 in $((SECONDS - t0)) s"
}
export -f train_one
export DATA OUT

if has train; then
    jobs | xargs -P "$LANES" -L 1 bash -c 'train_one "$@"' _
fi

if has eval; then
    # long samples: the first 300 (planets: 5 passes × 3 splits) or 1,000 (temperature) samples of
    # each split, 8 to a batch; short ones: all 5,000
    evaluate() {  # setting, extra settings, checkpoints...
        local name=$1 extra=$2 ckpts=() c; shift 2
        [ -f "$RESULTS/$name/eval.json" ] && return 0
        for c in "$@"; do [ -f "$c" ] && ckpts+=("$c"); done
        [ ${#ckpts[@]} -gt 0 ] || { echo "skipped $name: not trained"; return 0; }
        mkdir -p "$RESULTS/$name"
        local t0=$SECONDS
        python eval.py --ckpt="${ckpts[*]}" --out="$RESULTS/$name/eval" --plots=True --device=cpu $extra > "$RESULTS/$name/eval.txt"
        echo "evaluated $name (${#ckpts[@]} checkpoint(s)) in $((SECONDS - t0)) s"
    }
    for enc in $ENCODINGS; do
        evaluate "arithmetic_mult3_$enc" "" "$OUT/arithmetic_mult3_$enc/ckpt_best.pt"
        evaluate "lookup_$enc" "" $(for s in $SEEDS; do echo "$OUT/lookup_${enc}_s$s/ckpt_best.pt"; done)
        evaluate "planets_$enc" "--max_samples=300 --batch_size=8" "$OUT/planets_$enc/ckpt_best.pt"
        evaluate "era5_$enc" "--max_samples=1000 --batch_size=8" "$OUT/era5_$enc/ckpt_best.pt"
    done
    evaluate "era5_long_xval" "--max_samples=1000 --batch_size=8" "$OUT/era5_long_xval/ckpt_best.pt"
    for enc in xval p10; do evaluate "lookup_long_$enc" "" "$OUT/lookup_long_$enc/ckpt_best.pt"; done
    for enc in xval p1000; do
        evaluate "planets_long_$enc" "--max_samples=300 --batch_size=8" "$OUT/planets_long_$enc/ckpt_best.pt"
    done
    python dev/summarize.py "$RESULTS" > /dev/null
    echo "tables: $RESULTS/summary.md"
fi

if has curves; then
    # every encoding's arithmetic curve and the one-entry look-up (five encodings, three seeds) side
    # by side, then the CPU recipes of planets, temperature and the look-up, two at a time
    # (dev/learning_curves.sh), then MSE head against GMM head
    bash dev/arithmetic_curves.sh & arithmetic=$!
    bash dev/lookup_e1.sh & lookup=$!
    wait $arithmetic; wait $lookup  # a failure in either stops the stage
    bash dev/learning_curves.sh
    bash dev/gmm.sh
fi

if has claims; then
    bash dev/claims_cpu.sh a b
    bash dev/claims_cpu.sh c d
    bash dev/claims_cpu.sh e g
    bash dev/claims_cpu.sh f h
fi
