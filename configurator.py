"""
Configuration the nanoGPT way: a script declares its settings as module-level values with inline
comments, then calls configure(globals(), __file__). Positional arguments are config files (plain
Python, executed in order), then --key=value overrides. An unknown key, a value of the wrong type
or out of its range (RANGES below) is an error that names the file or flag; --help lists every key
with its default, range and comment.

    python train.py config/era5_xval.py --learning_rate=1e-4 --compile=False
"""
import ast
import os
import re
import sys
import traceback

# The range of every numeric setting, and the values some strings may take, per script; checked
# once every config file and flag is applied. "[0, 1)" means 0 ≤ x < 1 and "[1, inf)" x ≥ 1; a
# bound may name another setting; "multiple of KEY" and "unless KEY" (no check while KEY is true)
# may follow. "a | b | cuda:N" lists the allowed strings (N: any index).
_SEED, _DEVICE = "[0, 4294967295]", "auto | cpu | mps | cuda | cuda:N"
RANGES = {
    "train.py": {
        "k": "[0, inf)", "n_layer": "[1, inf)", "n_head": "[1, inf)", "n_embd": "[1, inf) multiple of n_head",
        "block_size": "[1, inf)", "dropout": "[0, 1)", "mlm_probability": "(0, 1) unless causal",
        "num_loss_weight": "[0, inf)", "nmse_eps": "(0, inf)", "batch_size": "[1, inf)",
        "micro_batch_size": "[1, inf)", "pack_length": "[0, inf)", "max_iters": "[1, inf)",
        "learning_rate": "(0, inf)", "min_lr": "[0, learning_rate]", "warmup_iters": "[0, inf)",
        "weight_decay": "[0, inf)", "beta1": "[0, 1)", "beta2": "[0, 1)", "grad_clip": "[0, inf)",
        "eval_interval": "[1, inf)", "keep_every": "[0, inf)", "eval_batches": "[1, inf)", "log_interval": "[1, inf)",
        "seed": _SEED, "device": _DEVICE, "dtype": "auto | bfloat16 | float32", "num_head": "mse | gmm",
        "n_components": "[1, inf)",
    },
    "sample.py": {
        "show": "[0, inf)", "max_lines": "[0, inf)", "batch_size": "[1, inf)", "max_new_tokens": "[1, inf)",
        "temperature": "[0, inf)", "seed": _SEED, "device": _DEVICE, "spread": "std | quantiles | none",
        "gmm_generate": "sample | mean",
    },
    "eval.py": {"max_samples": "[0, inf)", "batch_size": "[1, inf)", "device": _DEVICE},
    "curves.py": {"max_samples": "[0, inf)"},
    "probe.py": {
        "n_train": "[folds, inf)", "n_test": "[1, inf)", "folds": "[2, inf)", "batch_size": "[1, inf)",
        "seed": _SEED, "device": _DEVICE,
    },
    "baselines.py": {
        "n_stations": "[1, inf)", "n_steps": "[2, inf)", "all_width": "[1, inf)", "all_layers": "[0, inf)",
        "single_width": "[1, inf)", "single_layers": "[0, inf)", "max_iters": "[1, inf)",
        "eval_interval": "[1, inf)", "batch_size": "[1, inf)", "all_batch_size": "[1, inf)",
        "learning_rate": "(0, inf)", "weight_decay": "[0, inf)", "max_samples": "[0, inf)", "seed": _SEED,
    },
}
_INTERVAL = re.compile(r"([\[(])(\S+), (\S+)([\])])(?: multiple of (\w+))?(?: unless (\w+))?")

_SETTING = re.compile(r"^(\w+)\s*=\s*(.+?)\s*(?:#\s*(.*))?$")


def _settings(source_file):
    """key -> (value as written, comment) for the settings between '# -- config' and '# -- end config'."""
    out, inside = {}, False
    with open(source_file) as f:
        for line in f:
            if line.startswith("# -- config"):
                inside = True
            elif line.startswith("# -- end config"):
                break
            elif inside and (m := _SETTING.match(line)):
                out[m.group(1)] = (m.group(2), m.group(3) or "")
    return out


def defaults(source_file):
    """The default value of every setting of a script, read from its source without running it."""
    return {key: ast.literal_eval(value) for key, (value, _) in _settings(source_file).items()}


def _check_type(key, value, default, where):
    """A value must have its default's type (an int is accepted where a float is expected)."""
    if default is None:
        return value
    if default == "auto" and isinstance(value, bool):  # an automatic setting may also be forced on or off
        return value
    if value is None:
        raise SystemExit(f"error: {where}: {key} expects {type(default).__name__} (default {default!r}), got None")
    if isinstance(default, bool) or isinstance(value, bool):
        if not (isinstance(default, bool) and isinstance(value, bool)):
            raise SystemExit(f"error: {where}: {key} expects {type(default).__name__}, got {value!r}")
        return value
    if isinstance(default, float) and isinstance(value, int):
        return float(value)
    if type(value) is not type(default):
        raise SystemExit(f"error: {where}: {key} expects {type(default).__name__} "
                         f"(default {default!r}), got {type(value).__name__} {value!r}")
    return value


