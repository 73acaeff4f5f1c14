"""tools/curves.py: each kept checkpoint of a run is scored by eval.py and placed at its step and training FLOPs."""
import json
import os

import pytest
from conftest import run
from helpers import TINY


@pytest.mark.slow
def test_curves_score_every_kept_checkpoint_at_its_step_and_flops(tmp_path):
    data = str(tmp_path / "ops2")
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--out", data, "--workers=1")
    run("tokenize_numbers.py", data, "--encoding", "xval", "--workers=1")
    out_dir = str(tmp_path / "run")
    run("train.py", *TINY, "--k=4", f"--data_dir={data}", f"--out_dir={out_dir}", "--batch_size=8",
        "--micro_batch_size=8", "--max_iters=6", "--eval_interval=6", "--keep_every=3")
    prefix = str(tmp_path / "curves")
    run("tools/curves.py", f"--runs={out_dir}", f"--out={prefix}")
    with open(prefix + ".json") as f:
        (curve,) = json.load(f)["curves"]
    steps, flops = [p["step"] for p in curve["points"]], [p["flops"] for p in curve["points"]]
    assert steps == [3, 6] and flops[1] == 2 * flops[0] > 0  # FLOPs grow with the steps taken
    assert all(p["nmse"] > 0 and p["invalid_rate"] == 0 for p in curve["points"])
    assert os.path.exists(prefix + ".png") and os.path.exists(os.path.join(out_dir, "eval_6.json"))
    run("tools/curves.py", f"--runs={out_dir}", f"--out={prefix}", "--max_samples=5")  # another sample count: scored again
    with open(os.path.join(out_dir, "eval_6.json")) as f:
        kept = json.load(f)
    assert kept["max_samples"] == 5 and kept["splits"]["test"]["answer"]["n"] == 5
    r = run("tools/curves.py", f"--runs={out_dir}", f"--out={prefix}", "--split=val")  # another split: its own report
    assert r.returncode == 0 and os.path.exists(os.path.join(out_dir, "eval_6_val.json"))
    r = run("tools/curves.py", f"--runs={tmp_path}", f"--out={prefix}", check=False)
    assert r.returncode != 0 and "holds no ckpt_<step>.pt" in r.stderr
