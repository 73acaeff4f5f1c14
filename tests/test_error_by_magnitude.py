"""dev/error_by_magnitude.py: a model close on the many small answers and far on the few large ones is seen as such."""
import json
import os
import sys

import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "dev"))
import error_by_magnitude  # noqa: E402


def report(tmp_path, name, encoding, truth, pred):
    path = tmp_path / name
    path.write_text(json.dumps({"task": "arithmetic", "encoding": encoding,
                                "splits": {"test": {"answer": {"truth": truth, "median": pred}}}}))
    return str(path)


@pytest.mark.slow
def test_each_decade_has_its_count_relative_error_and_share_of_the_squared_error(tmp_path):
    truth = [2.0, 4.0, 5.0, 20.0, 2000.0, -3000.0]
    small = report(tmp_path, "x.json", "xval", truth, [2.2, 4.4, 5.5, 22.0, 200.0, -300.0])  # 10% off, then 90% off
    large = report(tmp_path, "p.json", "p1000", truth, [4.0, 8.0, float("nan"), 40.0, 2200.0, -3300.0])  # 100%, then 10%
    out = tmp_path / "mag"
    r = run("dev/error_by_magnitude.py", f"--reports={small} {large}", f"--out={out}")
    rows = [line for line in out.with_suffix(".md").read_text().splitlines() if line.startswith("| ")]
    assert rows[1].startswith("| 1 to 10 | 3 | 0.1 | 1.1 | 0.0% | 1 | 2 | 0.0% |")  # p1000's invalid answer is left out
    assert rows[2].startswith("| 10 to 100 | 1 | 0.1 | 1.1 | 0.0% | 1 | 2 | 0.3% |")
    assert rows[3].startswith("| 1000 to 10000 | 2 | 0.9 | 0.1 | 100.0% | 0.1 | 1.1 | 99.7% |")
    assert "Largest |truth| 3000; xval: largest |prediction| 300, 0 of 6 predictions invalid" in r.stdout
    assert "p1000: largest |prediction| 3300, 1 of 6 predictions invalid" in r.stdout and f"wrote {out}.md" in r.stdout


def test_missing_or_foreign_reports_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["error_by_magnitude.py"])
    with pytest.raises(SystemExit, match="--reports is required"):
        error_by_magnitude.main()
    with pytest.raises(SystemExit, match="none.json: no such report"):
        error_by_magnitude.table([str(tmp_path / "none.json")])
    (tmp_path / "bad.json").write_text("not json")
    with pytest.raises(SystemExit, match="bad.json: not an eval.py report"):
        error_by_magnitude.table([str(tmp_path / "bad.json")])
    monkeypatch.setattr(error_by_magnitude, "quantity", "dt")
    with pytest.raises(SystemExit, match="plain.json.*'dt'"):
        error_by_magnitude.table([report(tmp_path, "plain.json", "xval", [1.0], [1.0])])
