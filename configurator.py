"""Settings the nanoGPT way: a script declares them as module-level values with one-line comments
and calls configure(globals(), __file__). Config files (plain Python, run in order), then
--key=value flags override them; an unknown key, a wrong type or a value out of its RANGE is a
one-line error naming the file or flag."""

import ast
import os
import re
import sys
import traceback
from collections import namedtuple
from math import inf


class Range(
    namedtuple("Range", "low high ends multiple_of unless", defaults=(inf, "[)", None, None))
):
    """low <= x < high ("[]": <= high, "(": > low); a bound or multiple_of may name a setting;
    unchecked while `unless`."""

    def __str__(self):
        return (
            f"{self.ends[0]}{self.low}, {self.high}{self.ends[1]}"
            + (f" unless {self.unless}" if self.unless else "")
            + (f" multiple of {self.multiple_of}" if self.multiple_of else "")
        )


# A setting's range, or the strings it may take ("cuda:N": any index), by name: the same in every
# script of CHECKED
R0, R1, FRACTION, POSITIVE = Range(0), Range(1), Range(0, 1), Range(0, ends="()")
RANGE = dict(
    k=R0,
    n_layer=R1,
    n_head=R1,
    n_embd=Range(1, multiple_of="n_head"),
    block_size=R0,
    dropout=FRACTION,
    mlm_probability=Range(0, 1, "()", unless="causal"),
    num_loss_weight=R0,
    nmse_eps=POSITIVE,
    batch_size=R1,
    micro_batch_size=R1,
    pack_length=R0,
    max_iters=R1,
    learning_rate=POSITIVE,
    min_lr=Range(0, "learning_rate", "[]"),
    seed=Range(0, 2**32 - 1, "[]"),
    warmup_iters=R0,
    weight_decay=R0,
    beta1=FRACTION,
    beta2=FRACTION,
    grad_clip=R0,
    eval_interval=R1,
    keep_every=R0,
    threads=R0,
    eval_batches=R1,
    log_interval=R1,
    n_components=R1,
    show=R0,
    max_lines=R0,
    max_new_tokens=R1,
    temperature=R0,
    max_samples=R0,
    n_train=Range("folds"),
    n_test=R1,
    folds=Range(2),
    n_stations=R1,
    n_steps=Range(2),
    all_width=R1,
    all_layers=R0,
    single_width=R1,
    single_layers=R0,
    all_batch_size=R1,
    encoding="xval | p10 | p1000 | b1999 | fp15",
    device="auto | cpu | mps | cuda | cuda:N",
    dtype="auto | bfloat16 | float32",
    num_head="mse | gmm",
    spread="std | quantiles | none",
    gmm_generate="sample | mean",
)
# every number has a range
CHECKED = ("train.py", "sample.py", "eval.py", "curves.py", "probe.py", "baselines.py")


def defaults(source_file, comments=False):
    """key -> default (comments: key -> (default, comment)) of the settings between '# -- config'
    and '# -- end config'."""
    with open(source_file) as f:  # read, not run
        block = f.read().partition("\n# -- config")[2].partition("\n# -- end config")[0]
    found = (
        re.match(r"^(\w+)\s*=\s*(.+?)\s*(?:#\s*(.*))?$", line) for line in block.splitlines()[1:]
    )
    return {
        m[1]: (ast.literal_eval(m[2]), m[3] or "") if comments else ast.literal_eval(m[2])
        for m in found
        if m
    }


def check_type(key, value, default, where):
    """A value must have its default's type (an int may stand for a float; "auto" may be forced
    True/False)."""
    if (
        default is None
        or (default == "auto" and isinstance(value, bool))
        or type(value) is type(default)
    ):
        return value
    if isinstance(default, float) and type(value) is int:
        return float(value)
    got = (
        f", got {value!r}"
        if bool in (type(value), type(default)) and value is not None
        else f" (default {default!r}), got "
        + ("None" if value is None else f"{type(value).__name__} {value!r}")
    )
    raise SystemExit(f"error: {where}: {key} expects {type(default).__name__}{got}")


def run_config_file(path):
    """The settings a config file defines; a file that cannot be read or run is an error naming it
    (and its line)."""
    try:
        with open(path, encoding="utf-8") as f:
            exec(compile(f.read(), path, "exec"), namespace := {})
    except UnicodeDecodeError as e:
        raise SystemExit(f"error: config file {path} is not UTF-8 text (byte {e.start})")
    # not there, a folder (IsADirectoryError, or PermissionError on Windows), not readable
    except OSError as e:
        raise SystemExit(
            f"error: config file {path} is a directory; expected a Python file of settings"
            if os.path.isdir(path)
            else (
                f"error: config file {path} not found"
                if isinstance(e, FileNotFoundError)
                else f"error: cannot read config file {path}: {e.strerror}"
            )
        )
    except SyntaxError as e:
        raise SystemExit(f"error: {path}:{e.lineno}: {e.msg}")
    except Exception as e:  # the file ran and failed: name its line
        lines = [
            frame.lineno
            for frame in traceback.extract_tb(e.__traceback__)
            if frame.filename == path
        ]
        raise SystemExit(f"error: {path}:{lines[-1] if lines else '?'}: {type(e).__name__}: {e}")
    return {
        k: v
        for k, v in namespace.items()
        if not k.startswith("_") and not callable(v) and type(v).__name__ != "module"
    }


