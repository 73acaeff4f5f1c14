"""What the docs give a user holds: every relative link (file and #anchor) resolves, every section
of docs/decisions.md the code cites exists, every command names a script and flags it takes, the
README's Tests command is the one CI runs and its figures match their source, and every arithmetic
example is exact."""
import ast
import functools
import glob
import json
import os
import re
import shlex
from decimal import Decimal

from conftest import ROOT, read

from configurator import defaults


def in_root(*patterns):
    paths = [glob.glob(os.path.join(ROOT, pattern), recursive=True) for pattern in patterns]
    return sorted(os.path.relpath(p, ROOT) for p in sum(paths, []))


GUIDES = ["README.md", "prepare/README.md", "dev/README.md", *in_root("docs/*.md")]
DOCS = GUIDES + in_root("dev/results/**/*.md")  # every report of the study too
NOTEBOOK = "notebooks/xval_in_15_minutes.ipynb"
CONFIGURED = "configure(globals(), __file__)"


@functools.cache
def prose(path):
    """A doc's text outside code blocks (which hold no links and show model output)."""
    text = read(path)
    if path.endswith(".ipynb"):  # its markdown cells
        cells = json.loads(text)["cells"]
        text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.sub(r"```.*?```", "", text, flags=re.S)


@functools.cache
def anchors(path):
    """The anchors GitHub gives the headings of a markdown file."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", prose(path), flags=re.M)}


def test_every_relative_link_of_the_docs_resolves():
    broken = []
    for doc in [*DOCS, NOTEBOOK]:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(doc)):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(os.path.join(ROOT, path)):
                broken.append(f"{doc}: {target}")
            elif anchor and (not path.endswith(".md") or anchor not in anchors(path)):
                broken.append(f"{doc}: {target}")
    assert not broken, f"links that do not resolve: {broken}"


def test_every_decision_the_code_cites_is_a_section_of_docs_decisions():
    sources = in_root("*.py", "*/*.py", "*/*.md", "README.md")
    cited = {(p, a) for p in sources for a in re.findall(r"decisions\.md#([\w-]+)", read(p))}
    assert cited, "no citation of docs/decisions.md found"
    missing = sorted((p, a) for p, a in cited if a not in anchors("docs/decisions.md"))
    assert not missing, f"cited sections missing from docs/decisions.md: {missing}"


def test_the_readme_tests_command_is_the_one_ci_runs():
    ci = [line for line in read(".ci/run").splitlines() if line.startswith("python3 -m venv")]
    assert len(ci) == 1 and ci[0] in read("README.md").splitlines()


# an arithmetic example: numbers joined by + - * and brackets, "=", the written answer
EXPRESSION = re.compile(r"(?<![\w.=-])([-(]*\d[-+*().0-9]*[-+*]\(?\d[-+*().0-9]*)"
                        r"=(-?\d[0-9.]*\d|-?\d)(?![\w.])")


def test_every_arithmetic_example_of_the_docs_is_exact():
    wrong = []
    for doc in [*DOCS, "prepare/arithmetic.py", "config/quickstart.py"]:
        for lhs, rhs in EXPRESSION.findall(prose(doc)):
            # an example inside brackets: (0.1*0.2=0.02)
            lhs = lhs[lhs.count("(") - lhs.count(")"):]
            decimals = re.sub(r"\d+\.?\d*", lambda m: f"Decimal('{m.group()}')", lhs)
            exact = eval(decimals, {"Decimal": Decimal})
            if exact != Decimal(rhs):
                wrong.append(f"{doc}: {lhs} is {exact}, written {rhs}")
    assert not wrong


# ---------------------------------------------------------------- the docs' commands

def code_lines(doc):
    """The lines of a markdown file's code: its fenced and indented blocks and its inline code."""
    text = read(doc).replace("\\\n", " ")
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    start = r"^ {4,}((?:python3?|torchrun|sbatch|bash|\./)\s.*)$"
    indented = re.findall(start, outside, flags=re.M)
    inline = [s.replace("\n", " ") for s in re.findall(r"`([^`]+)`", outside)]
    return [line for b in blocks for line in b.splitlines()] + indented + inline


@functools.cache
def commands(doc):
    """(script, its arguments) of every `python X.py ...`, `torchrun ... X.py ...`, `bash X.sh ...`,
    `./X.sh ...` and `sbatch ... X.sh ...` in a doc's code."""
    found = []
    for line in code_lines(doc):
        for part in re.split(r"&&|\|\||[|;]", re.sub(r"\s#.*", "", line)):
            try:
                words = shlex.split(part)
            except ValueError:  # an inline command cut by a line break mid-quote
                words = part.split()
            start = next((i for i, w in enumerate(words) if re.fullmatch(r"\./\S+\.sh", w)
                          or w in ("python", "python3", "torchrun", "sbatch", "bash")), None)
            if start is None or words[start + 1:start + 2] in (["-m"], ["-c"]):
                continue
            script = next((w for w in words[start:] if w.endswith((".py", ".sh"))), None)
            if script:
                found.append((script.removeprefix("./"), words[words.index(script) + 1:]))
    return found