def _check_range(key, spec, config, origin):
    """An error naming the key, its value (and where it was set) and its range unless config[key] lies in spec."""
    value = config[key]
    setting = f"{key} = {value!r} ({origin})"
    if "|" in spec:
        allowed = [re.escape(choice).replace(":N", r":\d+") for choice in spec.split(" | ")]
        if not re.fullmatch("|".join(allowed), str(value)):
            raise SystemExit(f"error: {setting} is not one of {spec}")
        return
    low_bracket, low, high, high_bracket, multiple_of, unless = _INTERVAL.fullmatch(spec).groups()
    if unless and config[unless]:
        return
    bounds = [config[b] if b in config else float(b) for b in (low, high)]
    inside = ((bounds[0] <= value if low_bracket == "[" else bounds[0] < value)
              and (value <= bounds[1] if high_bracket == "]" else value < bounds[1]))
    if not inside:
        named = ", ".join(f"{b} = {config[b]!r}" for b in (low, high) if b in config)
        raise SystemExit(f"error: {setting} is out of its range {spec.split(' multiple')[0]}"
                         + (f" ({named})" if named else ""))
    if multiple_of and value % config[multiple_of]:
        raise SystemExit(f"error: {setting} must be a multiple of {multiple_of} = {config[multiple_of]!r}")


def _run_config_file(path):
    """The names a config file defines; a file that cannot be read or run is an error naming it (and its line)."""
    namespace = {}
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        exec(compile(source, path, "exec"), namespace)
    except FileNotFoundError:
        raise SystemExit(f"error: config file {path} not found")
    except IsADirectoryError:
        raise SystemExit(f"error: config file {path} is a directory; expected a Python file of settings")
    except UnicodeDecodeError as e:
        raise SystemExit(f"error: config file {path} is not UTF-8 text (byte {e.start})")
    except OSError as e:
        raise SystemExit(f"error: cannot read config file {path}: {e.strerror}")
    except SyntaxError as e:
        raise SystemExit(f"error: {path}:{e.lineno}: {e.msg}")
    except Exception as e:  # the file ran and failed: name its line
        lines = [frame.lineno for frame in traceback.extract_tb(e.__traceback__) if frame.filename == path]
        raise SystemExit(f"error: {path}:{lines[-1] if lines else '?'}: {type(e).__name__}: {e}")
    return namespace


def configure(scope, source_file, argv=None):
    """Apply config files and --key=value flags to the settings in `scope` (a globals() dict)."""
    argv = sys.argv[1:] if argv is None else argv
    comments = {key: comment for key, (_, comment) in _settings(source_file).items()}
    known = {k: scope[k] for k in comments}
    ranges = RANGES.get(os.path.basename(source_file), {})
    if "-h" in argv or "--help" in argv:
        print(f"usage: python {source_file.split('/')[-1]} [config.py ...] [--key=value ...]\n")
        width, range_width = max(len(k) for k in known), max(map(len, ranges.values()), default=0)
        for key, default in known.items():
            print(f"  --{key:<{width}} = {default!r:<24} {ranges.get(key, ''):<{range_width}} {comments[key]}".rstrip())
        raise SystemExit(0)
    config = dict(known)
    set_by = {}  # key -> the file or flag that set it, for range errors
    for arg in argv:
        if not arg.startswith("--"):  # a config file
            namespace = _run_config_file(arg)
            for key, value in namespace.items():
                if key.startswith("_") or key == "__builtins__" or callable(value) or type(value).__name__ == "module":
                    continue
                if key not in known:
                    raise SystemExit(f"error: {arg}: unknown config key {key!r}; see --help for the keys")
                config[key] = _check_type(key, value, known[key], arg)
                set_by[key] = arg
        else:
            key, sep, text = arg[2:].partition("=")
            if key not in known:
                raise SystemExit(f"error: unknown flag --{key}; see --help for the keys")
            if not sep:  # a bare --flag means True for a boolean setting
                if not isinstance(known[key], bool):
                    raise SystemExit(f"error: --{key} needs a value: --{key}=...")
                text = "True"
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text  # a bare string such as --encoding=p10
            if isinstance(known[key], str) and not isinstance(value, str) and not (known[key] == "auto" and isinstance(value, bool)):
                value = text
            config[key] = _check_type(key, value, known[key], f"--{key}")
            set_by[key] = f"--{key}"
    for key, spec in ranges.items():
        _check_range(key, spec, config, f"from {set_by[key]}" if key in set_by else "the default")
    scope.update(config)
    return config
