"""xval_encode, the piece of the tokenizer offered to copy, reads every text the tokenizer accepts as the
tokenizer does: the same numbers, with the same text between them, on adversarial lines, random lines,
JSON as json.dumps writes it, arithmetic with spaces and every prepare script's output."""
import functools
import json
import math
import os
import random
import re
import sys

import numpy as np
import pytest
from conftest import ROOT
from helpers import (BRACKETS, DECIMALS, EDGES, EXPONENTS, NEAR_LIMITS, SIGNS, SPACES, TIES, UNICODE, WORDS,
                     generated)

from tokenize_numbers import TextError, Vocab, build_text_vocab, encode, split_text, xval_encode

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import era5  # noqa: E402
import era5_synthetic  # noqa: E402


def as_tokenizer_reads(line):
    """split_text's pieces, neighbouring text pieces joined: [("text", "{t:["), ("num", -1.5), ...]."""
    out = []
    for kind, v in split_text(line):
        if kind == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + v)
        else:
            out.append((kind, v))
    return out


def as_xval_encode_reads(line):
    """xval_encode's numbers and the text between them, whitespace dropped as the tokenizer drops it."""
    out, texts = [], []
    ids, values = xval_encode(line, lambda s: texts.append(s) or [len(texts) - 1], -1)
    for i, v in zip(ids, values):
        text = re.sub(r"\s", "", texts[i]) if i >= 0 else None
        if i < 0:
            out.append(("num", v))
        elif text:
            out.append(("text", text))
    return out


def assert_agrees(lines):
    read = 0
    for line in lines:
        try:
            want = as_tokenizer_reads(line)
        except TextError:
            continue  # the tokenizer refuses it: no promise
        got = as_xval_encode_reads(line)
        assert [(k, repr(v)) for k, v in got] == [(k, repr(v)) for k, v in want], line  # repr: -0.0 is not 0.0
        read += 1
    return read


ADVERSARIAL = SIGNS + EXPONENTS + DECIMALS + WORDS + BRACKETS + SPACES + EDGES + UNICODE + TIES + NEAR_LIMITS


def test_adversarial_lines():
    assert assert_agrees(ADVERSARIAL) > 200


def test_random_lines():
    rng = random.Random(0)
    alphabet = "0123456789" * 3 + ".eE+-,,,:()[]{}=*/^<>xa_ '\"\t"
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(5000)]
    assert assert_agrees(lines) > 1500


def random_value(rng, depth=0):
    kind = rng.random()
    if depth < 2 and kind < 0.2:
        return {rng.choice(["t", "t2m", "x", "pm2.5", "room 12", "a_b"]): random_value(rng, depth + 1) for _ in range(3)}
    if depth < 2 and kind < 0.35:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind < 0.45:
        return rng.choice(["dry", "rain", "2021-03-04", "room 12", "-x", "", "1e5x", True, None])
    if kind < 0.55:
        return rng.randint(-10**6, 10**6)
    return rng.choice([1, -1]) * rng.random() * 10 ** rng.randint(-12, 12)


def test_json_as_json_dumps_writes_it():
    rng = random.Random(1)
    records = [json.dumps({"t": [1.5, -2.25], "id": rng.randint(0, 99), "v": random_value(rng)}) for _ in range(300)]
    records += [json.dumps(r, indent=1).replace("\n", " ") for r in ({"a": -0.0, "b": [-1e-07, 2.5e+30]},)]
    assert assert_agrees(records) == len(records)
    for record in records[:50]:  # every number of the record, sign included
        numbers = [v for k, v in as_xval_encode_reads(record) if k == "num"]
        assert numbers[:2] == [1.5, -2.25]


def test_arithmetic_with_spaces():
    lines = ["x = -3", "(1.5 - -2) * 3 = 7.5", "2 - 3", "a -3", "[1, -2, +3]", "y: -.5e-3", "f(-1, 2) = - 4", " -7"]
    assert assert_agrees(lines) == len(lines)
    assert [v for k, v in as_xval_encode_reads("(1.5 - -2) * 3 = 7.5") if k == "num"] == [1.5, -2.0, 3.0, 7.5]


@pytest.mark.parametrize("dataset", ["arithmetic", "lookup", "planets", "era5",
                                     pytest.param("text", marks=pytest.mark.slow)])
def test_every_prepare_scripts_output(dataset, tmp_path):
    import arithmetic
    import lookup
    import planets
    from conftest import run
    if dataset == "arithmetic":
        lines = [line for variant in sorted(arithmetic.VARIANTS) for lines in
                 generated(functools.partial(arithmetic.make_sample, variant=variant), ("train", "test"), 50).values() for line in lines]
    elif dataset == "lookup":
        lines = [line for lines in generated(lookup.make_sample, lookup.SPLITS, 50).values() for line in lines]
    elif dataset == "planets":
        lines = [line for lines in generated(planets.make_sample, planets.SPLITS, 4).values() for line in lines]
    elif dataset == "era5":
        era5_synthetic.main(["--out", str(tmp_path), "--days", "6", "--resolution", "10"])
        era5.main([str(tmp_path / "t2m.nc"), "--out", str(tmp_path / "out"), "--size", "tiny", "--workers", "1"])
        lines = (tmp_path / "out" / "test.txt").read_text().splitlines()[:10]
    else:
        rows = ["day,temp,sky,pressure"] + [f"{d},{math.sin(d) * 20:.2f},{'dry' if d % 3 else 'rain'},{1000 + d}"
                                            for d in range(60)]
        (tmp_path / "w.csv").write_text("\n".join(rows) + "\n")
        run("prepare/text.py", str(tmp_path / "w.csv"), "--window", "4", "--out", str(tmp_path / "w"))
        lines = (tmp_path / "w" / "train.txt").read_text().splitlines()
    assert assert_agrees(lines) == len(lines) > 0


def test_xval_encode_gives_the_tokenizers_ids_and_values():
    lines = ['{"description":{"m":4.786,"e":0.3875},"data":[[[1.896,-0.5563],[1.296,-0.7366]]]}',
             "((0.0235*0.695)+(0.782-0.561))=0.2373325", "{d:1.53,e:-1.33,a:2.53}e=-1.33", "x=-3,y:[1,-2]",
             '{"t": [1.5, -2.25], "x": -3}']
    vocab = Vocab(build_text_vocab(lines), "xval")
    for line in lines:
        ids, values, _ = encode(line, vocab)
        got = xval_encode(line, lambda s: [vocab.text_id(t) for _, t in split_text(s)], vocab.num_id)
        assert got[0] == ids.tolist() and np.float32(got[1]).tolist() == values.tolist()  # the arrays are float32
    assert xval_encode("2-3", lambda s: [ord(c) for c in s], 0) == ([0, 45, 0], [2.0, 1.0, 3.0])
