"""train.py and sample.py end to end on a tiny arithmetic set: the recipe as a user runs it; and nothing
lost, nothing silent: runs are not overwritten, non-finite losses stop training before a checkpoint,
resume says what changed, and bad input is a one-line error naming where it is."""
import copy
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import ROOT, run
from helpers import TINY, diverging_after, losses, one_line_error, resumed_losses_match, train
from dataset import Split


@pytest.mark.parametrize("encoding", ["xval", "p10"])
def test_a_tiny_model_learns(data, tmp_path, encoding):
    out = str(tmp_path / "out")
    k = ["--k=4"] if encoding == "xval" else []  # the trees' answers reach 1e4: multi-scale xVal
    run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", f"--encoding={encoding}", *k,
        "--max_iters=60", "--eval_interval=60", "--batch_size=32", "--micro_batch_size=32",
        "--learning_rate=3e-3", "--min_lr=3e-4")
    loss = losses(out)
    first, last = sum(loss[i] for i in (1, 2, 3)) / 3, sum(loss[i] for i in (58, 59, 60)) / 3
    assert last < 0.75 * first
    assert os.path.exists(os.path.join(out, "ckpt_best.pt")) and os.path.exists(os.path.join(out, "ckpt_latest.pt"))


def test_keep_every_keeps_a_checkpoint_of_each_such_step(data, tmp_path):
    out = str(tmp_path / "out")
    run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--batch_size=8", "--micro_batch_size=8",
        "--max_iters=6", "--eval_interval=6", "--keep_every=2")
    kept = sorted(f for f in os.listdir(out) if f.startswith("ckpt_") and f[5].isdigit())
    assert kept == ["ckpt_2.pt", "ckpt_4.pt", "ckpt_6.pt"]
    import torch
    assert [torch.load(os.path.join(out, f), weights_only=False)["iter_num"] for f in kept] == [2, 4, 6]


def test_resume_continues_exactly(data, tmp_path):
    resumed_losses_match(data, tmp_path)


@pytest.mark.slow
def test_two_processes_give_the_loss_of_one_with_the_same_global_batch(data, tmp_path):
    common = [*TINY, f"--data_dir={data}", "--batch_size=8", "--max_iters=3", "--eval_interval=100",
              "--learning_rate=1e-3"]
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    run("train.py", *common, f"--out_dir={one}", "--micro_batch_size=8")
    run("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "train.py", *common,
        f"--out_dir={two}", "--micro_batch_size=2", env={**os.environ, "OMP_NUM_THREADS": "1"})
    a, b = losses(one), losses(two)
    assert sorted(a) == sorted(b) == [1, 2, 3]
    for i in a:
        assert b[i] == pytest.approx(a[i], rel=1e-5)


def test_packing_gives_the_losses_of_padding(tmp_path):
    data = str(tmp_path / "lookup")  # 2-6 entries: samples of different lengths
    run("prepare/lookup.py", "--size=tiny", "--out", data, "--workers=1")
    run("tokenize_numbers.py", data, "--encoding=p10", "--workers=1")
    common = [*TINY, "--block_size=64", f"--data_dir={data}", "--batch_size=16", "--micro_batch_size=16",
              "--max_iters=3", "--eval_interval=100", "--learning_rate=1e-3", "--encoding=p10"]
    padded, packed = str(tmp_path / "padded"), str(tmp_path / "packed")
    run("train.py", *common, f"--out_dir={padded}")
    run("train.py", *common, f"--out_dir={packed}", "--packing=True")
    padding = {}
    for name, out in (("padded", padded), ("packed", packed)):
        with open(os.path.join(out, "log.jsonl")) as f:
            padding[name] = [r["padding"] for r in map(json.loads, f) if "padding" in r]
    assert all(p < 0.6 * q for p, q in zip(padding["packed"], padding["padded"])), padding
    a, b = losses(padded), losses(packed)
    for i in (1, 2, 3):
        assert b[i] == pytest.approx(a[i], rel=1e-5)


