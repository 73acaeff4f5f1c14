"""prepare/common.py: what every prepare script shares, here its checked flags."""
import os

import pytest
from conftest import run


@pytest.mark.slow
def test_prepare_refuses_a_negative_seed(tmp_path):
    r = run("prepare/lookup.py", "--size=tiny", "--seed", "-1", "--out", str(tmp_path / "d"), check=False)
    assert r.returncode != 0 and "--seed: expected an integer ≥ 0, got -1" in r.stderr and "Traceback" not in r.stderr
    assert not os.path.exists(tmp_path / "d")
