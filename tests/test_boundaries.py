"""Each module knows only its own; the commands the docs show name scripts and flags that exist."""
import ast
import glob
import os
import re
import shlex

import pytest
from conftest import RANGED, ROOT

from configurator import configure, defaults
from setting_checks import read_ranges

DOCS = ["README.md", *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))),
        "dev/README.md"]
CONFIGURED = "configure(globals(), __file__)"


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def scripts(*folders):
    return sorted(os.path.relpath(p, ROOT) for folder in folders for p in glob.glob(os.path.join(ROOT, folder, "*.py")))


# ---------------------------------------------------------------- settings and their ranges

def test_the_configurator_names_no_script_and_no_setting():
    source = read("configurator.py") + read("setting_checks.py")
    names = {os.path.basename(p) for p in scripts(".", "tools", "dev", "prepare")} - {"configurator.py", "setting_checks.py"}
    assert not [n for n in names if n in source]
    words = {w for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             for w in re.findall(r"\w+", n.value)}
    assert not words & set().union(*(read_ranges(os.path.join(ROOT, s)) for s in RANGED))


@pytest.mark.parametrize("script", RANGED)
def test_a_scripts_ranges_follow_its_settings_and_cover_every_number(script):
    settings, ranges = defaults(os.path.join(ROOT, script)), read_ranges(os.path.join(ROOT, script))
    # only settings, in their order
    assert list(ranges) == [k for k in settings if k in ranges]
    numeric = [k for k, v in settings.items() if type(v) in (int, float)]
    # a number the script gives no range is at least 0
    for key in [k for k in numeric if k not in ranges][:3]:
        with pytest.raises(SystemExit, match=r"= -1(\.0)? \(from --" + key + r"\) is out of its range \[0, inf\)"):
            configure(dict(settings), os.path.join(ROOT, script), [f"--{key}=-1"])
    if ranges:
        assert read(script).index("# -- end config\n") < read(script).index("\nRANGES = dict(")


def test_every_script_of_the_reference_and_tools_that_has_ranges_is_checked():
    have = [s for s in scripts(".", "tools") if "\nRANGES = dict(" in read(s)]
    assert set(have) <= set(RANGED)


def test_a_range_the_script_gives_is_what_help_prints_and_what_is_checked(tmp_path, capsys):
    script = tmp_path / "tiny.py"
    script.write_text('"""A script."""\n# -- config\nn = 3  # a count\nlow = 1\nkind = "a"\n# -- end config\n'
                      'RANGES = dict(n="[low, 10) multiple of low", kind="a | b")\n')
    with pytest.raises(SystemExit):
        configure(defaults(script), str(script), ["--help"])
    assert re.search(r"--n += 3 +\[low, 10\) multiple of low a count", capsys.readouterr().out)
    assert configure(defaults(script), str(script), ["--n=4", "--low=2"])["n"] == 4
    for args, message in ((["--n=10"], "n = 10 (from --n) is out of its range [low, 10) (low = 1)"),
                          (["--low=2"], "n = 3 (the default) must be a multiple of low = 2"),
                          (["--kind=c"], "kind = 'c' (from --kind) is not one of a | b")):
        with pytest.raises(SystemExit, match=re.escape(f"error: {message}")):
            configure(defaults(script), str(script), args)


# ---------------------------------------------------------------- what belongs where

def test_every_function_of_the_reference_has_a_user_in_it():
    known = set()
    sources = {s: read(s) for s in scripts(".", "tools", "prepare")}
    alone = []
    for path in scripts("."):
        for node in ast.parse(sources[path]).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                own = sources[path].replace(f"def {node.name}(", "", 1).replace(f"class {node.name}", "", 1)
                if not any(re.search(rf"\b{node.name}\b", own if s == path else text) for s, text in sources.items()):
                    alone.append((path, node.name))
    assert alone == sorted(known), "used by no script of the reference (only by dev/ or tests?)"


def test_saved_predictions_lives_in_dev():
    assert "def saved_predictions(" in read("dev/predictions.py")
    assert "saved_predictions" not in read("eval.py")


@pytest.mark.parametrize("script", [s for s in scripts("tools") if CONFIGURED in read(s)])
def test_each_tools_default_output_is_under_out(script):
    settings = defaults(os.path.join(ROOT, script))
    paths = {k: v for k, v in settings.items() if k in ("out", "record", "out_dir")}
    assert paths and all(v.startswith("out/") for v in paths.values()), paths


def test_the_readme_names_the_tools_reports_folder_and_each_report_is_cited():
    files = read("README.md").partition("## The files")[2].partition("\n## ")[0]
    assert "[`results/`](results/)" in files and "`out/`" in files
    docs = "".join(read(d) for d in DOCS)
    for report in glob.glob(os.path.join(ROOT, "results", "*.md")):
        assert f"results/{os.path.basename(report)}" in docs, report


# ---------------------------------------------------------------- the docs' commands

def code_lines(doc):
    """The lines of a markdown file's code: its fenced and indented blocks and its inline code."""
    text = read(doc).replace("\\\n", " ")
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    indented = re.findall(r"^ {4,}((?:python3?|torchrun|sbatch|bash|\./)\s.*)$", prose, flags=re.M)
    inline = [s.replace("\n", " ") for s in re.findall(r"`([^`]+)`", prose)]
    return [line for b in blocks for line in b.splitlines()] + indented + inline


