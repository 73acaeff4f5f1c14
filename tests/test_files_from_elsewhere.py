"""Files from someone else (a downloaded dataset, a shared folder, a hand-edited meta.json) never
make a run write outside their folder, write through a planted link, or train on arrays the
tokenizer could not have written."""

import json
import os
import shutil
import stat

import numpy as np
import pytest

from conftest import run
from dataset import Split
from util import atomic_file, atomic_write_text, open_new, take_lock


@pytest.fixture
def copy(data, tmp_path):
    return shutil.copytree(data, str(tmp_path / "ops2"))


def test_a_split_named_outside_the_folder_in_meta_json_is_refused_and_nothing_is_written(tmp_path):
    data, victim = tmp_path / "data", tmp_path / "victim"
    data.mkdir(), victim.mkdir()
    (data / "train.txt").write_text("(1+2)=3\n")
    (victim / "settings.txt").write_text("(1+2)=3\n")
    (victim / "settings.json").write_text("precious")
    splits = ["train", "../victim/settings"]
    (data / "meta.json").write_text(json.dumps({"dataset": "arithmetic", "splits": splits}))
    r = run("tokenize_numbers.py", str(data), "--encoding=xval", "--workers=1", check=False)
    assert r.returncode != 0 and "'../victim/settings' is not a plain name" in r.stderr
    assert "meta.json" in r.stderr
    assert (victim / "settings.json").read_text() == "precious"
    assert sorted(os.listdir(victim)) == ["settings.json", "settings.txt"]


def test_a_split_or_encoding_that_would_leave_the_folder_is_refused_by_split(copy):
    with pytest.raises(ValueError, match="not a plain name"):
        Split(copy, "../ops2/train", "xval")
    with pytest.raises(ValueError, match="not a plain name"):
        Split(copy, "train", "../xval")


