"""Every config file is valid, and each dataset's small config trains from a freshly prepared set."""
import glob
import os
import re

import numpy as np
import pytest
from conftest import ROOT, read, run
from helpers import losses, tokenize, truth_field, write_old_layout

import text
from configurator import configure, defaults

TRAIN = os.path.join(ROOT, "train.py")
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "config", "*.py")) + glob.glob(os.path.join(ROOT, "dev", "config", "*.py")))


def load(path):
    return configure(defaults(TRAIN), TRAIN, [os.path.join(ROOT, "config", path)])


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_every_config_sets_known_keys_of_the_right_type_and_only_what_differs_from_the_defaults(path):
    config, scope = load(path), defaults(TRAIN)
    assert config["batch_size"] % config["micro_batch_size"] == 0
    exec(read(path), written := {})
    restated = [key for key, value in written.items() if key in scope and key not in ("encoding", "data_dir", "out_dir")
                and type(value) is type(scope[key]) and value == scope[key]]
    assert not restated, f"{path} restates train.py's defaults: {restated}"


def test_paper_configs_follow_the_papers_tables():
    rates = {"era5_p10.py": 2.5e-5, "era5_xval.py": 2e-4, "planets_xval.py": 2.5e-5, "planets_fp15.py": 1e-4}
    assert {name: load(name)["learning_rate"] for name in rates} == rates
    assert load("era5_b1999.py")["block_size"] == 3404 and load("era5_p10.py")["block_size"] == 8222
    assert load("lookup_xval.py")["mlm_probability"] == 0.3
    for name in ("era5_xval.py", "planets_p1000.py"):
        c = load(name)
        assert (c["n_layer"], c["n_head"], c["n_embd"], c["batch_size"], c["max_iters"]) == (6, 6, 768, 64, 500_000)
        assert c["min_lr"] == pytest.approx(0.1 * c["learning_rate"]) and c["warmup_iters"] == 2000


@pytest.mark.parametrize("dataset,encoding", [("arithmetic", "fp15"), ("lookup", "b1999"), ("own", "xval"),
                                              pytest.param("planets", "p10", marks=pytest.mark.slow),
                                              pytest.param("era5", "xval", marks=pytest.mark.slow)])
def test_each_small_config_trains_from_a_prepared_tiny_set(tmp_path, dataset, encoding):
    data, out = tmp_path / dataset, str(tmp_path / "out")
    if dataset == "era5":
        write_old_layout(str(tmp_path / "t2m.nc"), truth_field())
        run("prepare/era5.py", str(tmp_path / "t2m.nc"), "--size=tiny", "--out", str(data), "--workers=1")
    elif dataset == "own":
        (tmp_path / "d.csv").write_text("station,t\n" + "".join(f"{'ab'[i % 2]},{i / 10}\n" for i in range(40)))
        text.main([str(tmp_path / "d.csv"), "--out", str(data)])
    else:
        run(f"prepare/{dataset}.py", "--size=tiny", "--out", str(data), "--workers=1")
    tokenize(data, f"--encoding={encoding}")
    run("train.py", f"config/{dataset}_small.py", f"--data_dir={data}", f"--encoding={encoding}",
        f"--out_dir={out}", "--max_iters=2", "--log_interval=1", "--eval_interval=2", "--eval_batches=1",
        "--batch_size=4", "--micro_batch_size=4")
    assert sorted(losses(out)) == [1, 2] and all(np.isfinite(list(losses(out).values())))


@pytest.mark.parametrize("task", ["arithmetic", "lookup", "planets", "era5"])
def test_each_prepare_script_writes_by_default_where_the_tasks_configs_read(task):
    source = read(f"prepare/{task}.py")
    call = source[source.index("base_parser(", source.index("__main__") if task != "era5" else 0):][:400]
    out = re.search(r"""["'](data/[^"']+)["']""", call)[1].replace("<variant>", "ops2")
    for encoding in ("xval", "p10"):
        assert load(f"{task}_{encoding}.py")["data_dir"] == out, (task, encoding)
