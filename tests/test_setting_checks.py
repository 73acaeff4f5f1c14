"""setting_checks.py: each setting's range and type; a bad value is one line."""
import os

import pytest
from conftest import RANGE, RANGED, ROOT

import dataset
from configurator import configure, defaults

TRAIN = os.path.join(ROOT, "train.py")


@pytest.mark.parametrize("script", RANGED)
def test_every_numeric_setting_has_a_range_and_the_defaults_lie_in_it(script):
    configure(defaults(os.path.join(ROOT, script)), os.path.join(ROOT, script), [])  # no error


def test_every_range_is_one_some_script_has_and_the_encodings_are_the_tokenizers():
    assert set(RANGE) <= set().union(*(defaults(os.path.join(ROOT, s)) for s in RANGED))
    assert RANGE["encoding"] == " | ".join(dataset.ENCODINGS)


@pytest.mark.parametrize("args,message", [
    ("--n_layer=0", "n_layer = 0 (from --n_layer) is out of its range [1, inf)"),
    ("--n_head=0", "n_head = 0 (from --n_head) is out of its range [1, inf)"),
    ("--n_embd=130", "n_embd = 130 (from --n_embd) must be a multiple of n_head = 6"),
    ("--n_head=5", "n_embd = 768 (the default) must be a multiple of n_head = 5"),
    ("--dropout=1.5", "dropout = 1.5 (from --dropout) is out of its range [0, 1)"),
    ("--mlm_probability=0", "mlm_probability = 0.0 (from --mlm_probability) is out of its range (0, 1)"),
    ("--mlm_probability=1.5", "mlm_probability = 1.5"),
    ("--eval_batches=0", "eval_batches = 0"),
    ("--max_iters=-5", "max_iters = -5 (from --max_iters) is out of its range [1, inf)"),
    ("--eval_interval=0", "eval_interval = 0"),
    ("--log_interval=0", "log_interval = 0"),
    ("--micro_batch_size=0", "micro_batch_size = 0"),
    ("--batch_size=0", "batch_size = 0"),
    ("--k=-1", "k = -1 (from --k) is out of its range [0, 38]"),
    ("--k=39", "k = 39 (from --k) is out of its range [0, 38]"),
    ("--grad_clip=-1", "grad_clip = -1.0 (from --grad_clip) is out of its range [0, inf)"),
    ("--learning_rate=0", "learning_rate = 0.0"),
    ("--learning_rate=1e-3 --min_lr=1e-2",
     "min_lr = 0.01 (from --min_lr) is out of its range [0, learning_rate] (learning_rate = 0.001)"),
    ("--seed=-1", "seed = -1"),
    ("--dtype=fp16", "dtype = 'fp16' (from --dtype) is not one of auto | bfloat16 | float32"),
    ("--encoding=p11", "encoding = 'p11' (from --encoding) is not one of xval | p10 | p1000 | b1999 | fp15"),
    ("--max_iters=None", "max_iters expects int (default 500000), got None"),
    ("sample.py --batch_size=0", "batch_size = 0 (from --batch_size) is out of its range [1, inf)"),
    ("sample.py --max_lines=-1", "max_lines = -1 (from --max_lines) is out of its range [0, inf)"),
    ("eval.py --max_samples=-1", "max_samples = -1"),
])
def test_a_setting_out_of_range_is_one_line_naming_key_value_and_range(args, message):
    args = args.split()
    path = os.path.join(ROOT, args.pop(0) if args[0].endswith(".py") else "train.py")
    with pytest.raises(SystemExit, match="^error: .*") as e:
        configure(defaults(path), path, args)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_mlm_probability_is_not_checked_for_a_causal_model():
    assert configure(defaults(TRAIN), TRAIN, ["--causal=True", "--mlm_probability=0"])["mlm_probability"] == 0


def test_under_torchrun_a_bad_setting_is_said_once_per_machine(monkeypatch):
    for local_rank, code in (("0", "error: unknown flag --max_iter; see --help for the keys"), ("1", 1)):
        monkeypatch.setenv("LOCAL_RANK", local_rank)  # every process reads the settings; the first says
        with pytest.raises(SystemExit) as e:
            configure(defaults(TRAIN), TRAIN, ["--max_iter=3"])
        assert e.value.code == code
