"""The reference stays one a learner reads in a sitting: its size, its files' and functions'
lengths, what train.py and prepare/text.py pull in, the tests' size, a test file per module, a
short README, a small tools/ and config/, data flowing one way between the top-level modules."""
import ast
import functools
import glob
import os
import subprocess

from conftest import ROOT, read

# The files a learner reads, and their budgets in characters (nanoGPT's train.py is 14,500).
BUDGET = {"train.py": 13_729, "model.py": 12_022, "sample.py": 5_885, "tokenize_numbers.py": 2_308,
          "configurator.py": 4_146, "batching.py": 8_342}
# Ceilings: lower them as code is cut, never raise them. The aim is a reference of 270,000
# characters, own-data reading of 40,000 and tests no larger than the reference.
REFERENCE_BUDGET = 311_070  # every top-level .py and prepare/*.py
TEXT_BUDGET = 65_946  # prepare/text.py and the modules only it uses
TESTS_BUDGET = 359_494  # tests/*.py
FILE_BUDGET = 25_000
FUNCTION_LINES = 60
TRAIN_BUDGET = 110_000  # what train.py imports from the project, transitively


@functools.cache
def parse(path):
    return ast.parse(read(path))


def size(paths):
    return sum(len(read(p)) for p in paths)


def in_root(*patterns):
    paths = [p for pattern in patterns for p in glob.glob(os.path.join(ROOT, pattern))]
    return sorted(os.path.relpath(p, ROOT) for p in paths)


REFERENCE = in_root("*.py", "prepare/*.py")


def tracked(*patterns):
    files = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True)
    assert files.stdout, "not a git checkout"
    return files.stdout.split()


def imported_names(path):
    """Every module name a file imports, at any depth of it (lazy imports included)."""
    names = set()
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@functools.cache
def imports(path):
    """The project's files a file imports: top-level modules, and its siblings in prepare/."""
    found = set()
    for name in imported_names(path):
        sibling = os.path.join(os.path.dirname(path), name + ".py")
        candidates = (name.replace(".", "/") + ".py", sibling)
        found |= {os.path.normpath(c) for c in candidates if os.path.exists(os.path.join(ROOT, c))}
    return frozenset(found)


@functools.cache
def closure(path):
    """path and every project file it imports, transitively."""
    seen, todo = set(), [path]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += imports(current)
    return frozenset(seen)


def test_the_reference_stays_within_its_budget():
    total = size(REFERENCE)
    assert total <= REFERENCE_BUDGET, f"the reference is {total:,} characters"
    large = {f: len(read(f)) for f in REFERENCE if len(read(f)) > FILE_BUDGET}
    assert not large, f"files over {FILE_BUDGET:,} characters: {large}"
    over = {f: (len(read(f)), budget) for f, budget in BUDGET.items() if len(read(f)) > budget}
    assert not over, f"over budget (characters, budget): {over}"
    assert os.path.getsize(os.path.join(ROOT, "README.md")) <= 12_000, "README.md: 12,000 bytes"


def test_no_function_of_the_reference_passes_60_lines():
    long = []
    for path in REFERENCE:
        for node in ast.walk(parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    long.append(f"{path}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, f"functions over {FUNCTION_LINES} lines: {long}"


def is_script(path):
    """A file with an `if __name__ == "__main__":` block: where a command line starts."""
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for node in parse(path).body)


def writes_arrays(path):
    """A file that writes arrays: np.save*, open_memmap, tofile, or a write of an array's bytes."""
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            call = ast.unparse(node)
            if call.startswith(("np.save", "numpy.save")):
                return True
            if node.func.attr in ("tofile", "open_memmap"):
                return True
            if node.func.attr == "write" and ".tobytes()" in call:
                return True
    return False


def test_train_py_imports_only_what_training_runs():
    files = closure("train.py")
    assert size(files) <= TRAIN_BUDGET, f"train.py imports {size(files):,}: {sorted(files)}"
    assert "tokenize_fast.py" not in files
    # the tokenizer's command line, like every other, is a script outside train's imports
    scripts = sorted(f for f in files if f != "train.py" and is_script(f))
    assert not scripts, f"train.py imports the command lines of {scripts}"
    writers = sorted(f for f in files if writes_arrays(f))
    assert not writers, f"train.py imports the array writers of {writers}"


def test_reading_your_own_data_stays_within_its_budget():
    # the modules only prepare/text.py uses: those no file outside its imports imports too
    mine = closure("prepare/text.py")
    alone = sorted(mine - set().union(*(closure(f) for f in REFERENCE if f not in mine)))
    assert size(alone) <= TEXT_BUDGET, f"{alone} are {size(alone):,} characters"


def test_the_tests_stay_within_their_budget():
    tests = size(in_root("tests/*.py"))
    assert tests <= TESTS_BUDGET, f"tests/ is {tests:,} characters"


def has_test_file(path):
    module = os.path.basename(path)[:-3]
    names = [f"test_{module}.py"]
    if path.startswith("prepare/"):
        names.append(f"test_prepare_{module}.py")
    return any(os.path.exists(os.path.join(ROOT, "tests", n)) for n in names)


def test_every_module_has_a_test_file():
    missing = [path for path in REFERENCE if not has_test_file(path)]
    assert not missing, f"no tests/test_<module>.py for {missing}"


def test_no_line_of_the_reference_passes_100_characters():
    code = [f for f in tracked("*.py") if not f.startswith(("tests/", "dev/"))]  # and tools/
    long = [f"{path}:{n}" for path in code
            for n, line in enumerate(read(path).splitlines(), 1) if len(line) > 100]
    assert not long, f"{len(long)} lines over 100 characters (ruff format helps): {long[:10]}"


def test_tools_and_config_hold_only_what_users_run_and_no_doc_names_tmp():
    assert len(tracked("tools")) <= 8 and len(tracked("config")) <= 26
    assert [d for d in tracked("*.md") if "/tmp/" in read(d)] == []


def test_data_flows_one_way_between_the_top_level_modules():
    modules = [p for p in REFERENCE if "/" not in p]
    graph = {p: {f for f in imports(p) if "/" not in f} for p in modules}
    circles = [p for p in modules if any(p in closure(f) for f in graph[p])]
    assert not circles, {p: graph[p] for p in circles}
    # the network knows nothing of files or runs; the tokenizer nothing of training
    assert not closure("model.py") & {"dataset.py", "train.py", "sample.py", "eval.py"}
    training = {"model.py", "train.py", "sample.py", "eval.py", "batching.py"}
    assert not graph["tokenize_numbers.py"] & training
    for path in modules:  # the reference never reaches into the maintainers' tools or the study
        roots = {name.split(".")[0] for name in imported_names(path)}
        assert not roots & {"tools", "dev"}, path
