"""setting_checks.py: each setting's range and type; a bad value is one line."""
import os

import pytest
from conftest import RANGE, RANGED, ROOT

import dataset
from configurator import configure, defaults
from setting_checks import INTERVAL, read_ranges

TRAIN = os.path.join(ROOT, "train.py")


@pytest.mark.parametrize("script", RANGED)
def test_every_numeric_setting_has_a_range_and_the_defaults_lie_in_it(script):
    configure(defaults(os.path.join(ROOT, script)), os.path.join(ROOT, script), [])


def test_every_range_is_one_some_script_has_and_the_encodings_are_the_tokenizers():
    assert set(RANGE) <= set().union(*(defaults(os.path.join(ROOT, s)) for s in RANGED))
    assert RANGE["encoding"] == " | ".join(dataset.ENCODINGS)


@pytest.mark.parametrize("args,message", [
    ("--n_embd=130", "n_embd = 130 (from --n_embd) must be a multiple of n_head = 6"),
    ("--n_head=5", "n_embd = 768 (the default) must be a multiple of n_head = 5"),
    ("--learning_rate=1e-3 --min_lr=1e-2",
     "min_lr = 0.01 (from --min_lr) is out of its range [0, learning_rate] (learning_rate = 0.001)"),
    ("--dtype=fp16", "dtype = 'fp16' (from --dtype) is not one of auto | bfloat16 | float32"),
    ("--encoding=p11", "encoding = 'p11' (from --encoding) is not one of xval | p10 | p1000 | b1999 | fp15"),
    ("--max_iters=None", "max_iters expects int (default 500000), got None"),
])
def test_a_setting_out_of_range_is_one_line_naming_key_value_and_range(args, message):
    with pytest.raises(SystemExit, match="^error: .*") as e:
        configure(defaults(TRAIN), TRAIN, args.split())
    assert message in str(e.value) and "\n" not in str(e.value)


def numbers(script):
    """A script's settings, and its numbers' ranges ([0, inf) where RANGES names none)."""
    settings = defaults(os.path.join(ROOT, script))
    ranges = {k: "[0, inf)" for k, v in settings.items() if type(v) in (int, float)}
    return settings, ranges | read_ranges(os.path.join(ROOT, script))


@pytest.mark.parametrize("script,key", [(s, k) for s in RANGED for k, spec in numbers(s)[1].items()
                                        if INTERVAL.match(spec)])
def test_a_number_just_outside_its_interval_is_one_line(script, key):
    settings, ranges = numbers(script)
    left, low, high, right = INTERVAL.match(ranges[key]).groups()[:4]
    outside = [float(settings.get(low, low)) - (left == "[")]
    if high != "inf":
        outside.append(float(settings.get(high, high)) + (right == "]"))
    for value in map(type(settings[key]), outside):
        with pytest.raises(SystemExit) as e:
            configure(dict(settings), os.path.join(ROOT, script), [f"--{key}={value}"])
        interval = ranges[key].partition(" multiple")[0]
        assert str(e.value).startswith(f"error: {key} = {value!r} (from --{key}) is out of its range {interval}")


def test_mlm_probability_is_not_checked_for_a_causal_model():
    assert configure(defaults(TRAIN), TRAIN, ["--causal=True", "--mlm_probability=0"])["mlm_probability"] == 0


def test_under_torchrun_a_bad_setting_is_said_once_per_machine(monkeypatch):
    for local_rank, code in (("0", "error: unknown flag --max_iter; see --help for the keys"), ("1", 1)):
        monkeypatch.setenv("LOCAL_RANK", local_rank)  # every process reads the settings; the first says
        with pytest.raises(SystemExit) as e:
            configure(defaults(TRAIN), TRAIN, ["--max_iter=3"])
        assert e.value.code == code
