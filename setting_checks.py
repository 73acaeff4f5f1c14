"""A setting's checks: its default's type, and its range in the script's RANGES: "[low, high)"
(a bound may name a setting), " unless SETTING", " multiple of SETTING"; or "a | b | cuda:N"."""

import ast
import os
import re

INTERVAL = re.compile(r"([\[(])([^,]+), ([^\])]+)([\])])(?: unless (\w+))?(?: multiple of (\w+))?")


def error(text):
    """A one-line error (under torchrun, local rank 0's)."""
    return SystemExit(f"error: {text}" if int(os.environ.get("LOCAL_RANK", 0)) == 0 else 1)


def check_type(key, value, default, where):
    """A value has its default's type; an int may be a float, a bool "auto"."""
    if isinstance(default, float) and type(value) is int:
        value = float(value)
    if type(value) is type(default) or default == "auto" and type(value) is bool:
        return value
    expects = f"{key} expects {type(default).__name__} (default {default!r})"
    raise error(f"{where}: {expects}, got {value!r}")


def read_ranges(source_file):
    """key -> range of a script's RANGES (read, not run)."""
    with open(source_file) as f:
        rest = f.read().partition("\nRANGES = dict(")[2]
    keywords = ast.parse("dict(" + rest).body[0].value.keywords if rest else []
    return {k.arg: ast.literal_eval(k.value) for k in keywords}


def out_of_range(value, spec, config):
    """What is wrong with a value for its range, or ""."""
    interval = INTERVAL.fullmatch(spec)
    if not interval:
        choices = spec.replace(" | ", "|").replace(":N", r":\d+")
        return "" if re.fullmatch(choices, str(value)) else f"is not one of {spec}"
    left, *bounds, right, unless, multiple = interval.groups()
    low, high = (config[b] if b in config else float(b) for b in bounds)
    above_low = low <= value if left == "[" else low < value
    below_high = value <= high if right == "]" else value < high
    if not (above_low and below_high or unless and config[unless]):
        named = ", ".join(f"{b} = {config[b]!r}" for b in bounds if b in config)
        return f"is out of its range {spec.partition(' multiple')[0]}" + (named and f" ({named})")
    if multiple and value % config[multiple]:
        return f"must be a multiple of {multiple} = {config[multiple]!r}"
    return ""