def test_sample_fills_in_marked_numbers_and_reports_r2(data, tmp_path):
    out = str(tmp_path / "out")
    run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--max_iters=5", "--eval_interval=5",
        "--batch_size=8", "--micro_batch_size=8")
    ckpt = os.path.join(out, "ckpt_best.pt")
    r = run("sample.py", f"--ckpt={ckpt}", input="(0.5+0.25)=[?]\n([?]*0.1)=0.05\n")
    lines = r.stdout.splitlines()
    assert lines[0].startswith("(0.5+0.25)=") and "[?]" not in lines[0]
    assert lines[1].endswith("*0.1)=0.05") and "[?]" not in lines[1]
    assert "2 numbers predicted" in r.stdout
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={data}/test.txt", "--mask_last", "--show=2")
    assert "50 numbers predicted" in r.stdout and r.stdout.count("(true: ") == 2 and "python eval.py --ckpt=" in r.stdout
    r = run("sample.py", f"--ckpt={ckpt}", input="(0.5+0.25)=[?]\n\n(a+0.25)=[?]\n", check=False)
    assert r.returncode != 0 and "stdin:3" in r.stderr and "'a'" in r.stderr  # blank lines still count


def test_generation_from_a_causal_model(data, tmp_path):
    out = str(tmp_path / "out")
    run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--max_iters=3", "--eval_interval=3",
        "--batch_size=8", "--micro_batch_size=8", "--causal=True")
    r = run("sample.py", f"--ckpt={out}/ckpt_best.pt", "--max_new_tokens=5", input="(0.5+0.25)=\n")
    assert r.stdout.startswith("(0.5+0.25)=")


@pytest.mark.parametrize("args,message", [
    (["--learning_rat=1e-3"], "unknown flag --learning_rat"),
    (["--max_iters=ten"], "max_iters expects int"),
    (["--compile=1"], "compile expects 'auto', True or False"),
    (["--packing=1"], "packing expects bool"),
    (["--n_layer"], "--n_layer needs a value"),
    (["missing_config.py"], "config file missing_config.py not found"),
])
def test_bad_settings_are_clear_errors(args, message):
    r = run("train.py", *args, check=False)
    assert r.returncode != 0 and message in r.stderr


def test_an_unknown_key_in_a_config_file_names_the_file(tmp_path):
    cfg = tmp_path / "bad.py"
    cfg.write_text("n_layer = 2\nlearnin_rate = 1e-3\n")
    r = run("train.py", str(cfg), check=False)
    assert r.returncode != 0 and "bad.py" in r.stderr and "'learnin_rate'" in r.stderr


def test_help_lists_every_setting_with_its_default():
    r = run("train.py", "--help")
    assert "--learning_rate" in r.stdout and "0.0002" in r.stdout and "--mlm_probability" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "sample.py", "eval.py", "tools/curves.py", "tokenize_numbers.py"])
def test_each_script_starts_as_its_own_process(script):
    # the other tests run most scripts inside the test process; this one checks their imports and
    # command line as a new Python process sees them
    r = run(script, "--help", process=True)
    assert r.returncode == 0 and "--" in r.stdout and not r.stderr.strip()


def test_a_sample_longer_than_block_size_is_an_error(data, tmp_path):
    r = run("train.py", *TINY, f"--data_dir={data}", "--block_size=4", f"--out_dir={tmp_path}", check=False)
    assert r.returncode != 0 and "block_size is 4" in r.stderr


