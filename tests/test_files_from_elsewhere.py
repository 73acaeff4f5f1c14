"""Files from someone else (a downloaded dataset, a shared folder, a hand-edited meta.json or
checkpoint) never make a run write outside their folder, write through a planted link, or train on
arrays the tokenizer could not have written: each is refused in one line naming it."""

import json
import os
import shutil
import stat

import numpy as np
import pytest
import torch

from conftest import run
from dataset import Split, load_text_vocab, read_samples
from dataset import Vocab
from util import atomic_file, atomic_write_text, open_new, take_lock

SMALL = ["--n_layer=1", "--n_head=1", "--n_embd=8", "--eval_interval=2", "--batch_size=8",
         "--micro_batch_size=8", "--eval_batches=1"]


def train(data, out, *args, check=True):
    return run("train.py", f"--data_dir={data}", f"--out_dir={out}", *SMALL, *args, check=check)


@pytest.fixture
def copy(data, tmp_path):
    return shutil.copytree(data, str(tmp_path / "ops2"))


def test_a_split_named_outside_the_folder_in_meta_json_is_refused_and_nothing_is_written(tmp_path, copy):
    data, victim = tmp_path / "data", tmp_path / "victim"
    data.mkdir(), victim.mkdir()
    (data / "train.txt").write_text("(1+2)=3\n")
    (victim / "settings.txt").write_text("(1+2)=3\n")
    (victim / "settings.json").write_text("precious")
    (data / "meta.json").write_text(json.dumps({"dataset": "arithmetic", "splits": ["train", "../victim/settings"]}))
    r = run("tokenize_numbers.py", str(data), "--encoding=xval", "--workers=1", check=False)
    assert r.returncode != 0 and "'../victim/settings' is not a plain name" in r.stderr and "meta.json" in r.stderr
    assert sorted(os.listdir(victim)) == ["settings.json", "settings.txt"]
    assert (victim / "settings.json").read_text() == "precious"
    for split, encoding in (("../ops2/train", "xval"), ("train", "../xval")):
        with pytest.raises(ValueError, match="not a plain name"):
            Split(copy, split, encoding)


