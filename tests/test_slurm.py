"""tools/slurm.sh: one torchrun agent per node, the job as the launch, on every run of the script."""
import os
import subprocess

from conftest import ROOT


def test_the_slurm_script_is_bash_and_starts_one_torchrun_agent_per_node_with_the_job_as_launch(tmp_path):
    """tools/slurm.sh, run elsewhere (sbatch runs a copy), under stand-ins for srun (runs the command once), scontrol and
    torchrun (prints its line), 50 times: each run must pass."""
    assert subprocess.run(["bash", "-n", "tools/slurm.sh"], cwd=ROOT).returncode == 0
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in (("srun", 'while [[ $1 == --* ]]; do shift; done; exec "$@"'),
                       ("scontrol", 'printf "gpu07\\ngpu08\\n"'), ("torchrun", 'echo "torchrun $*"')):
        (bin_ / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (bin_ / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_NNODES": "2",
           "SLURM_JOB_ID": "4242", "SLURM_GPUS_ON_NODE": "4", "SLURM_SUBMIT_DIR": ROOT}
    line = ("torchrun --nnodes=2 --nproc_per_node=4 --max-restarts=3 --rdzv_backend=c10d --rdzv_endpoint=gpu07:29500 "
            "--rdzv_id=4242 train.py config/era5_xval.py --resume")
    # a race in the script (such as a pipe closed early under pipefail) fails some runs, not all
    runs = [subprocess.run(["bash", os.path.join(ROOT, "tools/slurm.sh"), "config/era5_xval.py", "--resume"],
                           cwd=str(tmp_path), env=env, capture_output=True, text=True) for _ in range(50)]
    failed = [r for r in runs if r.returncode != 0 or r.stdout.strip() != line]
    assert not failed, f"{len(failed)} of 50 runs failed; the first: exit {failed[0].returncode}, {failed[0].stderr}"
