"""The reference stays one a learner reads in a sitting: a short README, the core files within their budget, a small
tools/ and config/, data flowing one way between the top-level modules (no import circle), and no machine's /tmp/
paths in the docs."""
import ast
import glob
import os
import subprocess

from conftest import ROOT

# The files a learner reads, and their budgets in characters (nanoGPT's train.py is 14,500).
BUDGET = {"train.py": 16_000, "sample.py": 8_000, "tokenize_numbers.py": 15_000,
          "configurator.py": 5_000, "model.py": 14_000, "batching.py": 10_000}


def characters(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return len(f.read())


def reference_files():
    """Every tracked .py file outside tests/ and dev/."""
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert tracked, "not a git checkout"
    return [f for f in tracked if not f.startswith(("tests/", "dev/"))]


def test_the_readme_reads_in_one_sitting():
    assert os.path.getsize(os.path.join(ROOT, "README.md")) <= 12_000


def test_the_files_a_learner_reads_stay_within_their_budget():
    over = {f: characters(f) for f, budget in BUDGET.items() if characters(f) > budget}
    assert not over, f"over budget (characters): {over}"


def test_no_code_is_hidden_to_meet_the_budgets():
    files = glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "prepare", "*.py"))
    # 310,000 once the core was distilled; your own data at scale (a reader of columns kept on disk,
    # eval's baselines, sample.py in your units) brought it to 361,000
    assert sum(characters(f) for f in files) <= 365_000


def test_no_line_of_the_reference_passes_100_characters():
    long = [f"{f}:{n}" for f in reference_files()
            for n, line in enumerate(open(os.path.join(ROOT, f), encoding="utf-8"), 1)
            if len(line.rstrip("\n")) > 100]
    assert not long, f"{len(long)} lines over 100 characters (ruff format helps): {long[:10]}"


def test_tools_and_config_hold_only_what_users_run():
    tracked = subprocess.run(["git", "ls-files", "tools", "config"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert tracked, "not a git checkout"
    assert len([f for f in tracked if f.startswith("tools/")]) <= 8
    assert len([f for f in tracked if f.startswith("config/")]) <= 26


def imports(path, everything=False):
    """The top-level modules of this repository a file imports, at any depth of it (everything: any name)."""
    tree = ast.parse(open(os.path.join(ROOT, path), encoding="utf-8").read())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return names if everything else {name for name in names if os.path.exists(os.path.join(ROOT, f"{name}.py"))}


def test_data_flows_one_way_between_the_top_level_modules():
    graph = {os.path.basename(p)[:-3]: imports(os.path.basename(p)) for p in glob.glob(os.path.join(ROOT, "*.py"))}

    def reaches(start, goal, seen=()):
        return any(n == goal or (n not in seen and reaches(n, goal, seen + (n,))) for n in graph.get(start, ()))
    circles = [m for m in graph if reaches(m, m)]
    assert not circles, {m: graph[m] for m in circles}
    assert not graph["model"] & {"dataset", "train", "sample", "eval"}  # the network knows nothing of files or runs
    assert not graph["tokenize_numbers"] & {"model", "train", "sample", "eval", "batching"}
    for module in graph:  # the reference never reaches into the maintainers' tools or the study
        assert not imports(f"{module}.py", everything=True) & {"tools", "dev"}, module


def test_no_doc_names_a_path_under_tmp():
    docs = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert [d for d in docs if "/tmp/" in open(os.path.join(ROOT, d), encoding="utf-8").read()] == []
