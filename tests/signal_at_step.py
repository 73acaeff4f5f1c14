"""torchrun ... tests/signal_at_step.py NAME N RANK train.py ...: signal NAME as step N begins on RANK
(torchrun's first try)."""
import os
import runpy
import signal
import sys

import torch

name, step, rank, script = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.argv = sys.argv[4:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
if os.environ.get("RANK", "0") == rank and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
    original, calls = torch.optim.AdamW.step, []

    def step_then_signal(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == step:
            os.kill(os.getpid(), getattr(signal, name))
        return original(self, *args, **kwargs)
    torch.optim.AdamW.step = step_then_signal
runpy.run_path(script, run_name="__main__")