@pytest.mark.slow
def test_compile_is_honoured_on_the_cpu_and_gives_the_eager_losses(data, tmp_path):
    common = [*TINY, "--n_layer=1", f"--data_dir={data}", "--batch_size=8", "--micro_batch_size=8",
              "--max_iters=2", "--eval_interval=2", "--eval_batches=1"]
    eager, compiled = str(tmp_path / "eager"), str(tmp_path / "compiled")
    run("train.py", *common, f"--out_dir={eager}")
    r = run("train.py", *common, f"--out_dir={compiled}", "--compile=True")
    assert "compile=True" in r.stdout
    a, b = losses(eager), losses(compiled)
    for i in (1, 2):
        assert b[i] == pytest.approx(a[i], rel=1e-4)


def test_resume_refuses_settings_that_change_the_sample_stream(data, tmp_path):
    common = [*TINY, f"--data_dir={data}", "--batch_size=8", "--micro_batch_size=4", f"--out_dir={tmp_path}"]
    run("train.py", *common, "--max_iters=2", "--eval_interval=2")
    for flag in ("--batch_size=4", "--seed=7", "--mlm_probability=0.3"):
        args = [a for a in common if not a.startswith(flag.split("=")[0] + "=")]
        r = run("train.py", *args, flag, "--max_iters=4", "--resume", check=False)
        assert r.returncode != 0 and flag.split("=")[0][2:] + "=" in r.stderr, r.stderr


def test_a_causal_sample_of_block_size_tokens_fits(data, tmp_path):
    # AR appends [EOS] and shifts by one: a sample of n tokens is n inputs
    n = max(int(Split(data, split, "xval").lengths.max()) for split in ("train", "val"))
    run("train.py", *TINY, f"--data_dir={data}", f"--block_size={n}", "--causal=True", "--max_iters=1",
        "--eval_interval=1", "--eval_batches=1", "--batch_size=8", "--micro_batch_size=8", f"--out_dir={tmp_path}")


def test_pack_length_longer_than_block_size_is_an_error(data, tmp_path):
    r = run("train.py", *TINY, f"--data_dir={data}", "--packing=True", "--pack_length=160", f"--out_dir={tmp_path}",
            check=False)
    assert r.returncode != 0 and "pack_length 160 is longer than 4 × block_size 32" in r.stderr


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_float32_matmuls_stay_float32_and_the_number_head_matches_float64(data, tmp_path, device):
    """TF32 would round the float32 number path's matmuls to a 10-bit mantissa (~1e-3 relative)."""
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from model import GPT, GPTConfig
    torch.set_float32_matmul_precision("high")  # what TF32 on means; train.py must undo it
    run("train.py", *[a for a in TINY if not a.startswith("--device")], f"--device={device}", f"--data_dir={data}",
        f"--out_dir={tmp_path}", "--max_iters=1", "--eval_interval=1", "--eval_batches=1", "--batch_size=8",
        "--micro_batch_size=8")
    assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    torch.manual_seed(0)
    net = GPT(GPTConfig(vocab_size=12, num_id=3, block_size=16, n_layer=1, n_head=2, n_embd=256)).to(device)
    h = torch.randn(64, 256, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):  # as train.py runs it on a GPU
        num = net.heads(h)[1]
    exact = copy.deepcopy(net.num_head).double().cpu()(h.double().cpu()).squeeze(-1)
    assert num.dtype == torch.float32
    assert ((num.double().cpu() - exact).norm() / exact.norm()).item() < 2e-6


def host_reads(data, out, steps, log_interval):
    """How often train.py's main thread reads a device value on the host (each read waits for the device) in a run."""
    import threading

    import torch
    reads, originals = [], {name: getattr(torch.Tensor, name) for name in ("tolist", "item", "__bool__", "__int__",
                                                                          "__float__", "numpy")}

    def counted(name):
        def read(self, *args):
            if threading.current_thread() is threading.main_thread() and \
                    os.path.dirname(sys._getframe(1).f_code.co_filename) == ROOT:
                reads.append(name)
            return originals[name](self, *args)
        return read
    try:
        for name in originals:
            setattr(torch.Tensor, name, counted(name))
        run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--batch_size=8", "--micro_batch_size=4",
            f"--max_iters={steps}", "--eval_interval=100", f"--log_interval={log_interval}")
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
    return len(reads)


