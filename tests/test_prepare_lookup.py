"""prepare/lookup.py: the format, the held-out gap (0.3, 0.5), --entries, and determinism."""
import re
from types import SimpleNamespace

import pytest
from conftest import run
from helpers import generated

import lookup
from util import format_number

VALUE = r"-?[0-9.]+(?:e[-+][0-9]+)?"
LINE = re.compile(rf"\{{([a-z]:{VALUE}(?:,[a-z]:{VALUE}){{1,5}})\}}([a-z])=({VALUE})")


def prepare(out, *flags, check=True):
    return run("prepare/lookup.py", "--size=tiny", "--seed=1", "--out", str(out), *flags, check=check)


def samples(lines):
    """({key: value text}, queried key, answer text) of each line."""
    parsed = []
    for line in lines:
        m = LINE.fullmatch(line)
        entries = [kv.split(":") for kv in m.group(1).split(",")]
        assert len(dict(entries)) == len(entries), f"repeated key in {line!r}"
        parsed.append((dict(entries), m.group(2), m.group(3)))
    return parsed


def test_answers_and_the_ood_gap():
    sizes = set()
    for split, lines in generated(lookup.make_sample, lookup.SPLITS, 400).items():
        for table, key, answer in samples(lines):
            assert key in table and table[key] == answer
            for v in table.values():
                assert v == format_number(float(v), 3) and v != "-0" and -3 <= float(v) <= 3  # canonical
            sizes.add(len(table))
            assert (0.3 < float(answer) < 0.5) == (split == "test_ood")
            assert not any(0.3 < float(v) < 0.5 for k, v in table.items() if k != key)
    assert sizes == {2, 3, 4, 5, 6}


# 0.30049 is written 0.3: allowed; 0.3006 is 0.301: redrawn; 0.4996 is 0.5: not inside
@pytest.mark.parametrize("draws, inside, written", [([0.30049], False, "0.3"), ([0.3006, 1.5], False, "1.5"),
                                                    ([0.4996, 0.42], True, "0.42")])
def test_gap_edges_go_by_the_written_value(draws, inside, written):
    rng = SimpleNamespace(uniform=lambda lo, hi: draws.pop(0))
    assert lookup.draw_value(rng, inside_gap=inside) == written


@pytest.mark.slow
def test_entries_and_any_worker_count(tmp_path):
    for workers in (1, 2):
        prepare(tmp_path / str(workers), f"--workers={workers}", "--entries", "2,3")
    for split in lookup.SPLITS:
        text = (tmp_path / "1" / f"{split}.txt").read_text()
        assert text == (tmp_path / "2" / f"{split}.txt").read_text()
        assert {len(table) for table, _, _ in samples(text.splitlines())} == {2, 3}
    assert '"entries": [\n    2,\n    3\n  ]' in (tmp_path / "1" / "meta.json").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("flag, bad, expected", [
    *[("--entries", bad, "expected") for bad in ["0,3", "3,2", "2,27", "2", "two,3"]],
    ("--seed", "-1", "--seed: expected an integer ≥ 0, got -1"),  # the flags every prepare script has
    ("--size", "huge", "invalid choice: 'huge'"),
])
def test_a_bad_flag_is_refused_by_name(tmp_path, flag, bad, expected):
    r = prepare(tmp_path / "x", flag, bad, check=False)
    assert r.returncode == 2 and flag in r.stderr and expected in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()
