"""train.py as a learner reads it: the method in a short loop, the guards behind calls; the paper's
configs on any number of processes; checks made on the shapes actually used."""
import ast
import gc
import os
import re
import warnings

import pytest
from conftest import ROOT, run
from helpers import TINY, losses

import preflight
from batching import choose_packing, step_batches
from configurator import configure, defaults
from dataset import Split

PAPER_CONFIGS = sorted(f for f in os.listdir(os.path.join(ROOT, "config"))
                       if f.startswith(("arithmetic_", "era5_", "lookup_", "planets_")) and not f.endswith("_small.py"))




def test_the_loop_is_at_most_80_lines_each_phase_under_a_heading():
    lines = open(os.path.join(ROOT, "train.py"), encoding="utf-8").read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "while True:")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
    loop = "\n".join(lines[start:end]).rstrip()
    assert len(loop.splitlines()) <= 80
    for heading in ("# determine and set the learning rate", "# evaluate", "# forward and backward",
                    "# clip the gradient", "# step the optimizer", "# timing and logging"):
        assert heading in loop, heading
    assert loop.index("learning rate") < loop.index("# evaluate") < loop.index("backward") < loop.index("clip") \
        < loop.index("# timing and logging") < loop.index("optimizer.step()")


def test_train_py_has_no_tuple_of_six_targets_and_no_dict_keyed_by_a_sentence():
    tree = ast.parse(open(os.path.join(ROOT, "train.py"), encoding="utf-8").read())
    targets = [len(t.elts) for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
               if isinstance(t, ast.Tuple)]
    assert max(targets, default=0) <= 5
    keys = [k.value for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    assert not [k for k in keys if " " in k]


@pytest.mark.parametrize("config", PAPER_CONFIGS)
def test_the_paper_configs_fit_1_2_4_8_and_16_processes(config):
    train = os.path.join(ROOT, "train.py")
    cfg = configure(defaults(train), train, [os.path.join(ROOT, "config", config)])
    for world in (1, 2, 4, 8, 16):
        said = []
        micro = preflight.fit_micro_batch(cfg["batch_size"], cfg["micro_batch_size"], world, said.append)
        accum = cfg["batch_size"] // (micro * world)
        assert micro * world * accum == cfg["batch_size"] and micro <= cfg["micro_batch_size"]
        assert bool(said) == (cfg["micro_batch_size"] * world > cfg["batch_size"]), said


def test_the_largest_micro_batch_that_fits_is_taken_and_said_and_none_that_fits_is_an_error():
    said = []
    assert preflight.fit_micro_batch(64, 16, 8, said.append) == 8
    assert said == ["note: micro_batch_size 16 × 8 processes exceeds batch_size 64: micro-batches of 8 samples"]
    assert preflight.fit_micro_batch(64, 16, 16) == 4
    assert preflight.fit_micro_batch(64, 16, 4, said.append) == 16 and len(said) == 1  # fits: unchanged, unsaid
    for batch, micro, world in ((64, 16, 3), (64, 16, 128), (64, 24, 1)):  # nothing fits: the error stands
        with pytest.raises(SystemExit, match=f"batch_size {batch} must be a multiple of micro_batch_size"):
            preflight.fit_micro_batch(batch, micro, world)


@pytest.mark.slow
def test_era5_xval_runs_unchanged_on_8_processes_with_the_losses_of_one(data, tmp_path):
    common = ["config/era5_xval.py", *TINY, f"--data_dir={data}", "--max_iters=2", "--eval_interval=100",
              "--eval_batches=1", "--learning_rate=1e-3"]
    one, eight = str(tmp_path / "one"), str(tmp_path / "eight")
    r = run("train.py", *common, f"--out_dir={one}")
    assert "batch: 64 samples/step = 16 × 1 processes × 4 accumulation steps" in r.stdout
    r = run("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=8", "train.py", *common,
            f"--out_dir={eight}", env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.stdout.count("micro_batch_size 16 × 8 processes exceeds batch_size 64: micro-batches of 8") == 1
    assert "batch: 64 samples/step = 8 × 8 processes × 1 accumulation steps" in r.stdout
    a, b = losses(one), losses(eight)
    assert sorted(a) == sorted(b) == [1, 2]
    assert all(b[i] == pytest.approx(a[i], rel=1e-5) for i in a)


def test_attention_memory_is_checked_on_the_packed_rows_actually_used(data, tmp_path, monkeypatch):
    checked = []
    real = preflight.check_attention_memory
    monkeypatch.setattr(preflight, "check_attention_memory", lambda shapes, *a: checked.extend(shapes) or real(shapes, *a))
    run("train.py", *[a for a in TINY if not a.startswith("--block_size")], f"--data_dir={data}",
        f"--out_dir={tmp_path}", "--packing=True", "--batch_size=64", "--micro_batch_size=64", "--max_iters=1",
        "--eval_interval=1", "--eval_batches=1")
    split = Split(data, "train", "xval")
    longest = max(int(Split(data, s, "xval").lengths.max()) for s in ("train", "val"))
    length, rows = choose_packing(split, 64, 64, 1, 1337, longest, 4 * longest)
    first = step_batches(split, 0, 1337, 64, 64, packing=True, pack_length=length, pack_rows=rows)
    assert {tuple(b["ids"].shape) for b in first} == {(rows, length)}
    assert (rows, length) in checked and (64, longest) in checked  # the packed rows, and validation's padded ones
    assert length > longest  # a row longer than the context that was checked before


def test_the_batch_line_under_packing_says_what_happens(data, tmp_path):
    r = run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={tmp_path}", "--packing=True", "--pack_length=40",
            "--batch_size=64", "--micro_batch_size=16", "--max_iters=1", "--eval_interval=1", "--eval_batches=1")
    line = next(line for line in r.stdout.splitlines() if line.startswith("batch:"))
    split = Split(data, "train", "xval")
    first = step_batches(split, 0, 1337, 64, 16, packing=True, pack_length=40)
    rows = len(first[0]["ids"])
    assert "accumulation steps" not in line and "least padding" not in line
    assert f"packed in rows of 40 tokens, {rows} a micro-batch; {len(first)} micro-batches × 1 processes" in line
    assert len(first) != 64 // 16  # the accumulation count would have been wrong


def test_a_run_leaves_none_of_its_own_files_open(data, tmp_path):
    gc.collect()  # what earlier tests left is theirs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={tmp_path / 'out'}", "--batch_size=8",
            "--micro_batch_size=8", "--max_iters=2", "--eval_interval=2")
        run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={tmp_path / 'out'}", "--batch_size=8",
            "--micro_batch_size=8", "--max_iters=3", "--eval_interval=2", "--resume")
        gc.collect()
    # the files train.py reads and writes itself (dataset.py reads the arrays and the vocabulary)
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                and re.search(r"(meta\.json|log\.jsonl|train\.lock|\.pt)'", str(w.message))]
    assert not unclosed, unclosed


def test_no_open_call_in_train_py_outside_a_with():
    tree = ast.parse(open(os.path.join(ROOT, "train.py"), encoding="utf-8").read())
    in_with = {id(item.context_expr) for node in ast.walk(tree) if isinstance(node, ast.With) for item in node.items}
    opens = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "id", None) == "open" and id(node) not in in_with]
    assert not opens, f"train.py:{opens}"
