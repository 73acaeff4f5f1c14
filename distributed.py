"""The processes of a torchrun launch as one run: set-up, SIGTERM, stopping together."""

import os
import signal
import socket
import sys

import torch
import torch.distributed as dist

from util import pick_device


def init_processes(device, threads):
    ddp = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    device = pick_device(device, threads)
    if ddp and device.startswith("cuda"):
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(device)
    if ddp:
        backend = "nccl" if device.startswith("cuda") else "gloo"
        store = torchrun_store(rank)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size)
    return ddp, rank, local_rank, world_size, device


def torchrun_launch():
    """This torchrun launch, the same after a restart."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID")
    return f"agent-{socket.gethostname()}-{os.getppid()}" if run_id == "none" else run_id


def torchrun_store(rank):
    """torchrun's store, with a prefix per start (a restart must not read the lost group's keys)."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False
    )
    return dist.PrefixStore(f"xval/start{store.add(f'xval/starts/{rank}', 1)}/", store)


def note_sigterm():
    """A SIGTERM is noted in the list returned; a second ends the process."""
    noted = []

    def note(signum, frame):
        noted.append(signum)
        signal.signal(signum, signal.SIG_DFL)

    signal.signal(signal.SIGTERM, note)
    return noted


def sigterm_noted(noted, device):
    if not dist.is_initialized():
        return bool(noted)
    return sum_over_processes(torch.tensor([len(noted)], device=device))[0] > 0


def sum_over_processes(tensor):
    if dist.is_initialized():
        dist.all_reduce(tensor)
    return tensor.tolist()


def print0(*args, **kwargs):
    if int(os.environ.get("RANK", 0)) == 0:
        print(*args, **kwargs)


def exit_on_ctrl_c(where):
    """Ctrl-C ends the process with one line and exit code 130."""

    def interrupted(*_):
        print0(f"interrupted (Ctrl-C){where()}", file=sys.stderr)
        sys.exit(130)

    signal.signal(signal.SIGINT, interrupted)


def stop(message, barrier=False):
    """End the run with one line per machine; barrier: first wait for all."""
    if dist.is_initialized():
        if barrier:
            dist.barrier()
        dist.destroy_process_group()
    raise SystemExit(message if int(os.environ.get("LOCAL_RANK", 0)) == 0 else 1)


def stop_after_sigterm(step, ckpt_path):
    message = f"stopped by a SIGTERM after step {step}, saved in {ckpt_path}"
    stop(f"{message}: continue with the same command and --resume", barrier=True)


def end_processes():
    """Wait for rank 0's last checkpoint, then leave (gloo's threads can abort the teardown)."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
