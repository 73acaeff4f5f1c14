"""checkpoint.py: a run's folder, its log and checkpoints; damage is one line or a note."""

import json
import os
import pathlib

import numpy as np
import pytest
import torch
from conftest import run
from helpers import losses, one_line_error, train

from checkpoint import load_checkpoint, run_files


def eval_report(out, prefix="eval", splits=("test",)):
    (out / f"{prefix}.json").write_text(json.dumps({"task": "arithmetic", "splits": {s: {} for s in splits}}))
    for name in [f"{prefix}.md"] + [f"{prefix}_{s}.png" for s in splits]:
        (out / name).write_text("")


def test_overwrite_deletes_what_train_and_eval_wrote_and_nothing_of_the_users(data, tmp_path):
    out = tmp_path / "run"
    train(data, str(out), "--max_iters=2")
    eval_report(out)
    eval_report(out, "eval_first5", ("test", "test_ood"))
    mine = ["evaluation_notes.md", "eval_notes.md", "eval_ideas.json", "notes.png", "eval.txt"]
    for name in mine:
        (out / name).write_text("mine")
    (out / "eval_ideas.json").write_text('{"ideas": []}')  # a JSON named like a report but not one of eval.py's
    wrote = {os.path.basename(p) for p in run_files(str(out))}
    assert wrote == {"log.jsonl", "ckpt_latest.pt", "ckpt_best.pt", "eval.json", "eval.md",
                     "eval_test.png", "eval_first5.json", "eval_first5.md", "eval_first5_test.png",
                     "eval_first5_test_ood.png"}
    r = train(data, str(out), "--max_iters=1", "--overwrite=True")
    assert "--overwrite=True removed" in r.stdout
    left = set(os.listdir(out))
    assert set(mine) <= left and not left & (wrote - {"log.jsonl", "ckpt_latest.pt", "ckpt_best.pt"})


def test_a_broken_row_in_the_log_does_not_block_a_resume_of_a_good_checkpoint(data, tmp_path):
    out = str(tmp_path / "run")
    train(data, out, "--max_iters=2")
    with open(os.path.join(out, "log.jsonl"), "a") as f:
        f.write('{"iter": 1, "loss"\n[1, 2]\n{"loss": 3.0}\n{"iter": "2"}\n')
    r = train(data, out, "--max_iters=4", "--resume")
    assert "and 4 broken rows removed" in r.stdout
    assert sorted(losses(out)) == [1, 2, 3, 4]


def test_a_lock_left_by_a_process_whose_pid_was_reused_says_how_to_go_on(data, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "train.lock").write_text("1 none")  # pid 1 is alive, and no train.py run
    error = one_line_error(train(data, str(out), "--max_iters=1", check=False))
    assert "pid 1" in error and f"delete {out}/train.lock" in error


@pytest.mark.parametrize("edit, says", [
    (lambda c: c.pop("optimizer"), "has no optimizer"),
    (lambda c: c["model_args"].update(rotary=True), "does not know (rotary); use the version that wrote it"),
    (lambda c: c["model"].update({k: v[:1] for k, v in c["model"].items() if "wte" in k}),
     "weights or optimizer state do not fit"),
])
def test_an_edited_checkpoint_is_refused_on_resume_in_one_line(data, tmp_path, edit, says):
    out = str(tmp_path / "run")
    train(data, out, "--max_iters=2")
    path = os.path.join(out, "ckpt_latest.pt")
    c = torch.load(path, weights_only=True)
    edit(c)
    torch.save(c, path)
    error = one_line_error(train(data, out, "--max_iters=4", "--resume", check=False))
    assert error.startswith(f"error: {path}") and says in error, error


def test_a_truncated_or_empty_checkpoint_is_a_one_line_error_naming_it(checkpoint, data, tmp_path):
    truncated, empty = str(tmp_path / "ckpt_latest.pt"), str(tmp_path / "empty.pt")
    (tmp_path / "ckpt_latest.pt").write_bytes(open(checkpoint, "rb").read()[:1000])
    (tmp_path / "empty.pt").write_bytes(b"")
    for bad, r in ((truncated, train(data, str(tmp_path), "--max_iters=4", "--resume", check=False)),
                   (empty, run("sample.py", f"--ckpt={empty}", input="(0.5+0.25)=[?]\n", check=False)),
                   (truncated, run("eval.py", f"--ckpt={truncated}", f"--data_dir={data}", check=False))):
        assert f"{bad} is not a readable checkpoint" in one_line_error(r)


def test_a_foreign_checkpoint_cannot_run_code_and_is_a_clear_error(data, tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (marker,)
    out = tmp_path / "out"
    out.mkdir()
    torch.save({"model": Payload()}, str(out / "ckpt_latest.pt"))
    error = one_line_error(train(data, str(out), "--resume", "--max_iters=4", check=False))
    assert f"{out / 'ckpt_latest.pt'} is not a readable checkpoint" in error and not marker.exists()
    assert "weights_only" not in error and "could run code" in error  # never the advice to load it unsafely
    (out / "random.pt").write_bytes(np.random.default_rng(0).bytes(5000))  # random bytes: a plain one-line error
    error = one_line_error(run("eval.py", f"--ckpt={out / 'random.pt'}", check=False))
    assert f"{out / 'random.pt'} is not a readable checkpoint" in error and "weights_only" not in error


def test_a_reordered_vocabulary_is_refused_and_one_saved_without_its_digest_is_taken(checkpoint, tmp_path):
    c = torch.load(checkpoint, weights_only=True)
    c["text_tokens"].reverse()
    torch.save(c, tmp_path / "edited.pt")
    with pytest.raises(SystemExit, match="edited.pt: text_tokens were edited since it was saved"):
        load_checkpoint(str(tmp_path / "edited.pt"))
    del c["vocab_digest"]  # a checkpoint of an earlier version
    torch.save(c, tmp_path / "old.pt")
    assert load_checkpoint(str(tmp_path / "old.pt"))["text_tokens"] == c["text_tokens"]
