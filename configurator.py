"""
Configuration the nanoGPT way: a script declares its settings as module-level values with inline
comments, then calls configure(globals(), __file__). Positional arguments are config files (plain
Python, run in order); --key=value flags override them wherever they stand. An unknown key, a wrong
type or a value out of its range (RANGES) is an error naming the file or flag; --help lists every key.
"""
import ast
import os
import re
import sys
import traceback
from math import inf
from typing import NamedTuple


class Range(NamedTuple):
    """low ≤ x < high ("[]": ≤ high, "(": > low); bounds and multiple_of may name settings; no check while `unless` is true."""
    low: object
    high: object = inf
    ends: str = "[)"
    multiple_of: str = None
    unless: str = None

    def __str__(self):
        return (f"{self.ends[0]}{self.low}, {self.high}{self.ends[1]}" + (f" unless {self.unless}" if self.unless else "")
                + (f" multiple of {self.multiple_of}" if self.multiple_of else ""))


class Choice(tuple):
    """The strings a setting may take; cuda:N stands for any index."""
    def __str__(self):
        return " | ".join(self)


# Every numeric setting's range, and the strings some settings may take, per script; checked after all files and flags
SEED, DEVICE = Range(0, 2**32 - 1, "[]"), Choice(("auto", "cpu", "mps", "cuda", "cuda:N"))
RANGES = {
    "train.py": dict(
        k=Range(0), n_layer=Range(1), n_head=Range(1), n_embd=Range(1, multiple_of="n_head"), block_size=Range(0),
        dropout=Range(0, 1), mlm_probability=Range(0, 1, "()", unless="causal"), num_loss_weight=Range(0),
        nmse_eps=Range(0, ends="()"), batch_size=Range(1), micro_batch_size=Range(1), pack_length=Range(0),
        max_iters=Range(1), learning_rate=Range(0, ends="()"), min_lr=Range(0, "learning_rate", "[]"), seed=SEED,
        warmup_iters=Range(0), weight_decay=Range(0), beta1=Range(0, 1), beta2=Range(0, 1), grad_clip=Range(0),
        eval_interval=Range(1), keep_every=Range(0), eval_batches=Range(1), log_interval=Range(1), device=DEVICE,
        dtype=Choice(("auto", "bfloat16", "float32")), num_head=Choice(("mse", "gmm")), n_components=Range(1)),
    "sample.py": dict(show=Range(0), max_lines=Range(0), batch_size=Range(1), max_new_tokens=Range(1), seed=SEED,
                      temperature=Range(0), device=DEVICE, spread=Choice(("std", "quantiles", "none")),
                      gmm_generate=Choice(("sample", "mean"))),
    "eval.py": dict(max_samples=Range(0), batch_size=Range(1), device=DEVICE),
    "curves.py": dict(max_samples=Range(0)),
    "probe.py": dict(n_train=Range("folds"), n_test=Range(1), folds=Range(2), batch_size=Range(1), seed=SEED, device=DEVICE),
    "baselines.py": dict(
        n_stations=Range(1), n_steps=Range(2), all_width=Range(1), all_layers=Range(0), single_width=Range(1),
        single_layers=Range(0), max_iters=Range(1), eval_interval=Range(1), batch_size=Range(1), seed=SEED,
        all_batch_size=Range(1), learning_rate=Range(0, ends="()"), weight_decay=Range(0), max_samples=Range(0)),
}


def settings(source_file):
    """key -> (default, comment) of the settings between '# -- config' and '# -- end config', read without running it."""
    with open(source_file) as f:
        block = f.read().partition("\n# -- config")[2].partition("\n# -- end config")[0]
    found = (re.match(r"^(\w+)\s*=\s*(.+?)\s*(?:#\s*(.*))?$", line) for line in block.splitlines()[1:])
    return {m[1]: (ast.literal_eval(m[2]), m[3] or "") for m in found if m}


def defaults(source_file):
    return {key: value for key, (value, _) in settings(source_file).items()}


def check_type(key, value, default, where):
    """A value must have its default's type (an int may stand for a float; "auto" may be forced True/False)."""
    if default is None or (default == "auto" and isinstance(value, bool)) or type(value) is type(default):
        return value
    if isinstance(default, float) and type(value) is int:
        return float(value)
    got = (f", got {value!r}" if bool in (type(value), type(default)) and value is not None else
           f" (default {default!r}), got " + ("None" if value is None else f"{type(value).__name__} {value!r}"))
    raise SystemExit(f"error: {where}: {key} expects {type(default).__name__}{got}")


