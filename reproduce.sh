#!/usr/bin/env bash
# The paper's four tasks × five encodings at a reduced scale that fits a 2-core CPU: prepare the
# data, train every model, evaluate, and write the tables and figures of results/.
#
#   ./reproduce.sh                 # everything (about 1.5 hours on 2 CPU cores)
#   ./reproduce.sh data train      # some stages only: data, train, eval
#   LANES=1 ./reproduce.sh         # one training at a time (default 2, one thread each)
#
# The scale (stated in results/README.md): 40k training samples per task; small models
# (config/<task>_small.py) trained for a few hundred to 1,500 steps; the same settings for all
# five encodings of a task. Temperature uses a synthetic ERA5-like field (prepare/era5_synthetic.py)
# and 10-19 stations per sample unless ERA5 files are given: ERA5="a.nc b.nc" LSM=lsm.nc.
set -euo pipefail
cd "$(dirname "$0")"

DATA=${DATA:-data/repro}
OUT=${OUT:-out/repro}
RESULTS=${RESULTS:-results}
LANES=${LANES:-2}
SEEDS=${SEEDS:-"1 2 3"}          # look-up: several seeds, combined as mean ± std and median prediction
ENCODINGS="xval fp15 b1999 p1000 p10"
STAGES=${*:-data train eval}
export OMP_NUM_THREADS=1         # each training gets one core; LANES of them run side by side

has() { [[ " $STAGES " == *" $1 "* ]]; }

if has data; then
    for variant in mult3 ops3; do
        [ -f "$DATA/arithmetic_$variant/meta.json" ] || python prepare/arithmetic.py --variant $variant --size small --out "$DATA/arithmetic_$variant"
    done
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
    for d in arithmetic_mult3 arithmetic_ops3 lookup planets era5; do
        python tokenize_numbers.py "$DATA/$d" --encoding all
    done
fi

# one line per model: name, config, data folder, steps, seed
jobs() {
    for enc in $ENCODINGS; do
        for variant in mult3 ops3; do
            echo "arithmetic_${variant}_$enc config/arithmetic_small.py arithmetic_$variant 1000 1 $enc"
        done
    done
    for enc in $ENCODINGS; do
        for seed in $SEEDS; do
            echo "lookup_${enc}_s$seed config/lookup_small.py lookup 1500 $seed $enc"
        done
    done
    for enc in $ENCODINGS; do echo "planets_$enc config/planets_small.py planets 300 1 $enc"; done
    for enc in $ENCODINGS; do echo "era5_$enc config/era5_small.py era5 300 1 $enc"; done
}

train_one() {  # name config data steps seed encoding
    local dir="$OUT/$1"
    [ -f "$dir/done" ] && return 0
    mkdir -p "$dir"
    local t0=$SECONDS
    python train.py "$2" --data_dir="$DATA/$3" --out_dir="$dir" --max_iters="$4" --seed="$5" --encoding="$6" \
        --eval_interval="$4" --device=cpu > "$dir/train.txt" 2>&1 || { echo "FAILED: $1 (see $dir/train.txt)"; return 1; }
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
    python eval.py --reproduce --data_root="$DATA" --runs="$OUT" --results="$RESULTS"
fi