@functools.cache
def parse(path):
    return ast.parse(read(path))


def local_modules(path):
    """The repository's files that a script imports (its own folder, then the top level)."""
    names = set()
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    folders = (os.path.dirname(path), "")
    paths = [os.path.join(folder, f"{n}.py") for n in names for folder in folders]
    return [p for p in paths if os.path.exists(os.path.join(ROOT, p))]


@functools.cache
def options(path):
    """The --options a file's parser declares (add_argument, or a helper named add)."""
    found = set()
    for n in ast.walk(parse(path)):
        if isinstance(n, ast.Call) and (getattr(n.func, "attr", "") == "add_argument"
                                        or getattr(n.func, "id", "") == "add"):
            found |= {a.value[2:] for a in n.args
                      if isinstance(a, ast.Constant) and str(a.value).startswith("--")}
    return found


@functools.cache
def flags(script):
    """The --flags a script takes: its settings (configurator), or its parser's options."""
    source = read(script)
    if CONFIGURED in source or "configure(defaults(TRAIN), TRAIN" in source:
        known = set(defaults(os.path.join(ROOT, script)))
        # tools/bench.py: its own settings; the rest goes to train.py
        if "OWN = {" in source:
            own = next(n.value for n in parse(script).body
                       if isinstance(n, ast.Assign) and n.targets[0].id == "OWN")
            known |= set(ast.literal_eval(own)) | set(defaults(os.path.join(ROOT, "train.py")))
        return known | {"help"}
    return set().union(*map(options, [script, *local_modules(script)])) | {"help"}


def mistakes(script, args):
    """What of a command names no script, no flag or no config file the script takes."""
    if not os.path.isfile(os.path.join(ROOT, script)):
        return [f"{script}: no such script"]
    # a shell script's words (stages, lanes) are the labels of its `case`
    if script.endswith(".sh"):
        return [f"{script} {a}" for a in args if re.fullmatch(r"\w+", a)
                and not re.search(rf"[(|\s]{a}[|)]", read(script))]
    wrong = [f"{script} {a}" for a in args
             if a.startswith("--") and a[2:].partition("=")[0] not in flags(script)]
    return wrong + [f"{script} {a}: no such file" for a in args
                    if re.fullmatch(r"[\w/]+\.py", a) and not os.path.isfile(os.path.join(ROOT, a))]


def test_every_command_of_the_docs_names_a_script_and_flags_it_takes():
    wrong = [f"{doc}: {m}" for doc in DOCS for script, args in commands(doc)
             for m in mistakes(script, args)]
    assert not wrong


def test_the_docs_commands_are_found():
    assert {"train.py", "sample.py", "eval.py"} <= {s for s, _ in commands("README.md")}
    assert {"dev/summarize.py", "dev/claims_cpu.sh", "dev/reproduce.sh"} <= {
        s for s, _ in commands("dev/README.md")}
    assert {"tools/curves.py", "tools/slurm.sh"} <= {s for d in DOCS for s, _ in commands(d)}


# ---------------------------------------------------------------- the README's figures

def cases(path):
    """How many tests a test file's functions make, each parametrize multiplying its count."""
    count = 0
    for node in parse(path).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            n = 1
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize"):
                    n *= len(d.args[1].elts)
            count += n
    return count


def test_the_readme_counts_the_tests_skipped_without_a_gpu():
    phrase = r"(\d+) skipped for want of a GPU \(the (\d+) of\s+`tests/test_cuda.py`"
    skipped, in_cuda = map(int, re.search(phrase, read("README.md")).groups())
    # a test elsewhere that skips its CUDA case
    skip = r"^ +pytest\.skip\(\"needs a CUDA device\"\)"
    elsewhere = sum(len(re.findall(skip, read(t), flags=re.M))
                    for t in in_root("tests/*.py") if "test_cuda" not in t)
    assert in_cuda == cases("tests/test_cuda.py") and skipped == in_cuda + elsewhere


def test_the_readme_and_the_study_name_the_same_cpu_kernels_for_the_quickstart():
    readme, study = (re.sub(r"\s+", " ", read(d)) for d in ("README.md", "dev/README.md"))
    phrase = r"digits were measured with torch's (\w+) kernels"
    said = [re.findall(phrase, readme), re.findall(phrase, study)]
    assert said[0] and said[0] == said[1], said
    assert not re.search(r"quickstart[^.]*AVX2|AVX2[^.]*quickstart", study)
    assert "AVX2" not in read("README.md")


def test_the_readme_names_the_tools_reports_folder_and_each_report_is_cited():
    files = read("README.md").partition("## The files")[2].partition("\n## ")[0]
    assert "[`results/`](results/)" in files and "`out/`" in files
    docs = "".join(read(d) for d in GUIDES)
    for report in in_root("results/*.md"):
        assert report in docs, report
