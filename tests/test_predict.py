"""predict.py: what sample.py prints is what its functions give, and what each task masks."""
import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from conftest import run
from helpers import tiny

from dataset import Vocab
from eval_baselines import previous_values
from predict import KeyAbsent, detokenize, encode_line, fill_in, filled, generate, in_own_units, load_model
from predict import masked_groups, masked_numbers, masked_samples
from tokenize_arrays import build_text_vocab
from tokenize_line import encode, split_text
from util import TextError

LINES = ["(0.5+0.25)=[?]", "([?]+0.125)=0.75", "([?][?]+1)=[?]"]


def checkpoint(path, encoding="xval", **kw):
    """A tiny untrained model saved as train.py saves one."""
    vocab = Vocab(["(", "+", ")="], encoding)
    num_id = vocab.num_id if vocab.num_id is not None else -1
    model = tiny(encoding, vocab_size=len(vocab), num_id=num_id, block_size=64, n_layer=1, n_embd=16, **kw)
    torch.save({"model": model.state_dict(), "model_args": dataclasses.asdict(model.cfg),
                "text_tokens": vocab.text_tokens, "config": {}}, path)
    return str(path)


@pytest.mark.parametrize("encoding,head,spread", [("xval", "mse", "std"), ("p10", "mse", "std"),
                                                  ("xval", "gmm", "std"), ("xval", "gmm", "quantiles"),
                                                  ("xval", "gmm", "none")])
def test_sample_prints_the_numbers_fill_in_predicts(tmp_path, encoding, head, spread):
    lines = LINES[:1] if spread == "quantiles" else LINES  # a bisection per quantile: one line
    path = checkpoint(tmp_path / "ckpt.pt", encoding, num_head=head, n_components=3)
    r = run("sample.py", f"--ckpt={path}", "--device=cpu", f"--spread={spread}", input="\n".join(lines) + "\n")
    model, vocab, _ = load_model(path)
    samples = [encode_line(line, f"stdin:{i}", vocab, 64)[0] for i, line in enumerate(lines, 1)]
    predictions, counts, mixtures = fill_in(model, vocab, samples)
    shown = [filled(line, values, mixtures[i] if mixtures else None, spread)
             for i, (line, values) in enumerate(zip(lines, predictions))]
    assert r.stdout.splitlines()[:len(lines)] == shown and "[?]" not in "".join(shown)
    assert f"{counts['numbers']} numbers predicted" in r.stdout and counts["numbers"] == "".join(lines).count("[?]")
    assert ("±" in shown[0]) == (head == "gmm" and spread == "std")
    assert (shown[0].count("|") == 2) == (spread == "quantiles")


@pytest.mark.parametrize("head,feed", [("mse", "sample"), ("gmm", "sample"), ("gmm", "mean")])
def test_a_causal_model_prints_what_generate_writes(tmp_path, head, feed):
    path = checkpoint(tmp_path / "ckpt.pt", causal=True, num_head=head, n_components=3)
    r = run("sample.py", f"--ckpt={path}", "--device=cpu", "--max_new_tokens=6", "--temperature=1.0",
            f"--gmm_generate={feed}", input="(0.5+0.25)=\n")
    model, vocab, _ = load_model(path)
    (ids, values, _), *_ = encode_line("(0.5+0.25)=", "stdin:1", vocab, 64, causal=True)
    out = generate(model, ids, values, 6, 1.0, torch.Generator().manual_seed(1337), feed)
    assert len(out[0]) > len(ids) and r.stdout == detokenize(out[0], out[1], vocab) + "\n"


def test_a_masked_number_is_encoded_as_a_marker_written_in_its_place():
    record = '{"t":[1,2,3],"p":4}'
    vocab = Vocab(build_text_vocab([record, "(0.5+0.25)=0.75"]), "xval")
    asked, *_ = encode_line("(0.5+0.25)=[?]", "x", vocab, 64)
    masked, truths, text, _ = encode_line("(0.5+0.25)=0.75", "x", vocab, 64, mask="")
    assert text == "(0.5+0.25)=[?]" and truths == [0.75]
    assert all((a == b).all() for a, b in zip(asked, masked))
    _, truths, text, _ = encode_line(record, "x", vocab, 64, mask="t")
    assert text == '{"t":[1,2,[?]],"p":4}' and truths == [3]
    _, truths, text, _ = encode_line(record, "x", vocab, 64, mask="t", mask_all=True)
    assert text == '{"t":[[?],[?],[?]],"p":4}' and truths == [1, 2, 3]
    with pytest.raises(KeyAbsent, match="x: no number under key 'q'"):
        encode_line('{"t":[1,2,3]}', "x", vocab, 64, mask="q")


def test_a_generated_record_is_printed_in_the_files_units():
    meta = {"scales": {"a": {"center": 10.0, "spread": 2.0}, "b": {"center": -1.0, "spread": 0.5}}}
    assert in_own_units('{"a":0.5,"b":[1,-2]}', "x", meta) == '{"a":11,"b":[-0.5,-2]}'
    assert in_own_units('{"a":0.5,"b":[1', "x", meta).endswith("(scaled: not a complete record)")


