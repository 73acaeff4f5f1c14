"""Each module knows only its own: the configurator no script, the reference nothing of tests/."""
import ast
import os
import re
from collections import Counter

import pytest
from conftest import RANGED, ROOT, in_root, read

from configurator import configure, defaults
from setting_checks import read_ranges


def test_the_configurator_names_no_script_and_no_setting():
    source = read("configurator.py") + read("setting_checks.py")
    names = {os.path.basename(p) for p in in_root("*.py", "tools/*.py", "dev/*.py", "prepare/*.py")}
    assert not [n for n in names - {"configurator.py", "setting_checks.py"} if n in source]
    words = {w for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.Constant) and isinstance(n.value, str)
             for w in re.findall(r"\w+", n.value)}
    assert not words & set().union(*(read_ranges(os.path.join(ROOT, s)) for s in RANGED))


@pytest.mark.parametrize("script", [s for s in in_root("*.py", "tools/*.py") if "\nRANGES = dict(" in read(s)])
def test_a_scripts_ranges_follow_its_settings_and_are_checked(script):
    settings, ranges = defaults(os.path.join(ROOT, script)), read_ranges(os.path.join(ROOT, script))
    assert script in RANGED and list(ranges) == [k for k in settings if k in ranges]
    assert read(script).index("# -- end config\n") < read(script).index("\nRANGES = dict(")


def test_a_range_the_script_gives_is_what_help_prints_and_what_is_checked(tmp_path, capsys):
    script = tmp_path / "tiny.py"
    script.write_text('"""A script."""\n# -- config\nn = 3  # a count\nlow = 1\nkind = "a"\n'
                      '# -- end config\n'
                      'RANGES = dict(n="[low, 10) multiple of low", kind="a | b")\n')
    with pytest.raises(SystemExit):
        configure(defaults(script), str(script), ["--help"])
    assert re.search(r"--n += 3 +\[low, 10\) multiple of low a count", capsys.readouterr().out)
    assert configure(defaults(script), str(script), ["--n=4", "--low=2"])["n"] == 4
    with pytest.raises(SystemExit, match=re.escape("n = 10 (from --n) is out of its range [low, 10) (low = 1)")):
        configure(defaults(script), str(script), ["--n=10"])


def test_every_function_of_the_reference_has_a_user_in_it():
    words = Counter()
    for path in in_root("*.py", "tools/*.py", "prepare/*.py"):
        words.update(re.findall(r"\w+", read(path)))
    # named nowhere but where it is defined
    alone = [(path, node.name) for path in in_root("*.py") for node in ast.parse(read(path)).body
             if isinstance(node, (ast.FunctionDef, ast.ClassDef))
             and not node.name.startswith("_") and words[node.name] < 2]
    assert alone == [], "used by no script of the reference (only by dev/ or tests?)"
    assert "def saved_predictions(" in read("dev/predictions.py")
    assert "saved_predictions" not in read("eval.py")


@pytest.mark.parametrize("script", [s for s in in_root("tools/*.py") if "configure(globals(), __file__)" in read(s)])
def test_each_tools_default_output_is_under_out(script):
    settings = defaults(os.path.join(ROOT, script))
    paths = {k: v for k, v in settings.items() if k in ("out", "record", "out_dir")}
    assert paths and all(v.startswith("out/") for v in paths.values()), paths