def commands(doc):
    """(script, its arguments) of every `python X.py ...`, `torchrun ... X.py ...`, `bash X.sh ...`,
    `./X.sh ...` and `sbatch ... X.sh ...` in a doc's code."""
    found = []
    for line in code_lines(doc):
        for part in re.split(r"&&|\|\||[|;]", re.sub(r"\s#.*", "", line)):
            try:
                words = shlex.split(part)
            # an inline command cut by a line break mid-quote
            except ValueError:
                words = part.split()
            start = next((i for i, w in enumerate(words) if w in ("python", "python3", "torchrun", "sbatch", "bash")
                          or re.fullmatch(r"\./\S+\.sh", w)), None)
            if start is None or words[start + 1:start + 2] in (["-m"], ["-c"]):
                continue
            script = next((w for w in words[start:] if w.endswith((".py", ".sh"))), None)
            if script:
                found.append((script.removeprefix("./"), words[words.index(script) + 1:]))
    return found


def local_modules(path):
    """The repository's files that a script imports (its own folder, then the top level)."""
    names = set()
    for node in ast.walk(ast.parse(read(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    folders = (os.path.dirname(path), "")
    return [p for n in names for p in (os.path.join(f, f"{n}.py") for f in folders) if os.path.exists(os.path.join(ROOT, p))]


def flags(script):
    """The --flags a script takes: its settings (configurator), or its parser's options."""
    source = read(script)
    if CONFIGURED in source or "configure(defaults(TRAIN), TRAIN" in source:
        known = set(defaults(os.path.join(ROOT, script)))
        # tools/bench.py: its own settings; the rest goes to train.py
        if "OWN = {" in source:
            own = next(n.value for n in ast.parse(source).body if isinstance(n, ast.Assign) and n.targets[0].id == "OWN")
            known |= set(ast.literal_eval(own)) | set(defaults(os.path.join(ROOT, "train.py")))
        return known | {"help"}
    options = {a.value for f in [script, *local_modules(script)] for n in ast.walk(ast.parse(read(f)))
               if isinstance(n, ast.Call)
               and (getattr(n.func, "attr", "") == "add_argument" or getattr(n.func, "id", "") == "add")
               for a in n.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")}
    return {o[2:] for o in options} | {"help"}


@pytest.mark.parametrize("doc", DOCS)
def test_every_command_of_the_docs_names_a_script_and_flags_it_takes(doc):
    found = commands(doc)
    assert found or doc.startswith("docs/"), f"{doc}: no command found"
    wrong = []
    for script, args in found:
        if not os.path.isfile(os.path.join(ROOT, script)):
            wrong.append(f"{script}: no such script")
        elif script.endswith(".sh"):
            # a shell script's words (stages, lanes) are the labels of its `case`
            wrong += [f"{script} {a}" for a in args if re.fullmatch(r"\w+", a)
                      and not re.search(rf"[(|\s]{a}[|)]", read(script))]
        else:
            known = flags(script)
            wrong += [f"{script} {a}" for a in args if a.startswith("--") and a[2:].partition("=")[0] not in known]
            # a config file it is given
            wrong += [f"{script} {a}: no such file" for a in args
                      if re.fullmatch(r"[\w/]+\.py", a) and not os.path.isfile(os.path.join(ROOT, a))]
    assert not wrong, f"{doc}: {wrong}"


def test_the_docs_commands_are_found():
    found = {s for d in DOCS for s, _ in commands(d)}
    assert {"train.py", "sample.py", "eval.py", "tools/curves.py", "dev/summarize.py", "dev/claims_cpu.sh",
            "dev/reproduce.sh", "tools/slurm.sh"} <= found


# ---------------------------------------------------------------- what the docs say of the tests and the CPU

def cases(path):
    """How many tests a test file's functions make, each parametrize multiplying its function's count."""
    count = 0
    for node in ast.parse(read(path)).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            n = 1
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize"):
                    n *= len(d.args[1].elts)
            count += n
    return count


def test_the_readme_counts_the_tests_skipped_without_a_gpu():
    skipped, in_cuda = map(int, re.search(r"(\d+) skipped for want of a GPU \(the (\d+) of\s+`tests/test_cuda.py`",
                                          read("README.md")).groups())
    # a test elsewhere that skips its CUDA case
    elsewhere = sum(len(re.findall(r"^ +pytest\.skip\(\"needs a CUDA device\"\)", read(t), flags=re.M))
                    for t in scripts("tests") if "test_cuda" not in t)
    assert in_cuda == cases("tests/test_cuda.py") and skipped == in_cuda + elsewhere


def test_the_readme_and_the_study_name_the_same_cpu_kernels_for_the_quickstart():
    said = [re.findall(r"digits were measured with torch's (\w+) kernels", re.sub(r"\s+", " ", read(d)))
            for d in ("README.md", "dev/README.md")]
    assert said[0] and said[0] == said[1], said
    study = re.sub(r"\s+", " ", read("dev/README.md"))
    assert not re.search(r"quickstart[^.]*AVX2|AVX2[^.]*quickstart", study) and "AVX2" not in read("README.md")
