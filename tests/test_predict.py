"""predict.py: what sample.py prints is what its functions give (fill_in and filled for an MLM model,
generate and detokenize for a causal one), and masking a true number reads as writing [?] there."""
import dataclasses

import pytest
import torch
from conftest import run

from model import GPT, GPTConfig
from predict import KeyAbsent, detokenize, encode_line, fill_in, filled, generate, in_own_units, load_model
from dataset import Vocab
from tokenize_arrays import build_text_vocab
from util import TextError

LINES = ["(0.5+0.25)=[?]", "([?]+0.125)=0.75", "([?][?]+1)=[?]"]


def checkpoint(path, encoding="xval", **kw):
    """A tiny untrained model saved as train.py saves one (what load_model reads)."""
    vocab = Vocab(["(", "+", ")="], encoding)
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=len(vocab), num_id=vocab.num_id if vocab.num_id is not None else -1,
                    block_size=64, n_layer=1, n_head=2, n_embd=16, encoding=encoding, **kw)
    torch.save({"model": GPT(cfg).state_dict(), "model_args": dataclasses.asdict(cfg),
                "text_tokens": vocab.text_tokens, "config": {}}, path)
    return str(path)


@pytest.mark.parametrize("encoding,head,spread", [("xval", "mse", "std"), ("p10", "mse", "std"),
                                                  ("xval", "gmm", "std"), ("xval", "gmm", "quantiles"),
                                                  ("xval", "gmm", "none")])
def test_sample_prints_the_numbers_fill_in_predicts(tmp_path, encoding, head, spread):
    path = checkpoint(tmp_path / "ckpt.pt", encoding, num_head=head, n_components=3)
    r = run("sample.py", f"--ckpt={path}", "--device=cpu", f"--spread={spread}", input="\n".join(LINES) + "\n")
    model, vocab, _ = load_model(path)
    samples = [encode_line(line, f"stdin:{i}", vocab, 64)[0] for i, line in enumerate(LINES, 1)]
    predictions, counts, mixtures = fill_in(model, vocab, samples)
    shown = [filled(line, values, mixtures[i] if mixtures else None, spread)
             for i, (line, values) in enumerate(zip(LINES, predictions))]
    assert r.stdout.splitlines()[:3] == shown and "[?]" not in "".join(shown)
    assert f"{counts['numbers']} numbers predicted" in r.stdout and counts["numbers"] == 5
    assert ("±" in shown[0]) == (head == "gmm" and spread == "std")
    assert (shown[0].count("|") == 2) == (head == "gmm" and spread == "quantiles")


@pytest.mark.parametrize("head", ["mse", "gmm"])
def test_a_causal_model_prints_what_generate_writes(tmp_path, head):
    path = checkpoint(tmp_path / "ckpt.pt", causal=True, num_head=head, n_components=3)
    r = run("sample.py", f"--ckpt={path}", "--device=cpu", "--max_new_tokens=6", "--temperature=1.0",
            input="(0.5+0.25)=\n")
    model, vocab, _ = load_model(path)
    (ids, values, _), *_ = encode_line("(0.5+0.25)=", "stdin:1", vocab, 64, causal=True)
    out = generate(model, ids, values, 6, 1.0, torch.Generator().manual_seed(1337))
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
    with pytest.raises(TextError, match="more than the model's block_size 4"):
        encode_line("(0.5+0.25)=[?]", "x", vocab, 4)


def test_a_generated_record_is_printed_in_the_files_units():
    meta = {"scales": {"a": {"center": 10.0, "spread": 2.0}, "b": {"center": -1.0, "spread": 0.5}}}
    assert in_own_units('{"a":0.5,"b":[1,-2]}', "x", meta) == '{"a":11,"b":[-0.5,-2]}'
    assert in_own_units('{"a":0.5,"b":[1', "x", meta).endswith("(scaled: not a complete record)")
