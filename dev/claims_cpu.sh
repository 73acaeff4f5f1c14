#!/usr/bin/env bash
# The CPU trainings behind the claims of dev/README.md that longer runs can settle, two lanes
# side by side, one thread each. A finished training is skipped and an interrupted one resumes
# (dev/trained.sh), so the script can be stopped and run again over several sittings.
#   lane a: planets, B1999 on dev/config/planets_cpu.py for xVal's 9,000 steps (claim 6: do text
#           encodings predict step sizes they never saw?), xVal on the same recipe, both scored on
#           the OoD step sizes and drawn side by side (dev/results/planets_cpu/dt_ood.{md,png})
#   lane b: 3-digit multiplication, five encodings to 3,000 steps (claim 3)
#           (dev/results/arithmetic_curves/curves_3000.{md,png})
#   lane c: temperature with 5-9 stations, xVal on a 32,000-step schedule (dev/config/era5_cpu_s5.py has
#           16,000, where the curve is flat at 1.2× persistence as the learning rate ends): does it
#           pass persistence with more steps? (claim 9)
#   lane d: FP15 on the same recipe to 16,000 steps; after lanes c or d, the finished ones side by
#           side, each beside persistence (dev/results/era5_cpu_s5/curves_t1_long.{md,png}, persistence_long.md)
#   lanes e and g: the multi-operand trees (the paper's second table) on the config's own 5,000-step
#           schedule, five encodings, 2 and 3 operands (e) and 4 (g); after either, R² per encoding and
#           operand count of what has finished (dev/results/arithmetic_curves/curves_ops{2,3,4}_5k.{md,png},
#           ops_table_5k.md)
#   lane f: 3-digit multiplication on a 6,000-step schedule for the encodings whose 3,000-step curves were
#           still falling at the end (xVal, FP15, B1999, P1000; P10's error rises from step 1,500 on):
#           where do they flatten, and in which order? (dev/results/arithmetic_curves/curves_6000.{md,png})
#   lane h: the same four on a 12,000-step schedule: do the curves flatten when the schedule doubles again,
#           and does the order settle? (dev/results/arithmetic_curves/curves_12000.{md,png})
#
#   bash dev/claims_cpu.sh          # lanes a and b: ~2.5 h and ~1 h of one core on an idle machine
#   bash dev/claims_cpu.sh c d      # lanes c and d: ~2 h of one core each
#   bash dev/claims_cpu.sh e g      # lanes e and g: ~2.5 h and ~1.5 h of one core
#   bash dev/claims_cpu.sh f h      # lanes f and h: ~1.5 h and ~3 h of one core
#   bash dev/claims_cpu.sh a        # one lane
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
. dev/trained.sh
LANES=${*:-a b}
ENCODINGS="xval p10 p1000 b1999 fp15"

tokenized() {  # DATA ENCODING...: tokenize what is not there yet
    local data=$1 enc; shift
    for enc in "$@"; do [ -f "$data/$enc/test.ids.npy" ] || python tokenize_numbers.py "$data" --encoding "$enc" > /dev/null; done
}

lane_a() {
    [ -f data/planets/meta.json ] || python prepare/planets.py --size small --out data/planets > /dev/null
    tokenized data/planets xval b1999
    local enc
    for enc in b1999 xval; do
        trained out/planets_cpu/$enc 9000 dev/config/planets_cpu.py --encoding=$enc
        python eval.py --ckpt=out/planets_cpu/$enc/ckpt_9000.pt --max_samples=300 --save_predictions=True \
            --out=out/planets_cpu/$enc/eval_9000 > /dev/null
    done
    python dev/planets_dt_ood.py --reports="out/planets_cpu/xval/eval_9000.json out/planets_cpu/b1999/eval_9000.json" \
        --out=dev/results/planets_cpu/dt_ood > /dev/null
}

ops_runs() {  # VARIANT: the multi-operand trees for every encoding on the config's 5,000-step schedule (a
    # checkpoint every 1,000 steps), their learning curves, and the paper's table: R² of the last checkpoint on
    # 1,000 test samples (eval.py reports under out/arith/ops_eval_5k, which dev/summarize.py reads)
    local v=$1 d=data/arithmetic_$1 enc runs=""
    [ -f $d/meta.json ] || python prepare/arithmetic.py --variant $v --size small --out $d > /dev/null
    tokenized $d $ENCODINGS
    for enc in $ENCODINGS; do
        trained out/arith/${v}_5k_$enc 5000 dev/config/arithmetic_ops_small.py --data_dir=$d --encoding=$enc \
            --max_iters=5000 --eval_interval=1000 --keep_every=1000 --log_interval=100 --seed=1
        runs+="out/arith/${v}_5k_$enc "
    done
    python tools/curves.py --runs="$runs" --quantity=answer --max_samples=1000 \
        --out=dev/results/arithmetic_curves/curves_${v}_5k > /dev/null
    for enc in $ENCODINGS; do
        python eval.py --ckpt=out/arith/${v}_5k_$enc/ckpt_5000.pt --max_samples=1000 --save_predictions=True \
            --out=out/arith/ops_eval_5k/${v}_$enc/eval > /dev/null
    done
}

