"""prepare/lookup.py: format, the held-out gap (0.3, 0.5), and determinism."""
import os
import re
import sys

import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import lookup  # noqa: E402
from util import format_number  # noqa: E402

VALUE = r"-?[0-9.]+(?:e[-+][0-9]+)?"
LINE = re.compile(rf"\{{([a-z]:{VALUE}(?:,[a-z]:{VALUE}){{1,5}})\}}([a-z])=({VALUE})")


def prepare(out, *flags, check=True):
    return run("prepare/lookup.py", "--size=tiny", "--seed=1", "--out", str(out), *flags, check=check)


def samples(out, split):
    """(dict of key -> value text, queried key, answer text) of each line."""
    parsed = []
    for line in open(out / f"{split}.txt").read().splitlines():
        m = LINE.fullmatch(line)
        assert m, f"not a look-up line: {line!r}"
        entries = [kv.split(":") for kv in m.group(1).split(",")]
        assert len(dict(entries)) == len(entries), f"repeated key in {line!r}"
        parsed.append((dict(entries), m.group(2), m.group(3)))
    return parsed


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("lookup") / "data"
    prepare(out, "--workers=2")
    return out


@pytest.mark.slow
def test_lines_are_lookups_whose_answer_is_the_queried_value_and_only_ood_reaches_the_gap(dataset):
    sizes = set()
    for split in ("train", "val", "test", "test_ood"):
        for table, key, answer in samples(dataset, split):
            assert key in table and table[key] == answer
            for v in table.values():
                assert v == format_number(float(v), 3) and v != "-0"  # 3 significant digits, canonical
                assert -3 <= float(v) <= 3
            sizes.add(len(table))
            assert (0.3 < float(answer) < 0.5) == (split == "test_ood")
            assert not any(0.3 < float(v) < 0.5 for k, v in table.items() if k != key)
    assert sizes == {2, 3, 4, 5, 6}


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
    prepare(tmp_path / "one", "--workers=1")
    for split in ("train", "val", "test", "test_ood"):
        assert (tmp_path / "one" / f"{split}.txt").read_bytes() == (dataset / f"{split}.txt").read_bytes()


@pytest.mark.slow
def test_entries_sets_the_dictionary_sizes_and_is_recorded(tmp_path):
    prepare(tmp_path, "--workers=1", "--entries", "2,3")
    sizes = {len(table) for split in ("train", "test_ood") for table, _, _ in samples(tmp_path, split)}
    assert sizes == {2, 3}
    assert '"entries": [\n    2,\n    3\n  ]' in (tmp_path / "meta.json").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["0,3", "3,2", "2,27", "2", "two,3"])
def test_entries_out_of_range_is_refused_by_name(tmp_path, bad):
    r = prepare(tmp_path / "x", "--entries", bad, check=False)
    assert r.returncode == 2 and "--entries" in r.stderr and "expected" in r.stderr
    assert not (tmp_path / "x").exists()
