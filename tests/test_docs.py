"""The docs' links and commands resolve; their arithmetic and figures hold."""
import ast
import functools
import json
import os
import re
import shlex
from decimal import Decimal

from conftest import ROOT, in_root, read

from configurator import defaults


GUIDES = ["README.md", "prepare/README.md", "dev/README.md", *in_root("docs/*.md")]
DOCS = GUIDES + in_root("dev/results/**/*.md")
NOTEBOOK = "notebooks/xval_in_15_minutes.ipynb"


@functools.cache
def prose(path):
    """A doc's text outside code blocks (a notebook's markdown cells)."""
    text = read(path)
    if path.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.sub(r"```.*?```", "", text, flags=re.S)


@functools.cache
def anchors(path):
    """The anchors GitHub gives the headings of a markdown file."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", prose(path), flags=re.M)}


def test_every_relative_link_and_cited_decision_resolves():
    broken = []
    for doc in [*DOCS, NOTEBOOK]:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(doc)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(os.path.join(ROOT, path)) or anchor and (
                    not path.endswith(".md") or anchor not in anchors(path)):
                broken.append(f"{doc}: {target}")
    assert not broken, f"links that do not resolve: {broken}"
    sources = in_root("*.py", "*/*.py", "*/*.md", "README.md")
    cited = {(p, a) for p in sources for a in re.findall(r"decisions\.md#([\w-]+)", read(p))}
    missing = sorted((p, a) for p, a in cited if a not in anchors("docs/decisions.md"))
    assert cited and not missing, f"cited sections missing from docs/decisions.md: {missing}"


# an arithmetic example: numbers joined by + - * and brackets, "=", the written answer
EXPRESSION = re.compile(r"(?<![\w.=-])([-(]*\d[-+*().0-9]*[-+*]\(?\d[-+*().0-9]*)=(-?\d[0-9.]*\d|-?\d)(?![\w.])")


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


# -- the docs' commands
def code_lines(doc):
    """A markdown file's fenced and indented code blocks, by line, and its inline code."""
    text = read(doc).replace("\\\n", " ")
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    start = r"^ {4,}((?:python3?|torchrun|sbatch|bash|\./)\s.*)$"
    indented = re.findall(start, outside, flags=re.M)
    inline = [s.replace("\n", " ") for s in re.findall(r"`([^`]+)`", outside)]
    return [line for b in blocks for line in b.splitlines()] + indented + inline


@functools.cache
def commands(doc):
    """(script, its arguments) of every python, torchrun, bash, sbatch or ./X.sh command."""
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


def local_modules(path):
    """The repository's files a script imports (its own folder, then the top level)."""
    names = set()
    for node in ast.walk(ast.parse(read(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    paths = [os.path.join(folder, f"{n}.py") for n in names for folder in (os.path.dirname(path), "")]
    return [p for p in paths if os.path.exists(os.path.join(ROOT, p))]


def options(path):
    """The --options a file's parser declares (add_argument, or a helper named add)."""
    return {a.value[2:] for n in ast.walk(ast.parse(read(path))) if isinstance(n, ast.Call)
            and (getattr(n.func, "attr", "") == "add_argument" or getattr(n.func, "id", "") == "add")
            for a in n.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")}


@functools.cache
def flags(script):
    """The --flags a script takes: its settings (configurator), or its parser's options."""
    source = read(script)
    if "configure(globals(), __file__)" not in source and "configure(defaults(TRAIN)" not in source:
        return set().union(*map(options, [script, *local_modules(script)])) | {"help"}
    known = set(defaults(os.path.join(ROOT, script))) | {"help"}
    # tools/bench.py: its own settings; the rest goes to train.py
    own = re.search(r"^OWN = (\{.*\})$", source, flags=re.M)
    if own:
        known |= set(ast.literal_eval(own[1])) | set(defaults(os.path.join(ROOT, "train.py")))
    return known


def mistakes(script, args):
    """The script, flags and config files of a command that do not exist."""
    if not os.path.isfile(os.path.join(ROOT, script)):
        return [f"{script}: no such script"]
    # a shell script's words (stages, lanes) are the labels of its `case`
    if script.endswith(".sh"):
        return [f"{script} {a}" for a in args if re.fullmatch(r"\w+", a)
                and not re.search(rf"[(|\s]{a}[|)]", read(script))]
    wrong = [f"{script} {a}" for a in args if a.startswith("--") and a[2:].partition("=")[0] not in flags(script)]
    return wrong + [f"{script} {a}: no such file" for a in args
                    if re.fullmatch(r"[\w/]+\.py", a) and not os.path.isfile(os.path.join(ROOT, a))]


def test_every_command_of_the_docs_names_a_script_and_flags_it_takes():
    found = {doc: {s for s, _ in commands(doc)} for doc in DOCS}
    assert {"train.py", "sample.py", "eval.py"} <= found["README.md"]
    assert {"dev/summarize.py", "dev/claims_cpu.sh", "dev/reproduce.sh"} <= found["dev/README.md"]
    assert {"tools/curves.py", "tools/slurm.sh"} <= set().union(*found.values())
    wrong = [f"{doc}: {m}" for doc in DOCS for script, args in commands(doc) for m in mistakes(script, args)]
    assert not wrong
    ci = [line for line in read(".ci/run").splitlines() if line.startswith("python3 -m venv")]
    assert len(ci) == 1 and ci[0] in read("README.md").splitlines()


# -- the README's figures
def cases(path):
    """How many tests a test file makes, each parametrize multiplying."""
    count = 0
    for node in ast.parse(read(path)).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            n = 1
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize"):
                    n *= len(d.args[1].elts)
            count += n
    return count


def test_the_readme_counts_the_gpu_tests_and_names_the_cpu_kernels_and_every_report():
    phrase = r"(\d+) skipped for want of a GPU \(the (\d+) of\s+`tests/test_cuda.py`"
    skipped, in_cuda = map(int, re.search(phrase, read("README.md")).groups())
    # and the tests elsewhere whose CUDA case is marked to skip
    elsewhere = sum(len(re.findall(r"marks=CUDA\)", read(t))) for t in in_root("tests/*.py") if "cuda" not in t)
    assert in_cuda == cases("tests/test_cuda.py") and skipped == in_cuda + elsewhere
    readme, study = (re.sub(r"\s+", " ", read(d)) for d in ("README.md", "dev/README.md"))
    phrase = r"digits were measured with torch's (\w+) kernels"
    said = re.findall(phrase, readme)
    assert said and said == re.findall(phrase, study)
    assert not re.search(r"quickstart[^.]*AVX2|AVX2[^.]*quickstart", study)
    assert "AVX2" not in readme
    files = read("README.md").partition("## The files")[2].partition("\n## ")[0]
    assert "[`results/`](results/)" in files and "`out/`" in files
    docs = "".join(read(d) for d in GUIDES)
    assert [r for r in in_root("results/*.md") if r not in docs] == []
