#!/usr/bin/env bash
# The paper's temperature run on a SLURM cluster: one torchrun agent per node, GPUS processes each (docs/multi_node.md).
#   sbatch --nodes=2 tools/slurm.sh config/era5_xval.py                 # 2 nodes × 4 GPUs, from the repository root
#   sbatch --nodes=2 tools/slurm.sh config/era5_xval.py --resume        # a new job that continues the run in out_dir
# torchrun replaces a lost worker (--max-restarts) and the group continues from the last checkpoint; a preemption (SIGTERM
# to every task) saves ckpt_latest.pt at the next logged step, and the requeued job (the same job id names the launch)
# continues from it by itself.
#SBATCH --job-name=xval
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=16
#SBATCH --time=12:00:00
#SBATCH --requeue
#SBATCH --signal=TERM@120
#SBATCH --output=%x-%j.out
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
# the rendezvous runs on the first node; the whole list is read first, since a pipe into `head -n 1`
# can close before scontrol has written everything, and pipefail then stops the job
nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
head=${nodes%%$'\n'*}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
srun --kill-on-bad-exit=0 torchrun --nnodes="$SLURM_NNODES" --nproc_per_node="${SLURM_GPUS_ON_NODE:-gpu}" --max-restarts=3 \
    --rdzv_backend=c10d --rdzv_endpoint="$head:${RDZV_PORT:-29500}" --rdzv_id="$SLURM_JOB_ID" train.py "$@"
