"""The reference stays one a learner reads in a sitting: a short README, the core files within their budget, a small
tools/ and config/, data flowing one way between the top-level modules (no import circle), and no machine's /tmp/
paths in the docs."""
import ast
import glob
import os
import subprocess

from conftest import ROOT

CORE = ("tokenize_numbers.py", "model.py", "batching.py", "train.py", "sample.py")


def lines(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return sum(1 for _ in f)


def test_the_readme_reads_in_one_sitting():
    assert os.path.getsize(os.path.join(ROOT, "README.md")) <= 12_000


def test_the_files_a_learner_reads_stay_within_their_budget():
    assert lines("tokenize_numbers.py") <= 450
    assert sum(map(lines, CORE)) <= 1500, {f: lines(f) for f in CORE}


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
