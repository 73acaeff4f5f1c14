"""The number grammar is written once, in tokenize_line.py, and every reader of numbers is built from it:
the public NUMBER reads exactly what prepare/text.py's own pattern read, and xval_encode, the piece offered
to copy, copied as the README says, reads every text the tokenizer accepts as the tokenizer does: the same
numbers with the same text between them, on adversarial and random lines, JSON as json.dumps writes it,
arithmetic with spaces and every prepare script's output."""
import functools
import inspect
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
                     generated, number_lines)

import tokenize_arrays
import tokenize_line
import tokenize_numbers
from dataset import Vocab
from tokenize_arrays import build_text_vocab
from tokenize_line import NUMBER, encode, split_text, xval_encode
from util import TextError

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import era5  # noqa: E402
import era5_synthetic  # noqa: E402

# prepare/text.py's pattern before it imported NUMBER
OLD_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
LITERALS = ["", " ", ".", "+", "-", "+-1", "--1", "++1", "1", "-1", "+1", "01", "1.", ".5", "-.5", "+.5e-3", "1.5",
            "1.2.3", "1..2", "..5", "1e5", "1E+05", "1e-05", "1e", "1e+", "1e-", "e5", ".e5", "1.e5", "1e5.5",
            "1e5e5", "1ee5", " 1", "1 ", "1_000", "1,000", "0x10", "inf", "-inf", "nan", "NaN", "Infinity", "١٢",
            "1٢", "²", "1²", "１", "9" * 400, "9" * 400 + "e", "." + "0" * 300 + "1", "1e" + "9" * 50, "+" * 3 + "1"]


def random_strings(n, alphabet, longest, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(n)]


@pytest.mark.parametrize("strings", [LITERALS, random_strings(50_000, "0123456789.eE+-", 8, 1),
                                     random_strings(50_000, "01.eE+- x_,١", 12, 2)])
def test_number_matches_exactly_what_prepare_texts_old_pattern_matched(strings):
    for s in strings:
        old, new = OLD_NUMBER.match(s), NUMBER.match(s)
        assert bool(NUMBER.fullmatch(s)) == bool(OLD_NUMBER.fullmatch(s)) and (old and old.span()) == (new and new.span()), s


def test_the_grammar_is_written_once_and_every_pattern_is_built_from_it():
    line = tokenize_line
    source = "".join(inspect.getsource(m) for m in (tokenize_line, tokenize_arrays, tokenize_numbers))
    for piece in (line._MANTISSA, line._EXPONENT, line._UNARY_AFTER):
        assert source.count(piece) == 1, piece
    for pattern in (NUMBER.pattern, line._XVAL_NUMBER.pattern, line._LITERAL.pattern, tokenize_arrays._RUN.pattern):
        assert line._MANTISSA in pattern and line._EXPONENT in pattern, pattern
    for pattern in (line._XVAL_NUMBER.pattern, line._PUNCT_END, tokenize_arrays._RUN.pattern):
        assert re.escape(line._UNARY_AFTER) in pattern, pattern


def copied_xval_encode():
    """xval_encode as the README says to copy it: `import re` and the lines of tokenize_line.py from
    _UNARY_AFTER to the end of xval_encode, run in a namespace of their own."""
    source = inspect.getsource(tokenize_line)
    start, end = source.index("_UNARY_AFTER = "), source.index("\n\n\n", source.index("def xval_encode"))
    namespace = {}
    exec(compile("import re\n" + source[start:end], "copied", "exec"), namespace)
    return namespace["xval_encode"]


COPIED = copied_xval_encode()


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
    """The copy's numbers and the text between them, whitespace dropped as the tokenizer drops it; the copy
    gives what tokenize_line.xval_encode gives."""
    texts, again = [], []
    ids, values = COPIED(line, lambda s: texts.append(s) or [len(texts) - 1], -1)
    assert (ids, values) == xval_encode(line, lambda s: again.append(s) or [len(again) - 1], -1), line
    out = []
    for i, v in zip(ids, values):
        if i < 0:
            out.append(("num", v))
        elif text := re.sub(r"\s", "", texts[i]):
            out.append(("text", text))
    return out


def assert_agrees(lines):
    """How many lines the copy reads as the tokenizer does (every line the tokenizer accepts)."""
    read = 0
    for line in lines:
        got = as_xval_encode_reads(line)
        for m in tokenize_line._XVAL_NUMBER.finditer(line):
            assert NUMBER.fullmatch(m[m.lastindex]), (line, m[m.lastindex])
        try:
            want = as_tokenizer_reads(line)
        except TextError:
            continue  # the tokenizer refuses it: no promise
        assert [(k, repr(v)) for k, v in got] == [(k, repr(v)) for k, v in want], line  # repr: -0.0 is not 0.0
        read += 1
    return read


ADVERSARIAL = SIGNS + EXPONENTS + DECIMALS + WORDS + BRACKETS + SPACES + EDGES + UNICODE + TIES + NEAR_LIMITS


def test_adversarial_and_random_lines():
    assert assert_agrees(ADVERSARIAL) > 200
    assert assert_agrees(LITERALS + number_lines(4000, 3)) > 2000
    alphabet = "0123456789" * 3 + ".eE+-,,,:()[]{}=*/^<>xa_ '\"\t"
    assert assert_agrees(random_strings(5000, alphabet, 24, 0)) > 1500


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


def test_json_as_json_dumps_writes_it_and_arithmetic_with_spaces():
    rng = random.Random(1)
    records = [json.dumps({"t": [1.5, -2.25], "id": rng.randint(0, 99), "v": random_value(rng)}) for _ in range(300)]
    records += [json.dumps({"a": -0.0, "b": [-1e-07, 2.5e+30]}, indent=1).replace("\n", " ")]
    assert assert_agrees(records) == len(records)
    for record in records[:50]:  # every number of the record, sign included
        assert [v for k, v in as_xval_encode_reads(record) if k == "num"][:2] == [1.5, -2.25]
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
                 generated(functools.partial(arithmetic.make_sample, variant=variant), ("train", "test"),
                           50).values() for line in lines]
    elif dataset in ("lookup", "planets"):
        module = lookup if dataset == "lookup" else planets
        splits = generated(module.make_sample, module.SPLITS, 50 if dataset == "lookup" else 4)
        lines = [line for lines in splits.values() for line in lines]
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