mult3_runs() {  # STEPS EVERY RUN_SUFFIX ENCODING...: 3-digit multiplication on a STEPS-step schedule and its curves
    local steps=$1 every=$2 suffix=$3 d=data/arithmetic_mult3 enc runs=""; shift 3
    [ -f $d/meta.json ] || python prepare/arithmetic.py --variant mult3 --size small --out $d > /dev/null
    tokenized $d "$@"
    for enc in "$@"; do
        trained out/arith/mult3${suffix}_$enc $steps config/arithmetic_small.py --data_dir=$d --encoding=$enc \
            --max_iters=$steps --eval_interval=$every --keep_every=$every --log_interval=100 --seed=1
        runs+="out/arith/mult3${suffix}_$enc "
    done
    python tools/curves.py --runs="$runs" --quantity=answer --max_samples=1000 \
        --out=dev/results/arithmetic_curves/curves_$steps > /dev/null
}

lane_b() {
    mult3_runs 3000 500 "" $ENCODINGS
}

era5_s5() {  # the 5-9 station temperature data in xVal and FP15
    [ -f data/era5_synthetic/t2m.nc ] || python prepare/era5_synthetic.py --out data/era5_synthetic > /dev/null
    [ -f data/era5_s5/meta.json ] || python prepare/era5.py data/era5_synthetic/t2m.nc --land-sea-mask \
        data/era5_synthetic/lsm.nc --stations 5,9 --size small --out data/era5_s5 > /dev/null
    tokenized data/era5_s5 xval fp15
}

lane_c() {
    trained out/era5_cpu_s5/xval_32k 32000 dev/config/era5_cpu_s5.py --max_iters=32000 --keep_every=2000
}

lane_d() {
    trained out/era5_cpu_s5/fp15 16000 dev/config/era5_cpu_s5.py --encoding=fp15 --keep_every=2000
}

lane_e() {
    ops_runs ops2
    ops_runs ops3
}

lane_g() {
    ops_runs ops4
}

ops_table_5k() {  # the 5,000-step trees that have finished, R² per encoding and operand count
    python dev/summarize.py out/arith/ops_eval_5k > /dev/null
    cp out/arith/ops_eval_5k/summary.md dev/results/arithmetic_curves/ops_table_5k.md
}

lane_f() {
    mult3_runs 6000 1000 _6k xval fp15 b1999 p1000
}

lane_h() {
    mult3_runs 12000 2000 _12k xval fp15 b1999 p1000
}

temperature_report() {  # the finished temperature runs side by side: curves, and each beside persistence
    local runs="" reports="" run steps
    for run in xval_32k:32000 fp15:16000; do
        steps=${run#*:} run=out/era5_cpu_s5/${run%:*}
        grep -qs "\"iter\": $steps, \"val_loss\"" $run/log.jsonl || continue
        python eval.py --ckpt=$run/ckpt_$steps.pt --max_samples=1000 --save_predictions=True --out=$run/eval > /dev/null
        runs+="$run " reports+="$run/eval.json "
    done
    [ -n "$runs" ] || return 0
    python tools/curves.py --runs="$runs" --quantity=t+1 --max_samples=300 --out=dev/results/era5_cpu_s5/curves_t1_long > /dev/null
    python dev/era5_persistence.py --reports="$reports" > dev/results/era5_cpu_s5/persistence_long.md
}

case " $LANES " in *" c "*|*" d "*) era5_s5 ;; esac
pids=()
for lane in $LANES; do
    case $lane in a|b|c|d|e|f|g|h) lane_$lane & pids+=($!) ;; *) echo "error: unknown lane '$lane'; expected a, b, c, d, e, f, g or h" >&2; exit 2 ;; esac
done
for p in "${pids[@]}"; do wait "$p"; done  # a failure in either lane stops the script
case " $LANES " in *" c "*|*" d "*) temperature_report ;; esac
case " $LANES " in *" e "*|*" g "*) ops_table_5k ;; esac
echo "claims: dev/results/planets_cpu/dt_ood.md, dev/results/arithmetic_curves/curves_3000.md, curves_ops{2,3,4}_5k.md, ops_table_5k.md, curves_6000.md, curves_12000.md"
