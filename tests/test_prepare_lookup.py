"""prepare/lookup.py: format, the held-out gap (0.3, 0.5), and determinism."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PREPARE = Path(__file__).resolve().parent.parent / "prepare"
SCRIPT = PREPARE / "lookup.py"
sys.path.insert(0, str(PREPARE))
import lookup  # noqa: E402
from common import fmt_number  # noqa: E402

VALUE = r"-?[0-9.]+(?:e[-+][0-9]+)?"
LINE = re.compile(rf"\{{([a-z]:{VALUE}(?:,[a-z]:{VALUE}){{1,5}})\}}([a-z])=({VALUE})")


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), "--size", "tiny", *args],
                          capture_output=True, text=True, timeout=120)


def read_all(out):
    return {name: open(os.path.join(out, name), "rb").read()
            for name in sorted(os.listdir(out)) if name.endswith(".txt")}


def parse(line):
    """(dict of key -> value text, queried key, answer text)."""
    m = LINE.fullmatch(line)
    assert m, f"not a look-up line: {line!r}"
    entries = [kv.split(":") for kv in m.group(1).split(",")]
    table = dict(entries)
    assert len(table) == len(entries), f"repeated key in {line!r}"
    return table, m.group(2), m.group(3)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("lookup") / "data")
    r = run("--out", out, "--seed", "1", "--workers", "2")
    assert r.returncode == 0, r.stderr
    return out


def samples(out, split):
    with open(os.path.join(out, f"{split}.txt")) as f:
        return [parse(line) for line in f.read().splitlines()]


@pytest.mark.slow
def test_lines_are_lookups_whose_answer_is_the_queried_value(dataset):
    sizes = set()
    for split in ("train", "val", "test", "test_ood"):
        for table, key, answer in samples(dataset, split):
            assert key in table and table[key] == answer
            for v in table.values():
                assert v == fmt_number(float(v), 3) and v != "-0"  # 3 significant digits, canonical
                assert -3 <= float(v) <= 3
            sizes.add(len(table))
    assert sizes == {2, 3, 4, 5, 6}


@pytest.mark.slow
def test_no_train_val_test_value_lies_in_the_gap(dataset):
    for split in ("train", "val", "test"):
        for table, _, _ in samples(dataset, split):
            assert not any(0.3 < float(v) < 0.5 for v in table.values())


@pytest.mark.slow
def test_ood_queries_a_value_in_the_gap_and_only_that_one(dataset):
    for table, key, answer in samples(dataset, "test_ood"):
        assert 0.3 < float(answer) < 0.5
        assert not any(0.3 < float(v) < 0.5 for k, v in table.items() if k != key)


def test_rounding_onto_a_gap_edge_is_decided_on_the_written_value():
    class Draws:  # an rng whose uniform() returns the given values in turn
        def __init__(self, *values):
            self.values = list(values)

        def uniform(self, lo, hi):
            return self.values.pop(0)

    assert lookup.draw_value(Draws(0.30049), inside_gap=False) == "0.3"  # written 0.3: allowed
    assert lookup.draw_value(Draws(0.3006, 1.5), inside_gap=False) == "1.5"  # 0.301: redrawn
    assert lookup.draw_value(Draws(0.4996, 0.42), inside_gap=True) == "0.42"  # 0.5: not inside


@pytest.mark.slow
def test_same_seed_gives_identical_files_for_any_worker_count(dataset, tmp_path):
    r = run("--out", str(tmp_path / "one"), "--seed", "1", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert read_all(tmp_path / "one") == read_all(dataset)


@pytest.mark.slow
def test_entries_sets_the_dictionary_sizes_and_is_recorded(tmp_path):
    out = tmp_path / "e23"
    r = run("--out", str(out), "--seed", "1", "--workers", "1", "--entries", "2,3")
    assert r.returncode == 0, r.stderr
    sizes = {len(table) for split in ("train", "test_ood") for table, _, _ in samples(out, split)}
    assert sizes == {2, 3}
    assert '"entries": [\n    2,\n    3\n  ]' in (out / "meta.json").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["0,3", "3,2", "2,27", "2", "two,3"])
def test_entries_out_of_range_is_refused_by_name(tmp_path, bad):
    r = run("--out", str(tmp_path / "x"), "--entries", bad)
    assert r.returncode == 2 and "--entries" in r.stderr and "expected" in r.stderr
    assert not (tmp_path / "x").exists()
