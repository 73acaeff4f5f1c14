"""train.py and sample.py end to end on a tiny arithmetic set: the recipe as a user runs it."""
import copy
import json
import os
import shutil
import sys

import pytest
from conftest import ROOT, run
from dataset import Split

TINY = ["--n_layer=2", "--n_head=2", "--n_embd=32", "--block_size=32", "--device=cpu", "--compile=False",
        "--warmup_iters=0", "--log_interval=1"]


def losses(out_dir):
    with open(os.path.join(out_dir, "log.jsonl")) as f:
        return {r["iter"]: r["loss"] for r in map(json.loads, f) if "loss" in r}


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("data") / "ops2")
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--out", d, "--workers=1")
    for enc in ("xval", "p10"):
        run("tokenize_numbers.py", d, "--encoding", enc, "--workers=1")
    return d


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


def resumed_losses_match(data, tmp_path, device="cpu", rel=1e-6, abs=1e-7):
    """Steps 4-6 of a run stopped after step 3 and resumed with the same settings log the losses of an
    uninterrupted run (its checkpoint of step 3 stands for the stopped run's last one)."""
    common = [*[a for a in TINY if not a.startswith("--device")], f"--device={device}", f"--data_dir={data}",
              "--batch_size=8", "--micro_batch_size=4", "--eval_interval=3", "--learning_rate=1e-3",
              "--min_lr=1e-4", "--dropout=0.1", "--max_iters=6", "--keep_every=3"]  # a decaying lr and dropout
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    run("train.py", *common, f"--out_dir={straight}")
    os.makedirs(resumed)
    shutil.copy(os.path.join(straight, "ckpt_3.pt"), os.path.join(resumed, "ckpt_latest.pt"))
    r = run("train.py", *common, f"--out_dir={resumed}", "--resume")
    assert "resuming at step 3" in r.stdout and "changed" not in r.stdout
    a, b = losses(straight), losses(resumed)
    for i in (4, 5, 6):
        assert b[i] == pytest.approx(a[i], rel=rel, abs=abs)


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


def test_under_torchrun_a_bad_setting_is_said_once_per_machine(monkeypatch):
    import configurator
    scope = configurator.defaults(os.path.join(ROOT, "train.py"))
    for local_rank, code in (("0", "error: unknown flag --max_iter; see --help for the keys"), ("1", 1)):
        monkeypatch.setenv("LOCAL_RANK", local_rank)  # every process reads the same settings; the first says what is wrong
        with pytest.raises(SystemExit) as e:
            configurator.configure(scope, os.path.join(ROOT, "train.py"), ["--max_iter=3"])
        assert e.value.code == code


def test_an_unknown_key_in_a_config_file_names_the_file(tmp_path):
    cfg = tmp_path / "bad.py"
    cfg.write_text("n_layer = 2\nlearnin_rate = 1e-3\n")
    r = run("train.py", str(cfg), check=False)
    assert r.returncode != 0 and "bad.py" in r.stderr and "'learnin_rate'" in r.stderr


def test_help_lists_every_setting_with_its_default():
    r = run("train.py", "--help")
    assert "--learning_rate" in r.stdout and "0.0002" in r.stdout and "--mlm_probability" in r.stdout


@pytest.mark.parametrize("script", ["train.py", "sample.py", "eval.py", "tools/curves.py", "tokenize_numbers.py"])
def test_each_script_starts_as_its_own_process(script):
    # the other tests run most scripts inside the test process; this one checks their imports and
    # command line as a new Python process sees them
    r = run(script, "--help", process=True)
    assert r.returncode == 0 and "--" in r.stdout and not r.stderr.strip()


def test_a_sample_longer_than_block_size_is_an_error(data, tmp_path):
    r = run("train.py", *TINY, f"--data_dir={data}", "--block_size=4", f"--out_dir={tmp_path}", check=False)
    assert r.returncode != 0 and "block_size is 4" in r.stderr


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
                    sys._getframe(1).f_code.co_filename == os.path.join(ROOT, "train.py"):
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
    own = shutil.copytree(data, str(tmp_path / "data"))  # a bad sample in step 3 ends the run after its first steps
    split = Split(own, "train", "xval")
    values = np.load(os.path.join(own, "xval", "train.values.npy"))
    values[split.offsets[int(step_samples(len(split), 8, 2, 1337)[1][0])]] = np.inf
    np.save(os.path.join(own, "xval", "train.values.npy"), values)
    r = run("train.py", *TINY, f"--data_dir={own}", f"--out_dir={tmp_path / 'out'}", "--max_iters=100000000",
            "--batch_size=8", "--micro_batch_size=8", "--eval_interval=1000", "--eval_batches=1", check=False)
    warnings = [line for line in r.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "days on the CPU" in warnings[0] and "config/own_small.py" in warnings[0], r.stdout
