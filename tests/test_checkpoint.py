"""checkpoint.py: a run's folder, its log and checkpoints; damage is one line or a note."""
import json
import pathlib
import pickle
import shutil

import numpy as np
import pytest
import torch
from conftest import run
from helpers import edited, losses, one_line_error, train

from checkpoint import RESUME_REFUSES, check_resume, load_checkpoint, run_files


def test_the_run_files_are_what_train_and_eval_wrote(tmp_path):
    for prefix, splits in (("eval", ["test"]), ("eval_first5", ["test", "test_ood"])):
        (tmp_path / f"{prefix}.json").write_text(json.dumps({"task": "a", "splits": dict.fromkeys(splits, {})}))
        for name in [f"{prefix}.md"] + [f"{prefix}_{s}.png" for s in splits]:
            (tmp_path / name).write_text("")
    mine = ["evaluation_notes.md", "eval_notes.md", "eval_ideas.json", "notes.png", "eval.txt", "ckpt.pt"]
    ours = ["log.jsonl", "ckpt_latest.pt", "ckpt_best.pt", "ckpt_4.pt"]
    for name in mine + ours:
        (tmp_path / name).write_text('{"ideas": []}')
    reports = [prefix + end for prefix in ("eval", "eval_first5") for end in (".json", ".md", "_test.png")]
    assert set(run_files(str(tmp_path))) == {*ours, *reports, "eval_first5_test_ood.png"}


def test_broken_log_rows_do_not_block_resume(data, two_steps, tmp_path):
    out = shutil.copytree(two_steps, tmp_path / "run")
    with open(out / "log.jsonl", "a") as f:
        f.write('{"iter": 1, "loss"\n[1, 2]\n{"loss": 3.0}\n{"iter": "2"}\n')
    assert "and 4 broken rows removed" in train(data, out, "--max_iters=4", "--resume").stdout
    assert sorted(losses(out)) == [1, 2, 3, 4]


def test_a_reused_pids_lock_says_what_to_do(data, tmp_path):
    (tmp_path / "train.lock").write_text("1 none")  # pid 1 is alive, and no train.py run
    error = one_line_error(train(data, tmp_path, "--max_iters=1", check=False))
    assert "pid 1" in error and f"delete {tmp_path}/train.lock" in error


@pytest.mark.parametrize("edit, says", [
    (lambda c: c.pop("optimizer"), "has no optimizer"),
    (lambda c: c["model_args"].update(rotary=True), "does not know (rotary); use the version that wrote it"),
    (lambda c: c["model"].update({k: v[:1] for k, v in c["model"].items() if "wte" in k}),
     "weights or optimizer state do not fit"),
])
def test_an_edited_checkpoint_is_refused(data, two_steps, tmp_path, edit, says):
    out = shutil.copytree(two_steps, tmp_path / "run")
    edited(out / "ckpt_latest.pt", out / "ckpt_latest.pt", edit)
    error = one_line_error(train(data, out, "--max_iters=4", "--resume", check=False))
    assert error.startswith(f"error: {out}/ckpt_latest.pt") and says in error, error


def test_an_unreadable_checkpoint_is_one_line_naming_it_and_runs_no_code(checkpoint, data, tmp_path):
    marker, out = tmp_path / "ran", tmp_path / "out"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (marker,)
    out.mkdir()
    torch.save({"model": Payload()}, str(out / "ckpt_latest.pt"))
    (tmp_path / "ckpt_latest.pt").write_bytes(open(checkpoint, "rb").read()[:1000])  # truncated
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "random.pt").write_bytes(np.random.default_rng(0).bytes(5000))
    resume = ("--max_iters=4", "--resume")
    for bad, r in ((tmp_path / "ckpt_latest.pt", train(data, tmp_path, *resume, check=False)),
                   (out / "ckpt_latest.pt", train(data, out, *resume, check=False)),
                   (tmp_path / "empty.pt", run("sample.py", f"--ckpt={tmp_path}/empty.pt", input="1=[?]\n", check=False)),
                   (tmp_path / "random.pt", run("eval.py", f"--ckpt={tmp_path}/random.pt", check=False)),
                   (tmp_path / "ckpt_latest.pt", run("eval.py", f"--ckpt={tmp_path}/ckpt_latest.pt", f"--data_dir={data}",
                                                     check=False))):
        error = one_line_error(r)
        assert f"{bad} is not a readable checkpoint" in error and "weights_only" not in error
        assert ("could run code" in error or bad.parent != out) and not marker.exists()


def test_a_reordered_vocabulary_or_a_file_torch_warns_about_is_refused(checkpoint, tmp_path, recwarn):
    c = torch.load(checkpoint, weights_only=True)
    c["text_tokens"].reverse()
    torch.save(c, tmp_path / "edited.pt")
    with pytest.raises(SystemExit, match="edited.pt: text_tokens are not the strings it was saved with"):
        load_checkpoint(str(tmp_path / "edited.pt"))
    del c["vocab_digest"]
    torch.save(c, tmp_path / "old.pt")
    assert load_checkpoint(str(tmp_path / "old.pt"))["text_tokens"] == c["text_tokens"]
    (tmp_path / "pickle.pt").write_bytes(pickle.dumps({"a": 1}, protocol=4))
    torch.jit.script(torch.nn.Linear(2, 2)).save(str(tmp_path / "script.pt"))
    recwarn.clear()
    for name in ("pickle.pt", "script.pt"):
        with pytest.raises(SystemExit, match=f"{name} is not a readable checkpoint"):
            load_checkpoint(str(tmp_path / name))
    assert not recwarn.list


@pytest.mark.parametrize("recorded, refused", [
    ({"meta": "m", "arrays": "a"}, False),  # records no kind of dataset
    ({"meta": "m", "arrays": "other", "dataset": ["text"]}, True),
    ({"meta": "other", "arrays": "a", "dataset": ["lookup"]}, True),
])
def test_resume_refuses_changed_data_and_takes_a_fingerprint_without_a_kind(recorded, refused):
    now = {"meta": "m", "arrays": "a", "dataset": ["text"]}
    config = dict.fromkeys(RESUME_REFUSES["config"], 1) | {"data_dir": "d", "changed_data": False, "max_iters": 4}
    checkpoint = {"model_args": {}, "config": {"data_dir": "d"}, "iter_num": 2, "data_fingerprint": recorded}
    args = (checkpoint, "c.pt", dict.fromkeys(RESUME_REFUSES["model_args"]), config, now)
    if not refused:
        assert "max_iters" in check_resume(*args)
        return
    with pytest.raises(SystemExit, match=r"error: d is not the data c.pt was trained on \(it changed since\)"):
        check_resume(*args)
