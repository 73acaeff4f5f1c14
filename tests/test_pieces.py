"""README's "Pieces to copy", run with only the imports it names, against the pipeline's code."""
import functools
import inspect
import json
import math
import random
import re
import time

import arithmetic
import helpers
import pytest
import torch
import torch.nn.functional as F
from conftest import read, run
from helpers import generated, number_lines, sample, temperatures, tiny
from torch import nn

import model
import tokenize_arrays
import tokenize_line
import tokenize_numbers
from dataset import Vocab
from tokenize_arrays import build_text_vocab
from tokenize_line import FLOAT32_OVERFLOW, NUMBER, encode, split_text, xval_encode
from util import TextError


def copied(source, imports):
    """A piece's source run with only `imports`, in a namespace of its own."""
    namespace = {}
    exec(compile(f"{imports}\n{source}", "copied", "exec"), namespace)
    return namespace


LINE = inspect.getsource(tokenize_line)
BLOCK = LINE[LINE.index("# -- xVal's tokenizer") : LINE.index("\n\n\n", LINE.index("def xval_encode"))]
IMPORTS = {"xval_embedding": "import torch", "NumberHead": "import torch\nfrom torch import nn"}
xval_embedding, NumberHead = (copied(inspect.getsource(getattr(model, n)), i)[n] for n, i in IMPORTS.items())
COPY = copied(BLOCK, "import re")["xval_encode"]


def test_the_readme_names_each_piece_and_its_imports():
    readme = read("README.md").split("## Pieces to copy")[1]
    for name, imports in IMPORTS.items():
        assert f"`model.{name}`" in readme and all(f"`{i}`" in readme for i in imports.split("\n"))
    assert "`# -- xVal's tokenizer, to copy`" in readme and "`import re`" in readme


@pytest.mark.parametrize("k", [0, 2])
def test_the_number_path_stays_float32_under_bf16_autocast_whatever_the_values_dtype(k):
    gpt = tiny(k=k)  # and the model's own path
    ids, values = sample(9)
    values = values[None].double() * 1.2345678
    h = gpt.trunk(ids[None], values)
    head, num_embed = NumberHead(32), gpt.num_embed if k else None

    def outputs():
        embedded = xval_embedding(gpt.wte(ids[None]), values, ids[None] == gpt.cfg.num_id, num_embed)
        num = head(embedded)
        return embedded, num, head.loss(num, values), gpt.heads(h)[1], gpt.embed(ids[None], values)

    with torch.autocast("cpu", dtype=torch.bfloat16):
        autocast = outputs()
    for out, plain in zip(autocast, outputs()):
        assert out.dtype == torch.float32
        torch.testing.assert_close(out, plain, rtol=1e-6, atol=1e-6)


# the number grammar written plainly
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
LITERALS = ["", " ", ".", "+", "-", "+-1", "--1", "++1", "1", "-1", "+1", "01", "1.", ".5", "-.5", "+.5e-3", "1.5",
            "1.2.3", "1..2", "..5", "1e5", "1E+05", "1e-05", "1e", "1e+", "1e-", "e5", ".e5", "1.e5", "1e5.5",
            "1e5e5", "1ee5", " 1", "1 ", "1_000", "1,000", "0x10", "inf", "-inf", "nan", "NaN", "Infinity", "١٢",
            "1٢", "²", "1²", "１", "9" * 400, "9" * 400 + "e", "." + "0" * 300 + "1", "1e" + "9" * 50, "+" * 3 + "1"]


def random_strings(n, alphabet, longest, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(n)]


@pytest.mark.parametrize("strings", [LITERALS, random_strings(50_000, "0123456789.eE+-", 8, 1),
                                     random_strings(50_000, "01.eE+- x_,١", 12, 2)])
def test_number_matches_exactly_what_the_plain_grammar_matches(strings):
    for s in strings:
        plain, new = PLAIN_NUMBER.match(s), NUMBER.match(s)
        assert bool(NUMBER.fullmatch(s)) == bool(PLAIN_NUMBER.fullmatch(s)) and (plain and plain.span()) == (new and new.span()), s


def test_the_grammar_is_written_once_and_every_pattern_is_built_from_it():
    line = tokenize_line
    source = "".join(inspect.getsource(m) for m in (tokenize_line, tokenize_arrays, tokenize_numbers))
    for piece in (line._MANTISSA, line._EXPONENT, line._UNARY_AFTER):
        assert source.count(piece) == 1, piece
    for pattern in (NUMBER.pattern, line._XVAL_NUMBER.pattern, line._LITERAL.pattern, tokenize_arrays._RUN.pattern):
        assert line._MANTISSA in pattern and line._EXPONENT in pattern, pattern
    for pattern in (line._XVAL_NUMBER.pattern, line._PUNCT_END, tokenize_arrays._RUN.pattern):
        assert re.escape(line._UNARY_AFTER) in pattern, pattern
    assert "touches(" in inspect.getsource(line.split_text_spans)  # and the numbers glued: 12.5.6, 1,000