def test_the_host_waits_for_the_device_once_a_logged_step_not_every_step(data, tmp_path):
    """nanoGPT's habit: the losses, the finiteness check and the SIGTERM flag cross to the host together, on a logged
    step (and before a checkpoint); the steps between queue work on the device without waiting for it."""
    quiet = [host_reads(data, tmp_path / f"q{steps}", steps, 100) for steps in (4, 8)]  # logs only the last step
    logged = [host_reads(data, tmp_path / f"l{steps}", steps, 2) for steps in (4, 8)]  # logs every second step
    assert quiet[1] - quiet[0] == 0 and logged[1] - logged[0] == 2, (quiet, logged)


def test_block_size_from_the_data_progress_and_what_to_run_next(data, tmp_path):
    longest = max(int(Split(data, split, "xval").lengths.max()) for split in ("train", "val"))
    args = [a for a in TINY if not a.startswith("--block_size")]
    r = run("train.py", *args, f"--data_dir={data}", f"--out_dir={tmp_path}", "--max_iters=4", "--log_interval=2",
            "--eval_interval=4", "--batch_size=8", "--micro_batch_size=8")
    import torch
    assert f"block_size {longest} (the longest sample)" in r.stdout
    assert torch.load(os.path.join(tmp_path, "ckpt_best.pt"), weights_only=True)["model_args"]["block_size"] == longest
    lines = r.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("iter ")] == ["iter 2/4", "iter 4/4"]
    assert all(" left" in line for line in lines if line.startswith("iter "))
    assert f"checkpoints in {tmp_path}/" in r.stdout
    assert f"python sample.py --ckpt={tmp_path}/ckpt_best.pt --input={data}/test.txt --mask_last" in r.stdout