def configure(scope, source_file, argv=None):
    """Apply config files, then --key=value flags, to the settings in `scope` (a globals() dict)."""
    try:
        return _configure(scope, source_file, argv)
    # under torchrun every process reads the same settings: the first on each machine says what is
    # wrong
    except SystemExit as e:
        if isinstance(e.code, str) and int(os.environ.get("LOCAL_RANK", 0)) != 0:
            raise SystemExit(1) from None
        raise


def _configure(scope, source_file, argv):
    argv, comments, script = (
        sys.argv[1:] if argv is None else argv,
        defaults(source_file, True),
        os.path.basename(source_file),
    )
    known = {k: scope[k] for k in comments}
    ranges = {k: RANGE[k] for k in known if k in RANGE} if script in CHECKED else {}
    if "-h" in argv or "--help" in argv:
        print(f"usage: python {script} [config.py ...] [--key=value ...]\n")
        width, range_width = (
            max(map(len, known)),
            max((len(str(r)) for r in ranges.values()), default=0),
        )
        for key, default in known.items():
            print(
                f"  --{key:<{width}} = {default!r:<24} {str(ranges.get(key, '')):<{range_width}}"
                f" {comments[key][1]}".rstrip()
            )
        raise SystemExit(0)
    for flag, value in zip(argv, argv[1:]):  # --max_iters 5: the value is not a config file
        if (
            flag.startswith("--")
            and not isinstance(known.get(flag[2:], True), bool)
            and not value.startswith("--")
            and not os.path.isfile(value)
        ):
            raise SystemExit(
                f"error: {value!r} follows {flag} as its value would, but a value needs '=': "
                f"write {flag}={value} (anything else on the line is a config file)"
            )
    # set_by: key -> the file or flag that set it, for range errors
    config, set_by = dict(known), {}
    # files in order, then flags: a flag beats any file
    for path in (a for a in argv if not a.startswith("--")):
        for key, value in run_config_file(path).items():
            if key not in known:
                raise SystemExit(
                    f"error: {path}: unknown config key {key!r}; see --help for the keys"
                )
            config[key], set_by[key] = check_type(key, value, known[key], path), path
    for key, sep, text in (a[2:].partition("=") for a in argv if a.startswith("--")):
        # a bare --flag: True for a boolean
        if key not in known or not (sep or isinstance(known[key], bool)):
            raise SystemExit(
                f"error: --{key} needs a value: --{key}=..."
                if key in known
                else f"error: unknown flag --{key}; see --help for the keys"
            )
        try:
            value = ast.literal_eval(text or "True")
        except (ValueError, SyntaxError):
            value = text  # a bare string such as --encoding=p10
        if (
            isinstance(known[key], str)
            and not isinstance(value, str)
            and not (known[key] == "auto" and isinstance(value, bool))
        ):
            value = text
        config[key], set_by[key] = check_type(key, value, known[key], f"--{key}"), f"--{key}"
    for key, spec in ranges.items():  # after all files and flags: a bound may name another setting
        value, setting = (
            config[key],
            (
                f"error: {key} = {config[key]!r}"
                f" ({'from ' + set_by[key] if key in set_by else 'the default'})"
            ),
        )
        if isinstance(spec, str):
            # choices: plain words
            if not re.fullmatch(spec.replace(" | ", "|").replace(":N", r":\d+"), str(value)):
                raise SystemExit(f"{setting} is not one of {spec}")
            continue
        (low, high), named = (
            [config[b] if isinstance(b, str) else b for b in spec[:2]],
            ", ".join(f"{b} = {config[b]!r}" for b in spec[:2] if isinstance(b, str)),
        )
        if not (
            (spec.unless and config[spec.unless])
            or (
                (low <= value if spec.ends[0] == "[" else low < value)
                and (value <= high if spec.ends[1] == "]" else value < high)
            )
        ):
            raise SystemExit(
                f"{setting} is out of its range"
                f" {spec._replace(multiple_of=None)}{f' ({named})' if named else ''}"
            )
        if spec.multiple_of and value % config[spec.multiple_of]:
            raise SystemExit(
                f"{setting} must be a multiple of {spec.multiple_of} = {config[spec.multiple_of]!r}"
            )
    scope.update(config)
    return config