def check_range(key, spec, config, origin):
    """An error naming the key, its value (and where it was set) and its range unless config[key] lies in spec."""
    value, setting = config[key], f"error: {key} = {config[key]!r} ({origin})"
    if isinstance(spec, Choice):
        if not re.fullmatch("|".join(re.escape(s).replace(":N", r":\d+") for s in spec), str(value)):
            raise SystemExit(f"{setting} is not one of {spec}")
        return
    (low, high), named = ([config[b] if isinstance(b, str) else b for b in spec[:2]],
                          ", ".join(f"{b} = {config[b]!r}" for b in spec[:2] if isinstance(b, str)))
    if not ((spec.unless and config[spec.unless]) or ((low <= value if spec.ends[0] == "[" else low < value)
                                                      and (value <= high if spec.ends[1] == "]" else value < high))):
        raise SystemExit(f"{setting} is out of its range {spec._replace(multiple_of=None)}" + (f" ({named})" if named else ""))
    if spec.multiple_of and value % config[spec.multiple_of]:
        raise SystemExit(f"{setting} must be a multiple of {spec.multiple_of} = {config[spec.multiple_of]!r}")


def run_config_file(path):
    """The settings a config file defines; a file that cannot be read or run is an error naming it (and its line)."""
    if not os.path.isfile(path):
        raise SystemExit(f"error: config file {path} " + ("is a directory; expected a Python file of settings"
                                                          if os.path.isdir(path) else "not found"))
    namespace = {}
    try:
        with open(path, encoding="utf-8") as f:
            exec(compile(f.read(), path, "exec"), namespace)
    except UnicodeDecodeError as e:
        raise SystemExit(f"error: config file {path} is not UTF-8 text (byte {e.start})")
    except OSError as e:
        raise SystemExit(f"error: cannot read config file {path}: {e.strerror}")
    except SyntaxError as e:
        raise SystemExit(f"error: {path}:{e.lineno}: {e.msg}")
    except Exception as e:  # the file ran and failed: name its line
        lines = [frame.lineno for frame in traceback.extract_tb(e.__traceback__) if frame.filename == path]
        raise SystemExit(f"error: {path}:{lines[-1] if lines else '?'}: {type(e).__name__}: {e}")
    return {k: v for k, v in namespace.items() if not k.startswith("_") and not callable(v) and type(v).__name__ != "module"}


def configure(scope, source_file, argv=None):
    """Apply config files, then --key=value flags, to the settings in `scope` (a globals() dict)."""
    argv, comments = sys.argv[1:] if argv is None else argv, {k: c for k, (_, c) in settings(source_file).items()}
    known, ranges = {k: scope[k] for k in comments}, RANGES.get(os.path.basename(source_file), {})
    if "-h" in argv or "--help" in argv:
        print(f"usage: python {os.path.basename(source_file)} [config.py ...] [--key=value ...]\n")
        width, range_width = max(map(len, known)), max((len(str(r)) for r in ranges.values()), default=0)
        for key, default in known.items():
            print(f"  --{key:<{width}} = {default!r:<24} {str(ranges.get(key, '')):<{range_width}} {comments[key]}".rstrip())
        raise SystemExit(0)
    config, set_by = dict(known), {}  # set_by: key -> the file or flag that set it, for range errors
    for path in (a for a in argv if not a.startswith("--")):  # files in order, then flags: a flag beats any file
        for key, value in run_config_file(path).items():
            if key not in known:
                raise SystemExit(f"error: {path}: unknown config key {key!r}; see --help for the keys")
            config[key], set_by[key] = check_type(key, value, known[key], path), path
    for key, sep, text in (a[2:].partition("=") for a in argv if a.startswith("--")):
        if key not in known or not (sep or isinstance(known[key], bool)):  # a bare --flag: True for a boolean
            raise SystemExit(f"error: --{key} needs a value: --{key}=..." if key in known
                             else f"error: unknown flag --{key}; see --help for the keys")
        try:
            value = ast.literal_eval(text or "True")
        except (ValueError, SyntaxError):
            value = text  # a bare string such as --encoding=p10
        if isinstance(known[key], str) and not isinstance(value, str) and not (known[key] == "auto" and isinstance(value, bool)):
            value = text
        config[key], set_by[key] = check_type(key, value, known[key], f"--{key}"), f"--{key}"
    for key, spec in ranges.items():
        check_range(key, spec, config, f"from {set_by[key]}" if key in set_by else "the default")
    scope.update(config)
    return config