def test_a_link_planted_at_a_temporary_name_is_never_written_through(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    # the names the temporaries had before they were unique: a fixed name needs no guessing
    os.symlink(target, tmp_path / "eval_first5.tmp.json")
    atomic_write_text(str(tmp_path / "eval_first5.json"), "{}")
    lock = tmp_path / "train.lock"
    os.symlink(target, f"{lock}.{os.getpid()}.tmp")
    assert take_lock(str(lock)) is None
    os.symlink(target, tmp_path / f"train.ids.{os.getpid()}.tmp")
    with open_new(str(tmp_path / f"train.ids.{os.getpid()}.tmp")) as f:
        f.write(b"ids")
    assert target.read_text() == "precious"
    assert (tmp_path / "eval_first5.json").read_text() == "{}"
    assert not os.path.islink(tmp_path / f"train.ids.{os.getpid()}.tmp")


def test_two_writes_of_one_file_use_different_temporaries(tmp_path):
    path = str(tmp_path / "ckpt_latest.pt")
    with atomic_file(path) as a, atomic_file(path) as b:
        assert a != b and a.endswith(".tmp.pt") and b.endswith(".tmp.pt")
        for tmp in (a, b):
            with open(tmp, "w") as f:
                f.write(tmp)
    assert open(path).read() == a  # the last rename wins, whole


def test_a_file_saved_again_keeps_its_permissions(tmp_path):
    path = tmp_path / "ckpt_latest.pt"
    atomic_write_text(str(path), "one")
    os.chmod(path, 0o600)
    atomic_write_text(str(path), "two")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and path.read_text() == "two"


def test_a_token_id_beyond_the_vocabulary_is_refused_at_open_naming_its_sample(copy):
    path = os.path.join(copy, "xval", "train.ids.npy")
    ids = np.load(path)
    offsets = Split(copy, "train", "xval").offsets
    ids[offsets[5] + 1] = 10_000
    np.save(path, ids)
    with pytest.raises(ValueError, match=r"sample 5 \(line 6 of train.txt\) holds token id 10000"):
        Split(copy, "train", "xval")
    r = run("train.py", f"--data_dir={copy}", "--out_dir=" + os.path.join(copy, "out"),
            "--n_layer=1", "--n_head=1", "--n_embd=8", "--max_iters=2", check=False)
    assert r.returncode != 0 and "outside the vocabulary" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("bad", [3.4e38, np.inf, np.nan])
def test_a_number_no_model_can_square_is_named_with_its_sample_at_open(copy, bad):
    path = os.path.join(copy, "xval", "val.values.npy")
    values = np.load(path)
    offsets = Split(copy, "val", "xval").offsets
    values[offsets[3]] = bad
    np.save(path, values)
    with pytest.raises(ValueError, match=r"sample 3 \(line 4 of val.txt\) holds") as e:
        Split(copy, "val", "xval")
    assert ("3.4e+38" in str(e.value)) == (bad == 3.4e38)


def test_arrays_of_the_wrong_kind_are_refused(copy):
    path = os.path.join(copy, "xval", "train.values.npy")
    np.save(path, np.load(path).astype(np.float64))
    with pytest.raises(ValueError, match="expected integer ids and float32 values"):
        Split(copy, "train", "xval")


@pytest.mark.parametrize("name", ["meta.json", "vocab.json", "xval/train.json"])
@pytest.mark.parametrize("content", ["{\"spl", "[1, 2]", "{}"])
def test_a_broken_json_file_of_a_dataset_is_one_line_naming_it(copy, name, content):
    with open(os.path.join(copy, name), "w") as f:
        f.write(content)
    r = run("train.py", f"--data_dir={copy}", "--out_dir=" + os.path.join(copy, "out"),
            "--n_layer=1", "--n_head=1", "--n_embd=8", "--max_iters=2", check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert name in lines[0] and lines[0].startswith("error: ")


def test_an_empty_data_dir_says_so():
    r = run("train.py", "--data_dir=", "--out_dir=out/never", check=False)
    assert r.returncode != 0 and "data_dir is empty" in r.stderr


@pytest.fixture(scope="module")
def checkpoint(data, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("run"))
    run("train.py", f"--data_dir={data}", f"--out_dir={out}", "--n_layer=1", "--n_head=1",
        "--n_embd=8", "--max_iters=2", "--eval_interval=2", "--batch_size=8", "--micro_batch_size=8",
        "--eval_batches=1")
    return os.path.join(out, "ckpt_latest.pt")


def edited(checkpoint, tmp_path, change):
    import torch

    c = torch.load(checkpoint, weights_only=True)
    change(c)
    path = str(tmp_path / "edited.pt")
    torch.save(c, path)
    return path


@pytest.mark.parametrize("prefix", ["_orig_mod.", "module.", "module._orig_mod."])
def test_the_weights_of_a_compiled_or_ddp_model_load(checkpoint, tmp_path, prefix):
    def rename(c):
        c["model"] = {prefix + k: v for k, v in c["model"].items()}

    path = edited(checkpoint, tmp_path, rename)
    plain = run("sample.py", f"--ckpt={checkpoint}", input="(0.5+0.25)=[?]\n")
    assert run("sample.py", f"--ckpt={path}", input="(0.5+0.25)=[?]\n").stdout == plain.stdout


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
    r = run("sample.py", f"--ckpt={path}", input="(0.5+0.25)=[?]\n", check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and path in lines[0], r.stderr


def test_a_byte_order_mark_is_no_token_and_a_nul_byte_is_refused(tmp_path):
    from dataset import read_samples

    path = tmp_path / "train.txt"
    path.write_bytes("\ufeff(1+2)=3\n(2+2)=4\n".encode())
    assert [line for _, line in read_samples(str(path))] == ["(1+2)=3", "(2+2)=4"]
    path.write_bytes(b"(1+2)=3\n(2+\x002)=4\n")
    with pytest.raises(ValueError, match=r"train.txt:2: a NUL byte at column 4"):
        read_samples(str(path))


def test_sample_refuses_a_number_no_model_can_take_and_a_line_of_megabytes_at_once(checkpoint):
    r = run("sample.py", f"--ckpt={checkpoint}", input="(1e25+0.25)=[?]\n", check=False)
    assert r.returncode != 0 and "beyond ±1e+18" in r.stderr and "stdin:1" in r.stderr
    r = run("sample.py", f"--ckpt={checkpoint}", input="(0.5+" + "1" * 5_000_000 + ")=[?]\n", check=False)
    assert r.returncode != 0 and "5,000,010 characters" in r.stderr and len(r.stderr) < 1000


def test_offsets_that_make_a_sample_empty_are_refused(copy):
    path = os.path.join(copy, "xval", "train.offsets.npy")
    offsets = np.load(path)
    offsets[5] = offsets[4]
    np.save(path, offsets)
    with pytest.raises(ValueError, match="the files come from different runs"):
        Split(copy, "train", "xval")


def test_xval_values_other_than_one_outside_num_are_refused(copy):
    from dataset import load_text_vocab
    from tokenize_numbers import Vocab

    vocab = Vocab(load_text_vocab(copy), "xval")
    ids = np.load(os.path.join(copy, "xval", "train.ids.npy"))
    path = os.path.join(copy, "xval", "train.values.npy")
    values = np.load(path)
    text = np.flatnonzero(ids != vocab.num_id)[3]
    values[text] = 1e6
    np.save(path, values)
    with pytest.raises(ValueError, match=r"holds 1e\+06 at a token that is no number"):
        Split(copy, "train", "xval", vocab)


def test_a_text_cut_short_is_not_tokenized(copy):
    path = os.path.join(copy, "train.txt")
    lines = open(path).read().splitlines(True)
    with open(path, "w") as f:
        f.writelines(lines[: len(lines) // 2])
    r = run("tokenize_numbers.py", copy, "--encoding=xval", "--workers=1", check=False)
    assert r.returncode != 0 and "its meta.json" in r.stderr and "a copy cut short?" in r.stderr


@pytest.mark.parametrize("name", ["meta.json", "vocab.json", "xval/train.values.npy"])
def test_a_fifo_in_place_of_a_file_is_refused_not_waited_on(copy, name):
    os.remove(os.path.join(copy, name))
    os.mkfifo(os.path.join(copy, name))
    r = run("train.py", f"--data_dir={copy}", "--out_dir=" + os.path.join(copy, "out"),
            "--n_layer=1", "--n_head=1", "--n_embd=8", "--max_iters=2", check=False)
    assert r.returncode != 0 and "FIFO, device or socket; expected a file" in r.stderr


def test_a_checkpoint_that_is_a_fifo_or_has_a_nan_best_loss_is_refused(checkpoint, tmp_path):
    fifo = str(tmp_path / "ckpt.pt")
    os.mkfifo(fifo)
    r = run("sample.py", f"--ckpt={fifo}", input="(0.5+0.25)=[?]\n", check=False)
    assert r.returncode != 0 and "FIFO" in r.stderr
    import torch

    out = tmp_path / "run"
    out.mkdir()
    c = torch.load(checkpoint, weights_only=True)
    c["best_val_loss"] = float("nan")
    torch.save(c, out / "ckpt_latest.pt")
    r = run("train.py", f"--data_dir={c['config']['data_dir']}", f"--out_dir={out}", "--resume",
            "--n_layer=1", "--n_head=1", "--n_embd=8", "--max_iters=4", "--eval_interval=2",
            "--batch_size=8", "--micro_batch_size=8", "--eval_batches=1", check=False)
    assert r.returncode != 0 and "best_val_loss nan is no step or loss" in r.stderr, r.stderr


def test_a_resume_keeps_a_users_file_that_only_looks_like_a_temporary(data, tmp_path):
    out = tmp_path / "run"
    args = [f"--data_dir={data}", f"--out_dir={out}", "--n_layer=1", "--n_head=1", "--n_embd=8",
            "--eval_interval=2", "--batch_size=8", "--micro_batch_size=8", "--eval_batches=1"]
    run("train.py", *args, "--max_iters=2")
    (out / "finetune.tmp.pt").write_text("mine")
    (out / "ckpt_latest.x1y2.tmp.pt").write_text("cut short")
    run("train.py", *args, "--max_iters=4", "--resume")
    assert (out / "finetune.tmp.pt").read_text() == "mine"
    assert not (out / "ckpt_latest.x1y2.tmp.pt").exists()


@pytest.mark.parametrize("tokens", [["a", "a"], ["a", ""], ["a", "[NUM]"]])
def test_a_vocabulary_the_tokenizer_could_not_have_written_is_refused(copy, tokens):
    from dataset import load_text_vocab

    with open(os.path.join(copy, "vocab.json"), "w") as f:
        json.dump({"text_tokens": tokens}, f)
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


def test_eval_refuses_a_test_split_cut_short(checkpoint, copy):
    path = os.path.join(copy, "test.txt")
    lines = open(path).read().splitlines(True)
    with open(path, "w") as f:
        f.writelines(lines[:-3] + [lines[-3][:5]])
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={copy}", check=False)
    assert r.returncode != 0 and "a copy cut short?" in r.stderr and "test.txt has" in r.stderr