def copy_reads(encode_line, line, **keyword):
    """Numbers and the text between, whitespace dropped; None if refused."""
    texts = []
    try:
        ids, values = encode_line(line, lambda s: texts.append(re.sub(r"\s", "", s)) or [len(texts) - 1], -1, **keyword)
    except ValueError:
        return None
    return [("num", v) if i < 0 else ("text", texts[i]) for i, v in zip(ids, values) if i < 0 or texts[i]]


def tokenizer_reads(line):
    """split_text's pieces, text joined; None if it refuses a number, "nan" a word."""
    try:
        pieces = split_text(line)
    except TextError as e:
        return "nan" if "not a finite number" in str(e) else None
    out = []
    for kind, v in pieces:
        if kind == "num" and abs(v) >= FLOAT32_OVERFLOW:
            return None
        if kind == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + v)
        else:
            out.append((kind, v))
    return out


def agrees(lines):
    """How many lines the tokenizer accepts; the copy reads (repr: -0.0) and refuses as it does."""
    read = 0
    for line in lines:
        got = copy_reads(COPY, line)
        assert repr(got) == repr(copy_reads(xval_encode, line)), line
        for m in tokenize_line._XVAL_NUMBER.finditer(line):
            assert NUMBER.fullmatch(m[1] or "0") or re.match("[+-]{2}", m[1]), (line, m[1])
        if (want := tokenizer_reads(line)) != "nan":
            assert repr(got) == repr(want), line
            assert want is not None or copy_reads(COPY, line, keep_malformed=True), line
            read += want is not None
    return read


@pytest.mark.parametrize("line,bad", [("x=1,000", "1,000"), ("12.5.6", "12.5.6"), ("[--5]", "--5"),
                                      ("{a:1e39}", "1e39"), ("1e400", "1e400"), ("1.5x", "1.5x")])
