"""
Configuration the nanoGPT way: a script declares its settings as module-level values with inline
comments, then calls configure(globals(), __file__). Positional arguments are config files (plain
Python, executed in order), then --key=value overrides. An unknown key or a value of the wrong type
is an error that names the file or flag; --help lists every key with its default and comment.

    python train.py config/era5_xval.py --learning_rate=1e-4 --compile=False
"""
import ast
import re
import sys

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
    if default is None or value is None:
        return value
    if default == "auto" and isinstance(value, bool):  # an automatic setting may also be forced on or off
        return value
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


def configure(scope, source_file, argv=None):
    """Apply config files and --key=value flags to the settings in `scope` (a globals() dict)."""
    argv = sys.argv[1:] if argv is None else argv
    comments = {key: comment for key, (_, comment) in _settings(source_file).items()}
    known = {k: scope[k] for k in comments}
    if "-h" in argv or "--help" in argv:
        print(f"usage: python {source_file.split('/')[-1]} [config.py ...] [--key=value ...]\n")
        width = max(len(k) for k in known)
        for key, default in known.items():
            print(f"  --{key:<{width}} = {default!r:<24} {comments[key]}")
        raise SystemExit(0)
    config = dict(known)
    for arg in argv:
        if not arg.startswith("--"):  # a config file
            namespace = {}
            try:
                with open(arg) as f:
                    exec(compile(f.read(), arg, "exec"), namespace)
            except FileNotFoundError:
                raise SystemExit(f"error: config file {arg} not found")
            for key, value in namespace.items():
                if key.startswith("_") or key == "__builtins__" or callable(value) or type(value).__name__ == "module":
                    continue
                if key not in known:
                    raise SystemExit(f"error: {arg}: unknown config key {key!r}; see --help for the keys")
                config[key] = _check_type(key, value, known[key], arg)
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
    scope.update(config)
    return config