def test_a_link_planted_at_a_temporary_name_is_never_written_through(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    # the names the temporaries had before they were unique: a fixed name needs no guessing
    os.symlink(target, tmp_path / "eval_first5.tmp.json")
    atomic_write_text(str(tmp_path / "eval_first5.json"), "{}")
    lock = tmp_path / "train.lock"
    os.symlink(target, f"{lock}.{os.getpid()}.tmp")
    assert take_lock(str(lock)) is None
    tmp = tmp_path / f"train.ids.{os.getpid()}.tmp"
    os.symlink(target, tmp)
    with open_new(str(tmp)) as f:
        f.write(b"ids")
    assert target.read_text() == "precious" and (tmp_path / "eval_first5.json").read_text() == "{}"
    assert not os.path.islink(tmp)


def test_two_writes_of_one_file_use_different_temporaries_and_keep_its_permissions(tmp_path):
    path = str(tmp_path / "ckpt_latest.pt")
    with atomic_file(path) as a, atomic_file(path) as b:
        assert a != b and a.endswith(".tmp.pt") and b.endswith(".tmp.pt")
        for tmp in (a, b):
            open(tmp, "w").write(tmp)
    assert open(path).read() == a  # the last rename wins, whole
    os.chmod(path, 0o600)
    atomic_write_text(path, "two")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and open(path).read() == "two"


def put(a, index, value):
    a = a.copy()
    a[index] = value
    return a


# what: (split, array, edit (array, offsets, positions of text tokens), error)
ARRAYS = {
    "a token id beyond the vocabulary": ("train", "ids", lambda a, o, t: put(a, o[5] + 1, 10_000),
                                         r"sample 5 \(line 6 of train.txt\) holds token id 10000"),
    "3.4e38": ("val", "values", lambda a, o, t: put(a, o[3], 3.4e38), r"sample 3 \(line 4 of val.txt\) holds 3.4e\+38"),
    "inf": ("val", "values", lambda a, o, t: put(a, o[3], np.inf), r"sample 3 \(line 4 of val.txt\) holds"),
    "nan": ("val", "values", lambda a, o, t: put(a, o[3], np.nan), r"sample 3 \(line 4 of val.txt\) holds"),
    "float64 values": ("train", "values", lambda a, o, t: a.astype(np.float64), "expected integer ids and float32 values"),
    "an empty sample": ("train", "offsets", lambda a, o, t: put(a, 5, a[4]), "the files come from different runs"),
    "a value at a text token": ("train", "values", lambda a, o, t: put(a, t[3], 1e6),
                                r"holds 1e\+06 at a token that is no number"),
}


@pytest.mark.parametrize("what", ARRAYS)
def test_arrays_the_tokenizer_could_not_have_written_are_refused_at_open_naming_the_sample(copy, what):
    split, name, edit, match = ARRAYS[what]
    vocab = Vocab(load_text_vocab(copy), "xval")
    text = np.flatnonzero(np.load(os.path.join(copy, "xval", f"{split}.ids.npy")) != vocab.num_id)
    path = os.path.join(copy, "xval", f"{split}.{name}.npy")
    np.save(path, edit(np.load(path), Split(copy, split, "xval").offsets, text))
    with pytest.raises(ValueError, match=match):
        Split(copy, split, "xval", vocab if what == "a value at a text token" else None)
    if name == "ids":
        r = train(copy, os.path.join(copy, "out"), "--max_iters=2", check=False)
        assert r.returncode != 0 and "outside the vocabulary" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name", ["meta.json", "vocab.json", "xval/train.json"])
@pytest.mark.parametrize("content", ["{\"spl", "[1, 2]", "{}"])
def test_a_broken_json_file_of_a_dataset_is_one_line_naming_it(copy, name, content):
    open(os.path.join(copy, name), "w").write(content)
    r = train(copy, os.path.join(copy, "out"), "--max_iters=2", check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert name in lines[0] and lines[0].startswith("error: ")


def test_an_empty_data_dir_says_so():
    r = run("train.py", "--data_dir=", "--out_dir=out/never", check=False)
    assert r.returncode != 0 and "data_dir is empty" in r.stderr


@pytest.fixture(scope="module")
def checkpoint(data, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("run"))
    train(data, out, "--max_iters=2")
    return os.path.join(out, "ckpt_latest.pt")


def edited(checkpoint, tmp_path, change):
    c = torch.load(checkpoint, weights_only=True)
    change(c)
    torch.save(c, tmp_path / "edited.pt")
    return str(tmp_path / "edited.pt")


def sample(ckpt, text="(0.5+0.25)=[?]\n", check=True):
    return run("sample.py", f"--ckpt={ckpt}", input=text, check=check)


@pytest.mark.parametrize("prefix", ["_orig_mod.", "module.", "module._orig_mod."])
def test_the_weights_of_a_compiled_or_ddp_model_load(checkpoint, tmp_path, prefix):
    path = edited(checkpoint, tmp_path, lambda c: c.update(model={prefix + k: v for k, v in c["model"].items()}))
    assert sample(path).stdout == sample(checkpoint).stdout


EDITS = {
    "weights not a dict": lambda c: c.update(model=[1]),
    "model settings not a dict": lambda c: c.update(model_args="x"),
    "a token not a string": lambda c: c.update(text_tokens=[1]),
    "a setting of a newer version": lambda c: c["model_args"].update(rotary=True),
    "a token list longer than the vocabulary": lambda c: c["text_tokens"].append("zz"),
    "weights of another shape": lambda c: c["model"].update(
        {k: v[:1] for k, v in c["model"].items() if k.startswith("wte")}),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edited_checkpoint_is_one_line_naming_it(checkpoint, tmp_path, edit):
    path = edited(checkpoint, tmp_path, EDITS[edit])
    r = sample(path, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and path in lines[0], r.stderr


def test_a_byte_order_mark_is_no_token_and_a_nul_byte_is_refused(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes("\ufeff(1+2)=3\n(2+2)=4\n".encode())
    assert [line for _, line in read_samples(str(path))] == ["(1+2)=3", "(2+2)=4"]
    path.write_bytes(b"(1+2)=3\n(2+\x002)=4\n")
    with pytest.raises(ValueError, match=r"train.txt:2: a NUL byte at column 4"):
        read_samples(str(path))


def test_sample_refuses_a_number_no_model_can_take_and_a_line_of_megabytes_at_once(checkpoint):
    r = sample(checkpoint, "(1e25+0.25)=[?]\n", check=False)
    assert r.returncode != 0 and "beyond ±1e+18" in r.stderr and "stdin:1" in r.stderr
    r = sample(checkpoint, "(0.5+" + "1" * 5_000_000 + ")=[?]\n", check=False)
    assert r.returncode != 0 and "5,000,010 characters" in r.stderr and len(r.stderr) < 1000


def test_a_text_cut_short_is_not_tokenized_nor_evaluated(checkpoint, copy):
    path = os.path.join(copy, "test.txt")
    lines = open(path).read().splitlines(True)
    open(path, "w").writelines(lines[:-3] + [lines[-3][:5]])
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={copy}", check=False)
    assert r.returncode != 0 and "a copy cut short?" in r.stderr and "test.txt has" in r.stderr
    path = os.path.join(copy, "train.txt")
    lines = open(path).read().splitlines(True)
    open(path, "w").writelines(lines[: len(lines) // 2])
    r = run("tokenize_numbers.py", copy, "--encoding=xval", "--workers=1", check=False)
    assert r.returncode != 0 and "its meta.json" in r.stderr and "a copy cut short?" in r.stderr


@pytest.mark.parametrize("name", ["meta.json", "vocab.json", "xval/train.values.npy"])
def test_a_fifo_in_place_of_a_file_is_refused_not_waited_on(copy, name):
    os.remove(os.path.join(copy, name))
    os.mkfifo(os.path.join(copy, name))
    r = train(copy, os.path.join(copy, "out"), "--max_iters=2", check=False)
    assert r.returncode != 0 and "FIFO, device or socket; expected a file" in r.stderr


def test_a_checkpoint_that_is_a_fifo_or_has_a_nan_best_loss_is_refused(checkpoint, tmp_path):
    os.mkfifo(tmp_path / "ckpt.pt")
    r = sample(tmp_path / "ckpt.pt", check=False)
    assert r.returncode != 0 and "FIFO" in r.stderr
    (tmp_path / "run").mkdir()
    c = torch.load(checkpoint, weights_only=True)
    c["best_val_loss"] = float("nan")
    torch.save(c, tmp_path / "run" / "ckpt_latest.pt")
    r = train(c["config"]["data_dir"], tmp_path / "run", "--resume", "--max_iters=4", check=False)
    assert r.returncode != 0 and "best_val_loss nan is no step or loss" in r.stderr, r.stderr


def test_a_resume_keeps_a_users_file_that_only_looks_like_a_temporary(data, tmp_path):
    out = tmp_path / "run"
    train(data, out, "--max_iters=2")
    (out / "finetune.tmp.pt").write_text("mine")
    (out / "ckpt_latest.x1y2.tmp.pt").write_text("cut short")
    train(data, out, "--max_iters=4", "--resume")
    assert (out / "finetune.tmp.pt").read_text() == "mine" and not (out / "ckpt_latest.x1y2.tmp.pt").exists()


@pytest.mark.parametrize("tokens", [["a", "a"], ["a", ""], ["a", "[NUM]"]])
def test_a_vocabulary_the_tokenizer_could_not_have_written_is_refused(copy, tokens):
    json.dump({"text_tokens": tokens}, open(os.path.join(copy, "vocab.json"), "w"))
    with pytest.raises(ValueError, match="text_tokens holds a token twice, an empty one or a"):
        load_text_vocab(copy)


@pytest.mark.parametrize("splits", [[], ["train", "train"]])
def test_meta_json_with_no_split_or_one_twice_is_refused(tmp_path, splits):
    (tmp_path / "train.txt").write_text("(1+2)=3\n")
    (tmp_path / "meta.json").write_text(json.dumps({"dataset": "arithmetic", "splits": splits}))
    r = run("tokenize_numbers.py", str(tmp_path), "--encoding=xval", "--workers=1", check=False)
    assert r.returncode != 0 and "none, or one named twice" in r.stderr


def test_a_lock_holding_garbage_is_taken_over(tmp_path):
    lock = tmp_path / "x.lock"
    lock.write_text("99999999999999999999")
    assert take_lock(str(lock)) is None and lock.read_text() == str(os.getpid())


def test_eval_refuses_a_split_that_names_a_path(checkpoint):
    r = run("eval.py", f"--ckpt={checkpoint}", "--splits=../x/test", check=False)
    assert r.returncode != 0 and "not a plain name" in r.stderr