def test_a_run_that_would_take_days_on_a_cpu_says_so(data, tmp_path):
    import numpy as np
    from batching import step_samples
    with diverging_after(2):  # a NaN loss at step 3 ends the run after its first steps
        r = run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={tmp_path / 'out'}", "--max_iters=100000000",
                "--batch_size=8", "--micro_batch_size=8", "--eval_interval=1000", "--eval_batches=1", check=False)
    warnings = [line for line in r.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "days on the CPU" in warnings[0] and "config/own_small.py" in warnings[0], r.stdout


# ---------------------------------------------------------------- runs

def test_a_second_run_in_an_out_dir_in_use_is_refused_even_with_overwrite(data, tmp_path):
    import subprocess
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    assert not os.path.exists(os.path.join(out, "train.lock"))  # released at the end
    log = open(os.path.join(out, "log.jsonl")).read()
    other = subprocess.Popen(["sleep", "60"])  # stands for a run still writing out_dir
    try:
        open(os.path.join(out, "train.lock"), "w").write(str(other.pid))
        error = one_line_error(train(data, out, "--max_iters=2", "--overwrite=True", check=False))
        assert f"in use by another train.py run (pid {other.pid})" in error
        assert open(os.path.join(out, "log.jsonl")).read() == log  # nothing deleted
    finally:
        other.kill()
        other.wait()
    train(data, out, "--max_iters=2", "--overwrite=True")  # the lock of a process that has ended is taken over


@pytest.mark.slow
def test_a_run_that_ends_in_an_error_releases_its_lock_but_a_torchrun_worker_keeps_it(data, tmp_path):
    out = str(tmp_path / "out")
    for env in (None, {**os.environ, "TORCHELASTIC_RUN_ID": "launch-a"}):  # one process; a worker torchrun may restart
        r = run("train.py", f"--data_dir={tmp_path / 'missing'}", f"--out_dir={out}", env=env, check=False, process=True)
        assert r.returncode != 0 and "missing is not a directory" in r.stderr
        assert os.path.exists(os.path.join(out, "train.lock")) == (env is not None)  # a restart reads the launch in it


def test_a_finished_run_is_never_overwritten_without_resume_or_overwrite(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    before = open(os.path.join(out, "ckpt_best.pt"), "rb").read()
    error = one_line_error(train(data, out, "--max_iters=2", check=False))
    assert "--resume" in error and "--overwrite=True" in error and "ckpt_best.pt" in error
    assert open(os.path.join(out, "ckpt_best.pt"), "rb").read() == before and sorted(losses(out)) == [1, 2]
    train(data, out, "--max_iters=1", "--overwrite=True")  # afresh: nothing of the first run is left
    assert sorted(losses(out)) == [1]
    assert torch.load(os.path.join(out, "ckpt_best.pt"), weights_only=False)["iter_num"] == 1


def test_a_non_finite_loss_stops_training_before_a_checkpoint_and_the_last_one_resumes(own_data, tmp_path):
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    latest = os.path.join(out, "ckpt_latest.pt")
    good = open(latest, "rb").read()
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    np.save(path, np.where(values != 1, values * 2, values))  # other numbers
    error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", check=False))
    assert "is not the data" in error and "--changed_data=True" in error  # the arrays are not those it trained on
    with diverging_after(1):  # the resumed run's first step leaves NaN weights: step 4's loss is NaN
        error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", "--changed_data=True", check=False))
    assert error.startswith("error: step 4: non-finite training loss") and "ckpt_latest.pt is untouched" in error
    assert open(latest, "rb").read() == good and max(losses(out)) == 3
    np.save(path, values)
    r = train(own_data, out, "--max_iters=4", "--resume")
    assert "resuming at step 2" in r.stdout and sorted(losses(out)) == [1, 2, 3, 4]


def test_a_non_finite_loss_between_logged_steps_stops_at_the_next_check_before_any_checkpoint(own_data, tmp_path):
    """The host reads the device only on a logged step or one before a save: a NaN in step 3 of 4 (logging every 4)
    stops every process at step 4, with the last good checkpoint untouched (tests/test_train.py counts the reads)."""
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    good = open(os.path.join(out, "ckpt_latest.pt"), "rb").read()
    with diverging_after(1):  # step 3 of the run: its weights are NaN, step 4 is checked
        error = one_line_error(train(own_data, out, "--max_iters=6", "--log_interval=4", "--eval_interval=6",
                                     "--resume", check=False))
    assert error.startswith("error: step 4: non-finite training loss") and "since the last check nan" in error, error
    assert open(os.path.join(out, "ckpt_latest.pt"), "rb").read() == good


def test_a_non_finite_validation_loss_stops_before_the_checkpoint(own_data, tmp_path):
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    good = open(os.path.join(out, "ckpt_latest.pt"), "rb").read()
    with diverging_after(2):  # the training loss of step 4 is checked before its optimizer step leaves NaN
        error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", check=False))
    assert error.startswith("error: step 4: non-finite validation loss")
    assert open(os.path.join(out, "ckpt_latest.pt"), "rb").read() == good


def test_a_value_beyond_float32_in_the_arrays_is_refused_naming_the_sample(own_data, tmp_path):
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    values[Split(own_data, "train", "xval").offsets[7]] = np.inf  # the first token of sample 7
    np.save(path, values)
    error = one_line_error(train(own_data, str(tmp_path / "out"), "--max_iters=60", "--eval_interval=100", check=False))
    assert "train.values.npy: sample 7 (line 8 of train.txt) holds a non-finite number" in error


def test_resume_cuts_the_log_back_to_the_checkpoint(data, tmp_path):
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    train(data, straight, "--max_iters=4")
    train(data, resumed, "--max_iters=2")
    with open(os.path.join(straight, "log.jsonl")) as f:
        later = [line for line in f if json.loads(line)["iter"] == 3]
    with open(os.path.join(resumed, "log.jsonl"), "a") as f:  # what a run killed after step 3 leaves behind
        f.writelines(later)
    train(data, resumed, "--max_iters=4", "--resume")

    def rows(out):
        with open(os.path.join(out, "log.jsonl")) as f:
            return [(r["iter"], "loss" in r) for r in map(json.loads, f)]
    assert rows(resumed) == rows(straight)  # each step once, in order: no row repeated, none going back
    a, b = losses(straight), losses(resumed)
    assert all(b[i] == pytest.approx(a[i], rel=1e-6) for i in a)


# ---------------------------------------------------------------- resume, disk, devices, leftovers

def test_resume_applies_changed_settings_and_says_so(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    r = train(data, out, "--resume", "--max_iters=4", "--dropout=0.5", "--eval_interval=4")
    assert "resume: changed settings applied: " in r.stdout and "dropout 0.0 → 0.5" in r.stdout
    assert torch.load(os.path.join(out, "ckpt_latest.pt"), weights_only=True)["model_args"]["dropout"] == 0.5


def test_resume_refuses_a_changed_model_shape_naming_the_key_and_both_values(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    error = one_line_error(train(data, out, "--resume", "--max_iters=4", "--block_size=64", check=False))
    assert "block_size=32" in error and "64" in error


def test_resume_with_a_longer_schedule_says_what_the_learning_rate_was_and_is(data, tmp_path):
    out = str(tmp_path / "out")
    schedule = ["--learning_rate=1e-3", "--min_lr=1e-4", "--warmup_iters=0"]  # a decaying learning rate
    train(data, out, "--max_iters=4", *schedule)
    r = train(data, out, "--resume", "--max_iters=8", *schedule)
    # step 4 of 4 is the end of the cosine (min_lr); of 8 its middle: (1e-3 + 1e-4) / 2
    assert "max_iters 4 → 8" in r.stdout
    assert "at step 4 the learning rate was 1.00e-04 and now is 5.50e-04" in r.stdout
    with open(os.path.join(out, "log.jsonl")) as f:
        lrs = {row["iter"]: row["lr"] for row in map(json.loads, f) if "lr" in row}
    assert lrs[5] == pytest.approx(5.5e-4)


def test_resume_with_max_iters_below_the_steps_done_is_an_error(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=4")
    error = one_line_error(train(data, out, "--resume", "--max_iters=2", check=False))
    assert "--max_iters=2 is below the 4 steps" in error
    r = train(data, out, "--resume", "--max_iters=4")  # a finished run: nothing to do, and it says so
    assert "has done all 4 steps; nothing to train" in r.stdout


def test_a_full_disk_during_a_checkpoint_save_is_a_one_line_error(data, tmp_path, monkeypatch):
    import errno
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    good = open(os.path.join(out, "ckpt_latest.pt"), "rb").read()

    def full(obj, f, *args, **kwargs):
        with open(f, "wb") as partial:
            partial.write(b"PK" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(torch, "save", full)
    error = one_line_error(train(data, out, "--resume", "--max_iters=4", check=False))
    assert "No space left on device" in error and "disk space" in error and "ckpt_latest.pt" in error
    assert open(os.path.join(out, "ckpt_latest.pt"), "rb").read() == good
    assert not [f for f in os.listdir(out) if ".tmp" in f]


def test_a_missing_device_and_an_unusable_out_dir_fail_before_the_data_loads(tmp_path):
    missing = str(tmp_path / "no_such_data")  # an error about the data would mean it was read first
    if not torch.cuda.is_available():
        error = one_line_error(run("train.py", "--device=cuda", f"--data_dir={missing}", f"--out_dir={tmp_path}", check=False))
        assert "--device=cuda" in error and "CUDA" in error
    assert "--out_dir is empty" in one_line_error(run("train.py", "--out_dir=", f"--data_dir={missing}", check=False))
    (tmp_path / "a_file").write_text("")
    error = one_line_error(run("train.py", f"--out_dir={tmp_path / 'a_file' / 'out'}", f"--data_dir={missing}", check=False))
    assert f"cannot write to out_dir {tmp_path / 'a_file' / 'out'}" in error
    error = one_line_error(run("train.py", f"--out_dir={tmp_path / 'a_file'}", f"--data_dir={missing}", check=False))
    assert f"cannot write to out_dir {tmp_path / 'a_file'}: it is a file, not a folder" in error


def test_a_checkpoint_cut_short_by_a_kill_is_removed_by_the_next_run_and_named(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    leftover = os.path.join(out, "ckpt_latest.tmp.pt")
    with open(leftover, "wb") as f:
        f.write(b"\0" * 100_000)
    r = train(data, out, "--resume", "--max_iters=4")
    assert f"removed {leftover}" in r.stdout and not os.path.exists(leftover)


@pytest.mark.slow
def test_a_bad_sample_met_by_one_of_two_processes_stops_both_with_one_message(own_data, tmp_path):
    from batching import step_samples
    split = Split(own_data, "train", "xval")
    bad = int(step_samples(len(split), 8, 1, 1337)[1][5])  # step 1's sixth sample: the second process's share
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    values[split.offsets[bad]] = np.inf
    np.save(path, values)
    r = run("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "train.py", *TINY,
            f"--data_dir={own_data}", f"--out_dir={tmp_path}", "--batch_size=8", "--micro_batch_size=4", "--max_iters=4",
            "--eval_interval=100", env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False)
    errors = {line for line in r.stderr.splitlines() if line.startswith("error:")}
    assert errors == {f"error: {own_data}/xval/train.values.npy: sample {bad} (line {bad + 1} of train.txt) holds a "
                      "non-finite number; remove or rescale it and tokenize again"}, r.stderr
    assert r.returncode != 0 and "gloo" not in r.stderr.lower() and "ProcessGroup" not in r.stderr


def test_overwrite_leaves_nothing_of_the_earlier_run_and_says_what_it_removed(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2", "--keep_every=2")
    run("eval.py", f"--ckpt={out}/ckpt_best.pt", "--max_samples=4")
    assert {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"} <= set(os.listdir(out))
    r = train(data, out, "--max_iters=1", "--overwrite=True", "--eval_interval=1")
    assert "removed the earlier run's" in r.stdout and "eval_first4.json" in r.stdout
    assert not {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"} & set(os.listdir(out))


def test_the_closing_message_names_only_checkpoints_that_exist_and_a_tiny_val_split_is_warned_of(own_data, tmp_path):
    lines = open(os.path.join(own_data, "val.txt")).read().splitlines()
    (tmp_path / "val.txt").write_text(lines[0] + "\n")
    shutil.copy(tmp_path / "val.txt", os.path.join(own_data, "val.txt"))
    meta_path = os.path.join(own_data, "meta.json")
    meta = json.load(open(meta_path))
    meta["splits"]["val"] = 1  # a dataset prepared so (meta.json counts its samples)
    json.dump(meta, open(meta_path, "w"))
    run("tokenize_numbers.py", own_data, "--encoding=xval", "--workers=1")
    out = str(tmp_path / "out")
    r = train(own_data, out, "--max_iters=2", "--learning_rate=30", "--min_lr=30", "--warmup_iters=0")  # worse than step 0
    assert "val.txt has 1 sample(s)" in r.stdout
    assert not os.path.exists(os.path.join(out, "ckpt_best.pt"))  # (seed 1337: step 2 is worse than step 0)
    assert "no validation beat step 0" in r.stdout and f"--ckpt={out}/ckpt_latest.pt" in r.stdout
    assert "ckpt_best.pt" not in r.stdout.split("done in")[1]


def test_a_checkpoint_that_cannot_be_written_says_why_in_one_line_not_blaming_the_disk(data, tmp_path, monkeypatch):
    def refused(obj, path, *args, **kwargs):  # an out_dir made read-only during the run
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(torch, "save", refused)
    error = one_line_error(train(data, str(tmp_path / "out"), "--max_iters=2", check=False))
    assert "Permission denied" in error and "disk" not in error


@pytest.mark.slow
def test_ctrl_c_ends_a_training_in_one_line_with_exit_code_130(data, tmp_path):
    import signal
    import time
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--max_iters=100000",
                          "--batch_size=8", "--micro_batch_size=8", "--eval_interval=2", "--eval_batches=1"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (out / "ckpt_latest.pt").exists() and time.time() < deadline:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.strip().startswith("interrupted (Ctrl-C) at step") and len(err.strip().splitlines()) == 1, err


def test_a_context_too_long_for_the_machine_is_refused_with_the_figure_before_anything_is_allocated(data, tmp_path):
    error = one_line_error(train(data, str(tmp_path / "out"), "--max_iters=2", "--block_size=2000000", check=False))
    assert "a context of 2,000,000 tokens needs" in error and "GiB" in error and "--window" in error


# ---------------------------------------------------------------- checkpoints know their data

def test_a_checkpoint_knows_its_data_by_content_not_by_path(own_data, tmp_path):
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    ckpt = os.path.join(out, "ckpt_latest.pt")
    moved = shutil.copytree(own_data, str(tmp_path / "moved"))  # the same data under another name
    elsewhere = shutil.copytree(out, str(tmp_path / "out2"))
    assert "resuming at step 2" in train(moved, elsewhere, "--max_iters=3", "--resume").stdout
    error = one_line_error(train(str(tmp_path / "gone"), out, "--max_iters=3", "--resume", check=False))
    assert "gone is not a directory" in error and f"was trained on {own_data}" in error  # where its data was
    other = str(tmp_path / "other")  # another dataset in another folder: most likely the wrong config or --data_dir
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--seed=6", "--out", other, "--workers=1")
    run("tokenize_numbers.py", other, "--encoding=xval", "--workers=1")
    error = one_line_error(train(other, out, "--max_iters=3", "--resume", check=False))
    assert f"trained on ({own_data})" in error and f"--data_dir={own_data}" in error and "changed_data" not in error
    r = run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e1'}", "--max_samples=4")  # its own folder, unchanged
    assert r.returncode == 0 and "prepared again" not in r.stdout
    shutil.rmtree(own_data)  # the folder it names is gone: say where the path came from and what fixes it
    error = one_line_error(run("eval.py", f"--ckpt={ckpt}", check=False))
    assert f"{own_data}/meta.json not found" in error and "the folder it names" in error and "--data_dir" in error
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--seed=5", "--out", own_data, "--workers=1")
    run("tokenize_numbers.py", own_data, "--encoding=xval", "--workers=1")  # prepared again in place: other samples
    error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", check=False))
    assert "is not the data" in error and "--overwrite=True" in error
    error = one_line_error(run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e2'}", check=False))
    assert "prepared again since" in error and "--changed_data=True" in error
    r = run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e3'}", "--changed_data=True", "--max_samples=4")
    assert "warning:" in r.stdout and "evaluating anyway" in r.stdout


def test_the_validation_set_does_not_depend_on_the_memory_settings(data, tmp_path):
    """ckpt_best.pt is chosen by comparing validation losses: a resume with another micro-batch
    size (a memory setting) must compare losses of the same samples."""
    val = {}
    for micro in (8, 2):
        out = str(tmp_path / f"m{micro}")
        train(data, out, "--max_iters=1", "--eval_interval=1", "--eval_batches=2", f"--micro_batch_size={micro}")
        with open(os.path.join(out, "log.jsonl")) as f:
            val[micro] = [r["val_loss"] for r in map(json.loads, f) if "val_loss" in r]
    assert val[8][0] == pytest.approx(val[2][0], rel=1e-6)
