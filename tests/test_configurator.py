"""configurator.py: config files and flags combine in any order; a bad file or flag is one line."""
import os

import pytest
from conftest import ROOT

from configurator import configure, defaults

TRAIN = os.path.join(ROOT, "train.py")


@pytest.mark.parametrize("text,message", [
    ("n_layer = 2\nmax_iters = (\n", "bad.py:2: '(' was never closed"),
    ("n_layer = 2\n\nmax_iters = 10 // 0\n", "bad.py:3: ZeroDivisionError"),
    ("max_iters = None\n", "bad.py: max_iters expects int (default 500000), got None"),
    ("dropout = 2.0\n", "dropout = 2.0 (from "),
    (None, ": Is a directory"),
])
def test_a_bad_config_file_names_the_file_and_line(tmp_path, text, message):
    if text:
        (tmp_path / "bad.py").write_text(text)
    with pytest.raises(SystemExit) as e:
        configure(defaults(TRAIN), TRAIN, [str(tmp_path / "bad.py" if text else tmp_path)])
    assert message in str(e.value)


def test_a_flag_beats_a_config_file_wherever_it_stands(tmp_path):
    (tmp_path / "it3.py").write_text("max_iters = 3\nlog_interval = 7\n")
    for argv in (["--max_iters=20", str(tmp_path / "it3.py")], [str(tmp_path / "it3.py"), "--max_iters=20"]):
        config = configure(defaults(TRAIN), TRAIN, argv)
        assert (config["max_iters"], config["log_interval"]) == (20, 7)
