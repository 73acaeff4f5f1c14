"""
The documentation holds together: every relative link of the markdown files (every report of
dev/results/ included) resolves (file and #anchor), every docs/decisions.md section the code cites
exists, the README's Tests command is the one CI runs, and every arithmetic example written in the
docs is exact. The notebook's links too.
"""
import glob
import json
import os
import re
from decimal import Decimal

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKDOWN = glob.glob(os.path.join(ROOT, "docs/*.md"))
MARKDOWN += glob.glob(os.path.join(ROOT, "dev/results/**/*.md"), recursive=True)  # every report
DOCS = ["README.md", "prepare/README.md", *sorted(os.path.relpath(p, ROOT) for p in MARKDOWN)]
NOTEBOOK = "notebooks/xval_in_15_minutes.ipynb"


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def prose(path):
    """A doc's text outside code blocks (which hold no links and show model output)."""
    text = read(path)
    if path.endswith(".ipynb"):  # its markdown cells
        cells = json.loads(text)["cells"]
        text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.sub(r"```.*?```", "", text, flags=re.S)


def anchors(path):
    """The anchors GitHub gives the headings of a markdown file."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", prose(path), flags=re.M)}


@pytest.mark.parametrize("doc", DOCS + [NOTEBOOK])
def test_every_relative_link_of_the_docs_resolves(doc):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(doc)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(os.path.join(ROOT, path)):
            broken.append(target)
        elif anchor and (not path.endswith(".md") or anchor not in anchors(path)):
            broken.append(target)
    assert not broken, f"{doc}: links that do not resolve: {broken}"


def test_every_decision_the_code_cites_is_a_section_of_docs_decisions():
    sections = anchors("docs/decisions.md")
    sources = glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "*", "*.py")) + \
        glob.glob(os.path.join(ROOT, "*", "*.md")) + [os.path.join(ROOT, "README.md")]
    cited = {(os.path.relpath(p, ROOT), a) for p in sources
             for a in re.findall(r"decisions\.md#([\w-]+)", open(p, encoding="utf-8").read())}
    assert cited, "no citation of docs/decisions.md found"
    missing = sorted((p, a) for p, a in cited if a not in sections)
    assert not missing, f"cited sections missing from docs/decisions.md: {missing}"


def test_the_readme_tests_command_is_the_one_ci_runs():
    ci = [line for line in read(".ci/run").splitlines() if line.startswith("python3 -m venv")]
    assert len(ci) == 1 and ci[0] in read("README.md").splitlines()


# an arithmetic example: numbers joined by + - * and brackets, "=", the written answer
EXPRESSION = re.compile(r"(?<![\w.=-])([-(]*\d[-+*().0-9]*[-+*]\(?\d[-+*().0-9]*)"
                        r"=(-?\d[0-9.]*\d|-?\d)(?![\w.])")


@pytest.mark.parametrize("doc", DOCS + ["prepare/arithmetic.py", "config/quickstart.py"])
def test_every_arithmetic_example_of_the_docs_is_exact(doc):
    for lhs, rhs in EXPRESSION.findall(prose(doc)):
        lhs = lhs[lhs.count("(") - lhs.count(")"):]  # an example inside brackets: (0.1*0.2=0.02)
        decimals = re.sub(r"\d+\.?\d*", lambda m: f"Decimal('{m.group()}')", lhs)
        exact = eval(decimals, {"Decimal": Decimal})
        assert exact == Decimal(rhs), f"{doc}: {lhs} is {exact}, written {rhs}"