def test_the_copy_refuses_malformed_numbers_and_numbers_beyond_float32_or_keeps_them_as_text(line, bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        COPY(line, list, 0)
    ids, values = COPY(line, lambda s: [s], 0, keep_malformed=True)
    assert bad in "".join(ids[::2]) and values[-1] == 1.0


def test_adversarial_malformed_and_random_lines():
    names = "SIGNS EXPONENTS DECIMALS WORDS BRACKETS SPACES EDGES UNICODE TIES NEAR_LIMITS MALFORMED"
    assert agrees(line for name in names.split() for line in getattr(helpers, name)) > 200
    assert agrees(LITERALS + number_lines(4000, 3)) > 2000
    alphabet = "0123456789" * 3 + ".eE+-,,,:()[]{}=*/^<>xa_ '\"\t"
    assert agrees(random_strings(5000, alphabet, 24, 0)) > 1500


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
    lines = ["x = -3", "(1.5 - -2) * 3 = 7.5", "2 - 3", "a -3", "[1, -2, +3]", "y: -.5e-3", "f(-1, 2) = - 4", " -7"]
    assert agrees(records + lines) == len(records + lines)
    for record in records[:50]:  # every number of the record, sign included
        assert [v for k, v in copy_reads(COPY, record) if k == "num"][:2] == [1.5, -2.25]
    assert [v for k, v in copy_reads(COPY, "(1.5 - -2) * 3 = 7.5") if k == "num"] == [1.5, -2.0, 3.0, 7.5]


@pytest.mark.parametrize("dataset", ["arithmetic", "lookup", "planets", pytest.param("era5", marks=pytest.mark.slow),
                                     pytest.param("text", marks=pytest.mark.slow)])
def test_every_prepare_scripts_output(dataset, tmp_path, monkeypatch):
    if dataset == "arithmetic":
        make = [functools.partial(arithmetic.make_sample, variant=v) for v in sorted(arithmetic.VARIANTS)]
        lines = [line for m in make for lines in generated(m, ("train", "test"), 50).values() for line in lines]
    elif dataset in ("lookup", "planets"):
        module = __import__(dataset)
        splits = generated(module.make_sample, module.SPLITS, 50 if dataset == "lookup" else 4)
        lines = [line for lines in splits.values() for line in lines]
    elif dataset == "era5":
        lines = sum(temperatures(tmp_path, monkeypatch).values(), [])
    else:
        rows = ["day,temp,sky,pressure"] + [f"{d},{math.sin(d) * 20:.2f},{'dry' if d % 3 else 'rain'},{1000 + d}"
                                            for d in range(60)]
        (tmp_path / "w.csv").write_text("\n".join(rows) + "\n")
        run("prepare/text.py", str(tmp_path / "w.csv"), "--window", "4", "--out", str(tmp_path / "w"))
        lines = (tmp_path / "w" / "train.txt").read_text().splitlines()
    assert agrees(lines) == len(lines) > 0


def test_xval_encode_gives_the_tokenizers_ids_and_values():
    lines = ['{"description":{"m":4.786,"e":0.3875},"data":[[[1.896,-0.5563],[1.296,-0.7366]]]}',
             "((0.0235*0.695)+(0.782-0.561))=0.2373325", "{d:1.53,e:-1.33,a:2.53}e=-1.33", "x=-3,y:[1,-2]",
             '{"t": [1.5, -2.25], "x": -3}']
    vocab = Vocab(build_text_vocab(lines), "xval")
    for line in lines:
        ids, values, _ = encode(line, vocab)
        got = COPY(line, lambda s: [vocab.text_id(t) for _, t in split_text(s)], vocab.num_id)
        assert got[0] == ids.tolist() and torch.tensor(got[1]).tolist() == values.tolist()  # float32 arrays
    assert COPY("2-3", lambda s: [ord(c) for c in s], 0) == ([0, 45, 0], [2.0, 1.0, 3.0])


# a causal GPT wired as docs/pieces.md says; its loss and generation are the doc's own blocks
NUM, PLUS, EQ, END = range(4)  # [NUM] + = .
LOSS, GENERATE = (compile(block, "docs/pieces.md", "exec")
                  for block in re.findall(r"```python\n(.*?)```", read("docs/pieces.md"), re.S)[1:])


class GPT(nn.Module):
    def __init__(self, vocab_size=4, n_embd=32, n_layer=2, block_size=8):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
        block = nn.TransformerEncoderLayer(n_embd, 2, 4 * n_embd, 0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, n_layer, enable_nested_tensor=False)
        self.lm_head = nn.Linear(n_embd, vocab_size)
        self.num_head = NumberHead(n_embd)

    def forward(self, idx, values):
        T = idx.shape[1]
        x = xval_embedding(self.wte(idx), values) + self.wpe(torch.arange(T))
        h = self.blocks(x, mask=nn.Transformer.generate_square_subsequent_mask(T), is_causal=True)
        return self.lm_head(h), self.num_head(h)


def get_batch(n, generator):
    """n samples "a + b = s ." as ids and values (a, b uniform in [-1, 1))."""
    a, b = torch.rand(2, n, 1, generator=generator) * 2 - 1
    one = torch.ones(n, 1)
    return torch.tensor([NUM, PLUS, NUM, EQ, NUM, END]).repeat(n, 1), torch.cat([a, one, b, one, a + b, one], 1)


def loss_of(gpt, idx, values):
    logits, num = gpt(idx[:, :-1], values[:, :-1])
    scope = {"logits": logits, "num": num, "targets": idx[:, 1:].contiguous(), "target_values": values[:, 1:],
             "num_id": NUM, "num_loss_weight": 1.0, "NumberHead": NumberHead, "F": F}
    exec(LOSS, scope)
    return scope["loss"]


@torch.no_grad()
def generate(gpt, idx, values, steps):
    scope = {"model": gpt, "idx": idx, "values": values, "num_id": NUM, "torch": torch}
    for _ in range(steps):
        exec(GENERATE, scope)
    return scope["idx"], scope["values"]


def test_a_small_causal_gpt_with_the_pieces_learns_a_sum_in_seconds():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as train.py on a CPU: a tiny model gains nothing from more
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    gpt = GPT()
    optimizer = torch.optim.AdamW(gpt.parameters(), lr=1e-2)
    start, steps = time.perf_counter(), 40
    for _ in range(steps):
        loss = loss_of(gpt, *get_batch(32, generator))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - start
    torch.set_num_threads(threads)
    idx, values = get_batch(1000, generator)
    idx_out, values_out = generate(gpt.eval(), idx[:, :4], values[:, :4], 2)
    assert torch.equal(idx_out, idx)  # [NUM] then the end
    mse, variance = ((values_out[:, 4] - values[:, 4]) ** 2).mean().item(), values[:, 4].var().item()
    print(f"{steps} steps, {seconds:.1f} s, R² {1 - mse / variance:.3f}")
    assert mse < 0.1 * variance
