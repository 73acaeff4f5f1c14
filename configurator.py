"""Settings the nanoGPT way: a script declares them between '# -- config' and '# -- end config'
and calls configure(globals(), __file__); config files, then --key=value flags, override them."""

import ast
import os
import re
import sys
import traceback

from setting_checks import check_type, error, out_of_range, read_ranges
from util import run_main


def defaults(source_file, comments=False):
    """key -> default (or (default, comment)) of a script's settings (read, not run)."""
    with open(source_file) as f:
        block = f.read().partition("\n# -- config")[2].partition("\n# -- end config")[0]
    found = re.findall(r"^(\w+) *= *(.+?) *(?:# *(.*))?$", block, re.M)
    return {k: (ast.literal_eval(v), c) if comments else ast.literal_eval(v) for k, v, c in found}


def run_config_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            exec(compile(f.read(), path, "exec"), namespace := {})
    except OSError as e:
        raise error(f"config file {path}: {e.strerror}")
    except SyntaxError as e:
        raise error(f"{path}:{e.lineno}: {e.msg}")
    except Exception as e:
        lines = [t.lineno for t in traceback.extract_tb(e.__traceback__) if t.filename == path]
        raise error(f"{path}:{lines[-1] if lines else '?'}: {type(e).__name__}: {e}")
    return {
        k: v
        for k, v in namespace.items()
        if k[0] != "_" and not callable(v) and not isinstance(v, type(os))
    }


def configure(scope, source_file, argv=None):
    """Apply config files, then flags, to the settings in `scope`; check them."""
    argv = sys.argv[1:] if argv is None else argv
    comments = defaults(source_file, True)
    known = {k: scope[k] for k in comments}
    numbers = [k for k, v in known.items() if type(v) in (int, float)]
    ranges = {**dict.fromkeys(numbers, "[0, inf)"), **read_ranges(source_file)}
    if "-h" in argv or "--help" in argv:
        script = os.path.basename(source_file)
        lines = [f"usage: python {script} [config.py ...] [--key=value ...]\n"]
        width, range_width = max(map(len, known)), max(map(len, ranges.values()), default=0)
        for k, v in known.items():
            line = f"  --{k:<{width}} = {v!r:<24} {ranges.get(k, ''):<{range_width}}"
            lines.append(f"{line} {comments[k][1]}".rstrip())
        run_main(lambda: print("\n".join(lines), flush=True))
        raise SystemExit(0)
    for flag, value in zip(argv, argv[1:]):
        if flag[:2] == "--" and value[:2] != "--" and not os.path.isfile(value):
            if type(known.get(flag[2:], True)) is not bool:
                raise error(f"{value!r} after {flag}: write {flag}={value}")
    config, set_by = dict(known), {}
    for path in (a for a in argv if a[:2] != "--"):
        for key, value in run_config_file(path).items():
            if key not in known:
                raise error(f"{path}: unknown config key {key!r}; see --help for the keys")
            config[key], set_by[key] = check_type(key, value, known[key], path), path
    for key, sep, text in (a[2:].partition("=") for a in argv if a[:2] == "--"):
        if key not in known:
            raise error(f"unknown flag --{key}; see --help for the keys")
        if not sep and type(known[key]) is not bool:
            raise error(f"--{key} needs a value: --{key}=...")
        try:
            value = ast.literal_eval(text or "True")
        except (ValueError, SyntaxError):
            value = text
        # a string setting takes --out=1 as "1" ("auto" may be forced True/False)
        if isinstance(known[key], str) and not isinstance(value, str):
            value = value if known[key] == "auto" and type(value) is bool else text
        config[key], set_by[key] = check_type(key, value, known[key], f"--{key}"), f"--{key}"
    # after all files and flags, as a bound may name another setting
    for key, spec in ranges.items():
        if problem := out_of_range(config[key], spec, config):
            where = f"from {set_by[key]}" if key in set_by else "the default"
            raise error(f"{key} = {config[key]!r} ({where}) {problem}")
    scope.update(config)
    return config