def masks(task, line, *args, **kw):
    """{quantity: the numbers masked_groups masks together}."""
    pieces, groups = masked_groups(task, line, "x:1", *args, **kw)
    values = [v for kind, v in pieces if kind == "num"]
    return {q: [values[i] for i in indices] for q, indices in groups.items()}


def test_what_each_task_masks():
    data = [[[s + 0.1 * p, -s - 0.1 * p] for p in range(2)] for s in range(12)]
    record = {"description": {"planet0": {"m": 2.5, "a": 1.2, "e": 0.4}, "planet1": {"m": 1.5, "a": 2, "e": 1},
                              "stepsize": 0.3}, "data": data}
    m = masks("planets", json.dumps(record, separators=(",", ":")))
    assert [m["dt"], m["a0"] + m["e0"] + m["m0"]] == [[0.3], [1.2, 0.4, 2.5]]
    # the last 10 steps, both planets
    assert m["steps"] == pytest.approx([v for step in data[2:] for planet in step for v in planet])
    with pytest.raises(TextError, match="test.txt:7"):
        masked_groups("planets", "{not json 1 2}", "test.txt:7")
    record = {"description": {"coords": [[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]], "start": [0, 1, 0.5, -0.5]},
              "data": [[1.5, -0.25, 0.75], [2.0, 1.0, -1.125]]}
    line = json.dumps(record)
    assert masks("era5", line) == {"t+1": [0.75, -1.125]}  # every station's last step
    t1 = masked_groups("era5", line, "x:1")[1]["t+1"]
    assert previous_values(line, t1, "x:1", "a station") == [-0.25, 1.0]  # persistence
    record["data"][1] = [2.0]
    line = json.dumps(record)
    with pytest.raises(TextError, match="x:1: a station with 1 time step"):
        previous_values(line, masked_groups("era5", line, "x:1")[1]["t+1"], "x:1", "a station")
    # own data: the last or every number under a key
    line = '{"station":"b","t":[1.35,1.36,1.21],"p":0.42}'
    assert masks("text", line, ["t", "p"]) == {"t": [1.21], "p": [0.42]}
    assert masks("text", line, ["t"], every=True) == {"t": [1.35, 1.36, 1.21]}
    t = masked_groups("text", line, "x:1", ["t"], every=True)[1]["t"]
    assert previous_values(line, t[-1:], "x:1", "key 't'") == [1.36]
    assert masked_groups("text", "1+2=3", "x:1")[1] == {"last": [2]}  # plain text: the last number
    assert masked_groups("text", line, "x:1", ["q"])[1] == {"q": []}
    with pytest.raises(TextError, match="x: no record has a number under key 'q'"):
        masked_samples("text", [(1, line)], None, "x", 64, ["q"])
    with pytest.raises(TextError, match="x:7: expected a JSON record"):  # its line in the file
        masked_samples("text", [(7, line[:-1])], None, "x", 64, ["t"])


@pytest.mark.parametrize("line, text", [('{"12": 3, "b": 1}', "'12'"), ('{"a": "12.5", "b": 1}', "'12.5'")])
def test_a_number_the_tokenizer_reads_in_a_json_string_is_named(line, text):
    with pytest.raises(TextError, match=f"reads a number in the JSON string {text}; write a number as"):
        masked_numbers(line, split_text(line, "f:1"), "f:1", keys=["b"])


@pytest.mark.parametrize("encoding", ["xval", "p10"])
def test_a_causal_model_fills_in_by_generating_each_number_from_the_text_before_it(tmp_path, encoding):
    model, vocab, _ = load_model(checkpoint(tmp_path / "ckpt.pt", encoding, causal=True))
    ids, values, _ = encode("(0.5+0.25)=0.75", vocab)
    ask = np.arange(len(ids)) >= len(ids) - len(encode("0.75", vocab)[0])  # the answer's tokens
    (predicted,), counts, _ = fill_in(model, vocab, [(ids, values, ask)])
    # by hand: greedy tokens from the prompt, the number head at the prompt's last position
    prompt = int(np.flatnonzero(ask)[0])
    x, v = torch.tensor(ids[None, :prompt]), torch.tensor(values[None, :prompt])
    with torch.no_grad():
        if encoding == "xval":
            logits, num = model(x, v)
            expected = float(num[0, -1])
            assert counts["not_num"] == int(logits[0, -1].argmax() != vocab.num_id)
        else:
            for _ in ask[prompt:]:
                x = torch.cat([x, model(x, v)[0][:, -1:].argmax(-1)], 1)
                v = torch.cat([v, torch.ones(1, 1)], 1)
            expected = vocab.decode_number(x[0, prompt:].numpy())
    assert counts["numbers"] == 1
    assert predicted == [pytest.approx(expected, rel=1e-5, nan_ok=True)]
    assert counts["invalid"] == (encoding != "xval" and math.isnan(expected))
    # the true answer is never seen
    other_ids, other_values, _ = encode("(0.5+0.25)=9.99", vocab)
    assert fill_in(model, vocab, [(other_ids, other_values, ask)])[0] == [predicted] or math.isnan(predicted[0])
