"""The teaching notebook runs top to bottom within five minutes on a CPU, and its stored outputs
come from the current code (a fingerprint of the modules it imports and of its code cells), every
cell that draws holding its picture. After changing either: python tests/test_notebook.py --update
"""
import hashlib
import os
import re
import sys
import tempfile
import time

import nbformat
import pytest
from conftest import ROOT

NOTEBOOK = os.path.join(ROOT, "notebooks", "xval_in_15_minutes.ipynb")
MODULES = ("tokenize_line.py", "tokenize_arrays.py", "dataset.py", "model.py", "batching.py",
           "mixture.py")
LIMIT_S = 300
UPDATE = "python tests/test_notebook.py --update"


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def fingerprint(nb):
    """sha256 of the imported modules and of the notebook's code cells."""
    h = hashlib.sha256()
    for name in MODULES:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            h.update(f"{name}\n{f.read()}\n".encode())
    for cell in code_cells(nb):
        h.update(f"cell\n{cell.source}\n".encode())
    return h.hexdigest()


def execute(nb):
    """Run nb in place from its folder in a kernel of this interpreter; the seconds it took."""
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    with tempfile.TemporaryDirectory() as kernels:
        write_kernel_spec(os.path.join(kernels, "xval-python"))
        km = KernelManager(kernel_name="xval-python",
                           kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernels]))
        client = NotebookClient(nb, km=km, timeout=LIMIT_S, record_timing=False,
                                resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
        start = time.time()
        client.execute()
        return time.time() - start


def pictures(nb):
    """The indices of the code cells that hold a PNG output."""
    return [i for i, c in enumerate(code_cells(nb))
            if any("image/png" in o.get("data", {}) for o in c.outputs)]


STORED = nbformat.read(NOTEBOOK, as_version=4)


def test_the_stored_outputs_come_from_the_current_code_every_cell_and_figure():
    assert STORED.metadata.get("xval", {}).get("fingerprint") == fingerprint(STORED), (
        f"{', '.join(MODULES)} or the notebook's code changed since its outputs were stored: `{UPDATE}`")
    cells = code_cells(STORED)
    assert [i for i, c in enumerate(cells) if c.execution_count is None] == []
    assert [i for i, c in enumerate(cells) if any(o.output_type == "error" for o in c.outputs)] == []
    # a cell that shows a figure: plt.show(), or a training whose loss curve is drawn
    drawing = [i for i, c in enumerate(cells)
               if "plt.show()" in c.source or re.search(r"= train_model\(", c.source)]
    blank = sorted(set(drawing) - set(pictures(STORED)))
    assert len(drawing) >= 6 and blank == [], f"code cells {blank} draw but store no picture: `{UPDATE}`"


@pytest.mark.slow
def test_the_notebook_runs_top_to_bottom_within_five_minutes():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in code_cells(nb):
        cell.outputs, cell.execution_count = [], None
    seconds = execute(nb)
    assert seconds <= LIMIT_S, f"the notebook took {seconds:.0f} s; a learner's CPU has {LIMIT_S} s"
    assert pictures(nb) == pictures(STORED), f"pictures stored elsewhere than drawn: `{UPDATE}`"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {UPDATE}    (re-executes the notebook and stores its outputs)")
    seconds = execute(STORED)
    STORED.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                     "name": "python3"}
    STORED.metadata["xval"] = {"fingerprint": fingerprint(STORED),
                               "note": f"outputs stored by `{UPDATE}`"}
    nbformat.write(STORED, NOTEBOOK)
    print(f"{os.path.relpath(NOTEBOOK, ROOT)}: executed in {seconds:.0f} s and stored")
