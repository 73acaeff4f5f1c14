"""The processes of a torchrun launch as one run: rank, device and process group, a SIGTERM noted
rather than fatal, and one way for all to stop with one message, or to end."""

import os
import signal
import socket
import sys

import torch
import torch.distributed as dist

from util import pick_device


def init_processes(device, threads):
    """(ddp, rank, local_rank, world_size, device); under torchrun it joins the process group."""
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
    """This torchrun launch, the same after a restart: its --rdzv_id, else its local agent."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID")
    return f"agent-{socket.gethostname()}-{os.getppid()}" if run_id == "none" else run_id


def torchrun_store(rank):
    """init_process_group's store under torchrun, or None (env://): a prefix per start keeps a
    restarted group from the lost group's keys in the store torchrun keeps across restarts."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False
    )
    return dist.PrefixStore(f"xval/start{store.add(f'xval/starts/{rank}', 1)}/", store)


def note_sigterm():
    """From now on a SIGTERM (a preemption) is noted in the list returned, for the loop to stop
    where it can save; a second ends the process at once."""
    noted = []

    def note(signum, frame):
        noted.append(signum)
        signal.signal(signum, signal.SIG_DFL)

    signal.signal(signal.SIGTERM, note)
    return noted


def sigterm_noted(noted, device):
    """Whether any process has noted a SIGTERM (note_sigterm's list; torchrun: one all_reduce)."""
    if not dist.is_initialized():
        return bool(noted)
    count = torch.tensor([len(noted)], device=device)
    dist.all_reduce(count)
    return count.item() > 0


def sum_over_processes(tensor):
    """A tensor summed over all processes (one all_reduce under torchrun), as a list of floats."""
    if dist.is_initialized():
        dist.all_reduce(tensor)
    return tensor.tolist()


def print0(*args):
    """print, on rank 0 alone."""
    if int(os.environ.get("RANK", 0)) == 0:
        print(*args)


def stop(message, barrier=False):
    """End the run with one line per machine (all stop at the same step). barrier: first wait for
    all (for rank 0's checkpoint)."""
    if dist.is_initialized():
        if barrier:
            dist.barrier()
        dist.destroy_process_group()
    raise SystemExit(message if int(os.environ.get("LOCAL_RANK", 0)) == 0 else 1)


def stop_after_sigterm(step, ckpt_path):
    """Stop every process once rank 0 has saved, after a SIGTERM."""
    message = f"stopped by a SIGTERM after step {step}, saved in {ckpt_path}"
    stop(f"{message}: continue with the same command and --resume", barrier=True)


def end_processes():
    """End a finished torchrun run: wait for rank 0's last checkpoint, then leave without the
    interpreter's teardown (gloo's threads, held by DDP, can abort it)."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
