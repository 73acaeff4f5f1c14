# Sourced by the training scripts of tools/: one training that a second run of the script skips or resumes.
#   trained RUN STEPS TRAIN_ARGS...   train.py TRAIN_ARGS --out_dir=RUN, logging to RUN.txt; nothing if
#                                     RUN's log already has its validation at STEPS (the run is done),
#                                     --resume if RUN holds a checkpoint, else a fresh start
trained() {
    local run=$1 steps=$2; shift 2
    grep -qs "\"iter\": $steps, \"val_loss\"" "$run/log.jsonl" && return 0
    local resume=--overwrite=True
    [ -f "$run/ckpt_latest.pt" ] && resume=--resume
    mkdir -p "$(dirname "$run")"
    python train.py "$@" --out_dir="$run" "$resume" > "$run.txt"
}
