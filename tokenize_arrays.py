"""Many lines at once into a dataset's arrays, as tokenize_line.py encodes each: a regex finds runs
of numbers, each distinct text between is split once; a chunk with a rare case goes line by line."""

import functools
import itertools
import json
import os
import re
import signal
import sys
import warnings
from multiprocessing import Pool

import numpy as np
from tqdm import tqdm

from dataset import Vocab, check_name, decoded_lines, read_json_object, read_meta, vocab_digest
from tokenize_line import (
    _EXPONENT,
    _MANTISSA,
    _UNARY_AFTER,
    _WORD_CHAR,
    FLOAT32_OVERFLOW,
    encode_pieces,
    lay_out,
    number_ids,
    round_numbers,
    split_text,
)
from util import TextError, atomic_write_text, open_new, take_lock, why_not_written, worker_signals

_LITERALS_ONLY = str.maketrans({"[": None, "]": None, ";": ","})
# spaces _RUN's look-behinds cannot see through
_ODD_SPACE = re.compile(r"[^\S \n]|  ")
# a run of numbers joined by ',' or '],[', the first where split_text reads one (its first
# character before the look-behinds: a fast search)
_FIRST = (
    rf"[0-9.+-](?:(?<=[0-9])(?<![\w.][0-9])(?:{_MANTISSA}|\.)?+|(?<=\.)[0-9]++"
    rf"|(?:(?<=[\n{re.escape(_UNARY_AFTER)}][+-])|(?<=[\n{re.escape(_UNARY_AFTER)}] [+-]))"
    rf"[+-]?+{_MANTISSA}){_EXPONENT}(?!\w)"
)
# a word touching a later number starts the next text (_Segments)
_RUN = re.compile(rf"({_FIRST}(?:(?:,|\]++,\[++)[+-]?+{_MANTISSA}{_EXPONENT})*+)")


def _bracket_count(chars, at, step, byte):
    """How many `byte`s follow (step 1) or precede (step -1) each position in `at`."""
    count, going = np.zeros(len(at), np.int64), np.ones(len(at), bool)
    while going.any():
        going &= chars[at + step * (count + 1)] == byte
        count += going
    return count


class _Segments(dict):
    """Texts between runs -> their index: its tokens (indices in token_index; a line end -1) and
    whether its lines need split_text (`unsure`)."""

    def __init__(self):
        super().__init__()
        self.tokens, self.unsure = [], []
        self.token_index, self.names = {"\n": -1}, []

    def __missing__(self, segment):
        # odd spaces, or a word touching the number before (1,2x)
        unsure = _ODD_SPACE.search(segment) is not None or _WORD_CHAR.match(segment) is not None
        tokens = []
        for part in segment.split("\n"):
            try:
                pieces = split_text(part)
            # nan, 1.5x: split_text says it again, naming the line
            except TextError:
                pieces, unsure = [], True
            unsure |= any(kind != "text" for kind, _ in pieces)
            tokens += [t for _, t in pieces] + ["\n"]
        # a lone comma lies between two numbers
        tokens = [] if tokens == [",", "\n"] else tokens[:-1]
        self.tokens.append([self.index(t) for t in tokens])
        self.unsure.append(unsure)
        self[segment] = len(self.tokens) - 1
        return self[segment]

    def index(self, token):
        if token not in self.token_index:
            self.token_index[token] = len(self.names)
            self.names.append(token)
        return self.token_index[token]


def _numbers_and_brackets(table, chars, commas, ends, n_numbers):
    """The numbers (-2 - i) with bracket tokens ('],[') in their places; each bracket's run."""
    at = commas[chars[commas - 1] == ord("]")]
    closing = _bracket_count(chars, at, -1, ord("]"))
    opening = _bracket_count(chars, at, 1, ord("["))
    shapes, which = np.unique(closing * 1024 + opening, return_inverse=True)
    brackets = [table.index("]" * (s // 1024) + "," + "[" * (s % 1024)) for s in shapes]
    brackets = np.array(brackets, np.int64)[which]
    run = np.searchsorted(ends, at)
    pieces = np.insert(-2 - np.arange(n_numbers), np.searchsorted(commas, at) + run + 1, brackets)
    return pieces, run


def _split_lines(lines):
    """The segments' table, and the lines' pieces (a text token's index in table.names, or -2 - i
    for number i), values, and each line's count of text pieces and of numbers; None if a line
    needs split_text."""
    global _TABLE
    if len(_TABLE) >= _TABLE_MAX:
        _TABLE = _Segments()
    table, chunk = _TABLE, "\n" + "\n".join(lines) + "\n"
    # text, run, text, run, ..., text; a run never spans lines
    parts = _RUN.split(chunk)
    segments, runs = parts[0::2], parts[1::2]
    # a line end in a line; 1.2.3
    if chunk.count("\n") != len(lines) + 1 or "" in segments:
        return table, None
    segment = np.fromiter(map(table.__getitem__, segments), np.int64, len(segments))
    joined = ";".join(runs)
    # a malformed literal (--5) stops the parse: numpy < 2.3 warns, later ones raise
    try:
        with warnings.catch_warnings(action="error", category=DeprecationWarning):
            values = np.fromstring(joined.translate(_LITERALS_ONLY), sep=",")
    except (ValueError, DeprecationWarning):
        return table, None
    chars = np.frombuffer(f"{joined};".encode(), np.uint8)
    commas, ends = np.flatnonzero(chars == ord(",")), np.flatnonzero(chars == ord(";"))[: len(runs)]
    per_run = np.diff(np.searchsorted(commas, ends), prepend=0) + 1
    # past a sign: 1,000 and 1,-05 are malformed
    zero = commas + 1 + np.isin(chars[commas + 1], (43, 45))
    if (
        len(values) != len(commas) + len(runs)
        or not np.isfinite(values).all()
        or any(table.unsure[i] for i in np.unique(segment))
        or ((chars[zero] == 48) & (chars[zero + 1] >= 48) & (chars[zero + 1] <= 57)).any()
    ):
        return table, None
    pieces, run = _numbers_and_brackets(table, chars, commas, ends, len(values))
    # each text's tokens go before the run after it
    used, segment = np.unique(segment, return_inverse=True)
    tokens = [table.tokens[i] for i in used]
    lengths = np.array([len(t) for t in tokens], np.int64)
    n_tokens, offsets = lengths[segment], np.cumsum(lengths) - lengths
    flat = np.array([t for ts in tokens for t in ts], np.int64)
    within = np.arange(n_tokens.sum()) - np.repeat(np.cumsum(n_tokens) - n_tokens, n_tokens)
    items_before = np.r_[0, np.cumsum(per_run + np.bincount(run, minlength=len(runs)))]
    pieces = np.insert(
        pieces,
        np.repeat(items_before, n_tokens),
        flat[np.repeat(offsets[segment], n_tokens) + within],
    )
    line_end = np.flatnonzero(pieces == -1)
    numbers = np.diff(np.cumsum(pieces <= -2)[line_end])
    return table, (pieces[pieces != -1], values, np.diff(line_end) - 1 - numbers, numbers)


_TABLE, _TABLE_MAX = _Segments(), 100_000


@functools.lru_cache(maxsize=1)
def _vocabs(text_tokens, encodings):
    """The last chunk's vocabularies, and each text token's position."""
    vocabs = {enc: Vocab(text_tokens, enc) for enc in encodings}
    return vocabs, {t: i for i, t in enumerate(text_tokens)}


def encode_lines(lines, text_tokens, encodings, path="text", first_line=0):
    """{encoding: (ids, values, lengths, numbers, counts)}: uint16 (or int32) ids and float32
    values of the lines end to end, tokens and numbers per line, numbers clipped or zeroed. Errors
    name path:line, from first_line + 1."""
    vocabs, position = _vocabs(tuple(text_tokens), tuple(encodings))
    table, split = _split_lines(lines)
    if split is not None:
        pieces, values, text, numbers = split
        is_num = pieces <= -2
        # the vocabulary's index of each distinct text token in the chunk (-1: unknown)
        used, where = np.unique(pieces[~is_num], return_inverse=True)
        text_index = np.array([position.get(table.names[i], -1) for i in used], np.int64)[where]
        too_large = "xval" in vocabs and (np.abs(values) >= FLOAT32_OVERFLOW).any()
    if split is None or (text_index < 0).any() or too_large:
        laid = _line_at_a_time(lines, vocabs, position, path, first_line)
        is_num, text_index, values, text, numbers = laid
    rounded = round_numbers(values) if set(vocabs) - {"xval"} else None
    out = {}
    for enc, vocab in vocabs.items():
        spelled, values32, counts = number_ids(values, vocab, rounded)
        text_ids = vocab.first_text_id + text_index
        ids, vals, _ = lay_out(is_num, text_ids, spelled, values32, len(vocab))
        out[enc] = (ids, vals, text + spelled.shape[1] * numbers, numbers, counts)
    return out


def _line_at_a_time(lines, vocabs, position, path, first_line):
    """encode_lines' pieces, split a line at a time: an error names its line."""
    pieces, text, numbers = [], [], []
    for j, line in enumerate(lines, first_line + 1):
        line_pieces = split_text(line, where := f"{path}:{j}")
        # the first error of the encodings in order
        for vocab in vocabs.values():
            encode_pieces(line_pieces, vocab, where)
        pieces += line_pieces
        numbers.append(sum(kind == "num" for kind, _ in line_pieces))
        text.append(len(line_pieces) - numbers[-1])
    is_num = np.array([kind == "num" for kind, _ in pieces], bool)
    values = np.array([v for kind, v in pieces if kind == "num"], np.float64)
    text_index = np.array([position[t] for kind, t in pieces if kind == "text"], np.int64)
    return is_num, text_index, values, np.array(text), np.array(numbers)


def build_text_vocab(lines, where="train", first_line=0):
    """The sorted text tokens of some lines; errors name where:line from first_line + 1."""
    table, split = _split_lines(lines)
    if split is None:
        numbered = enumerate(lines, first_line + 1)
        pieces = [p for j, line in numbered for p in split_text(line, f"{where}:{j}")]
        return sorted({t for kind, t in pieces if kind == "text"})
    return sorted(table.names[i] for i in np.unique(split[0][split[0] >= 0]))


def line_chunks(path, chunk, bar=None):
    """(first line index, lines) of a text file, a chunk at a time."""
    with open(path, "rb") as f:
        numbered = enumerate(decoded_lines(f, path))
        while part := list(itertools.islice(numbered, chunk)):
            for i, line in part:
                if not line.strip():
                    raise TextError(f"{path}:{i + 1}: empty line; expected one sample per line")
            lines = [line for _, line in part]
            if bar:
                bar.update(sum(map(len, lines)) + len(lines))
            yield part[0][0], lines


_SPLIT_FILE = re.compile(r"(train|val|test|test_ood\w*)\.txt")


def dataset_splits(data_dir, plain_text=False):
    """A dataset's split names, train first, and the meta.json to write (None: it stands)."""
    meta_path = os.path.join(data_dir, "meta.json")
    meta = new_meta = None
    if not (plain_text and os.path.isdir(data_dir) and not os.path.exists(meta_path)):
        meta = read_meta(data_dir)
        if not isinstance(meta["splits"], (list, dict)):
            raise TextError(f"{meta_path}: 'splits' is not a list of split names")
        splits = list(meta["splits"])
        for split in splits:
            check_name(split, f"{meta_path}: split")
        if not splits or len(set(splits)) < len(splits):
            raise TextError(f"{meta_path}: splits {splits!r}: none, or one named twice")
    if meta is None or meta.get("dataset") == "plain text":
        files = sorted(f for f in os.listdir(data_dir) if f.endswith(".txt"))
        splits = [f[:-4] for f in files if _SPLIT_FILE.fullmatch(f)]
        if others := [f for f in files if not _SPLIT_FILE.fullmatch(f)]:
            print(f"note: {', '.join(others)} not taken as splits (train, val, test, test_ood*)")
        if "train" not in splits:
            raise FileNotFoundError(f"{data_dir}: no train.txt for --plain-text")
        if "val" not in splits:
            raise FileNotFoundError(f"{data_dir}: no val.txt; put samples not in train.txt there")
        if meta is None or meta["splits"] != splits:
            command = " ".join(["python", *sys.argv])
            new_meta = {"dataset": "plain text", "splits": splits, "command": command}
    for split in splits:
        path = os.path.join(data_dir, f"{split}.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} not found, but {meta_path} lists split {split!r}")
        if os.path.getsize(path) == 0:
            raise TextError(f"{path}:1: empty file; expected one sample per line")
    return sorted(splits, key=lambda s: (s != "train", s != "val")), new_meta


def _encode_chunks(path, split, files, text_tokens, vocabs, workers, chunk):
    """<split>.txt into `files`; per encoding, each chunk's (lengths, numbers, counts, largest
    |number|, ids dtype)."""
    parts = {enc: [] for enc in vocabs}
    pool = Pool(workers, worker_signals) if workers > 1 else None
    size = os.path.getsize(path)
    bar = tqdm(
        total=size, unit="B", unit_scale=True, desc=split, disable=size < 1 << 26, leave=False
    )
    chunks = line_chunks(path, chunk, bar)
    jobs = ((lines, text_tokens, list(vocabs), path, i) for i, lines in chunks)
    # waves of `workers` chunks: the text is never read all at once
    try:
        for wave in iter(lambda: list(itertools.islice(jobs, max(workers, 1))), []):
            for result in (pool.starmap if pool else itertools.starmap)(encode_lines, wave):
                for enc, (ids, values, lengths, numbers, counts) in result.items():
                    files[enc, "ids"].write(ids.tobytes())
                    files[enc, "values"].write(values.tobytes())
                    largest = np.abs(values[vocabs[enc].is_number(ids)]).max(initial=0)
                    parts[enc].append((lengths, numbers, counts, float(largest), ids.dtype))
    finally:
        bar.close()
        if pool:
            pool.terminate()
    return parts


def _summary(split, enc, parts, vocab_size, text_tokens, text_bytes):
    lengths, numbers = (np.concatenate([p[i] for p in parts]) for i in (0, 1))
    counts = {k: sum(p[2][k] for p in parts) for k in ("clipped", "zero")}
    s = {
        "split": split,
        "encoding": enc,
        "samples": len(lengths),
        "tokens": int(lengths.sum()),
        "tokens_per_sample_mean": round(float(lengths.mean()), 2),
        "tokens_per_sample_max": int(lengths.max()),
        "numbers_per_sample_mean": round(float(numbers.mean()), 2),
        "numbers_per_sample_max": int(numbers.max()),
        "largest_abs": max(p[3] for p in parts),
        "clipped": counts["clipped"],
        "flushed_to_zero": counts["zero"],
        "vocab_size": vocab_size,
        "vocab_digest": vocab_digest(text_tokens),
        "text_bytes": text_bytes,
    }
    if counts["clipped"]:
        print(f"warning: {split}: {counts['clipped']} numbers beyond ±9.99e7 were clipped ({enc})")
    if counts["zero"]:
        print(
            f"note: {split}: {counts['zero']} numbers below"
            f" {'1.4e-45 (float32)' if enc == 'xval' else '1e-8'} in magnitude became 0 ({enc})"
        )
    return s, lengths


def encode_split(folder, split, text_tokens, vocabs, workers=1, chunk=1000):
    """<split>.txt as temporary <encoding>/<split>.{ids,values,offsets}.npy and .json: the
    summaries, and the (temporary, final) names to move once all splits are written."""
    path, tmp = os.path.join(folder, f"{split}.txt"), f"{os.getpid()}.tmp"
    bases = {enc: os.path.join(folder, enc, split) for enc in vocabs}
    for base in bases.values():
        os.makedirs(os.path.dirname(base), exist_ok=True)
    names = itertools.product(bases.items(), ("ids", "values"))
    files = {(enc, n): open_new(f"{base}.{n}.{tmp}.npy") for (enc, base), n in names}
    # on a failure, write_arrays removes the temporary files
    try:
        # room for a 1-D array's .npy header (128 bytes), written once the length is known
        for f in files.values():
            f.write(bytes(128))
        parts = _encode_chunks(path, split, files, text_tokens, vocabs, workers, chunk)
    finally:
        for f in files.values():
            f.close()
    moves, summaries = [], []
    size = os.path.getsize(path)
    for enc, base in bases.items():
        s, lengths = _summary(split, enc, parts[enc], len(vocabs[enc]), text_tokens, size)
        for name, dtype in (("ids", parts[enc][0][4]), ("values", np.float32)):
            descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
            header = {"descr": descr, "fortran_order": False, "shape": (s["tokens"],)}
            with open(f"{base}.{name}.{tmp}.npy", "r+b") as out:
                np.lib.format.write_array_header_1_0(out, header)
        with open_new(f"{base}.offsets.{tmp}.npy") as out:
            np.save(out, np.r_[0, np.cumsum(lengths)].astype(np.int64))
        summaries.append(s)
        atomic_write_text(f"{base}.{tmp}.json", json.dumps(s, indent=1))
        for name in ("ids", "values", "offsets"):
            moves.append((f"{base}.{name}.{tmp}.npy", f"{base}.{name}.npy"))
        moves.append((f"{base}.{tmp}.json", f"{base}.json"))
    return summaries, moves


def temporaries(data_dir, pid):
    """Process pid's temporary files in a dataset's folders."""
    if not os.path.isdir(data_dir):
        return []
    folders = [e.path for e in os.scandir(data_dir) if e.is_dir()]
    return [os.path.join(d, f) for d in folders for f in os.listdir(d) if f".{pid}.tmp" in f]


def _text_tokens(data_dir, rebuild_vocab):
    """vocab.json's text tokens, and the vocab.json to write (None: it stands)."""
    vocab_path = os.path.join(data_dir, "vocab.json")
    if os.path.exists(vocab_path) and not rebuild_vocab:
        return read_json_object(vocab_path, ("text_tokens",))["text_tokens"], None
    train = os.path.join(data_dir, "train.txt")
    chunks = line_chunks(train, 10_000)
    text_tokens = sorted(set().union(*(build_text_vocab(c, train, i) for i, c in chunks)))
    return text_tokens, {"built_from": "train.txt", "text_tokens": text_tokens}


def _write_all(data_dir, encodings, workers, rebuild_vocab, plain_text):
    """write_arrays under the dataset's lock; a killed run's lock and temporary files go."""

    def clean(pid):
        stale = temporaries(data_dir, pid)
        print(f"note: removing {held} of process {pid} (ended) and {len(stale)} temporary files")
        for f in stale:
            os.remove(f)

    splits, meta = dataset_splits(data_dir, plain_text)
    names = [*encodings, "tokenize.lock", *(["meta.json"] if meta else [])]
    if rebuild_vocab or not os.path.exists(os.path.join(data_dir, "vocab.json")):
        names.append("vocab.json")
    kinds = ("ids.npy", "values.npy", "offsets.npy", "json")
    names += [f"{e}/{s}.{k}" for e in encodings for s in splits for k in kinds]
    # a link would be written through, or replaced
    for path in [os.path.join(data_dir, n) for n in names]:
        if os.path.islink(path):
            raise TextError(f"{path} is a symbolic link, which this run writes; remove it")
    held = os.path.join(data_dir, "tokenize.lock")
    if (pid := take_lock(held, clean)) is not None:
        raise TextError(
            f"{held}: another tokenize_numbers.py run (pid {pid}) holds it; wait for it to end"
        )
    try:
        text_tokens, vocab = _text_tokens(data_dir, rebuild_vocab)
        print(f"{data_dir}: {len(text_tokens)} text tokens in vocab.json")
        vocabs = {enc: Vocab(text_tokens, enc) for enc in encodings}
        # a text cut short is not tokenized
        declared = read_meta(data_dir)["splits"] if meta is None else []
        staged, summaries = [], []
        for split in splits:
            written, moves = encode_split(data_dir, split, text_tokens, vocabs, workers)
            staged += moves
            for s in written:
                if isinstance(declared, dict) and declared.get(split) not in (None, s["samples"]):
                    raise TextError(
                        f"{data_dir}/{split}.txt has {s['samples']:,} samples, its meta.json"
                        f" {declared[split]:,}: a copy cut short? copy or prepare it again"
                    )
                summaries.append(s)
                print(
                    f"{s['encoding']:>6} {split:>18}: {s['samples']} samples, tokens/sample mean"
                    f" {s['tokens_per_sample_mean']} max {s['tokens_per_sample_max']},"
                    f" numbers/sample {s['numbers_per_sample_mean']}, largest |x|"
                    f" {s['largest_abs']:.4g}, vocab {s['vocab_size']}"
                )
        for tmp, final in staged:
            os.replace(tmp, final)
        for name, content in (("vocab.json", vocab), ("meta.json", meta)):
            if content:
                atomic_write_text(os.path.join(data_dir, name), json.dumps(content, indent=1))
    finally:
        os.remove(held)
    return summaries


def write_arrays(data_dir, encodings, workers=1, rebuild_vocab=False, plain_text=False):
    """Every split of data_dir in each encoding, and the summaries; vocab.json from train.txt if
    absent (or rebuild_vocab). A failed or stopped run changes nothing."""
    new_dirs = [os.path.join(data_dir, enc) for enc in encodings]
    new_dirs = [d for d in new_dirs if not os.path.exists(d)]
    # the clean-up below runs on a SIGTERM
    on_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return _write_all(data_dir, encodings, workers, rebuild_vocab, plain_text)
    except OSError as e:
        # ours: a split or folder that is not there
        if isinstance(e, FileNotFoundError) and not e.filename:
            raise
        why = f"{why_not_written(e, data_dir)}; nothing was changed"
        raise OSError(e.errno, f"writing the arrays of {data_dir} failed: {why}") from None
    finally:
        for f in temporaries(data_dir, os.getpid()):
            os.remove(f)
        for new_dir in new_dirs:
            if os.path.isdir(new_dir) and not os.listdir(new_dir):
                os.rmdir(new_dir)
        signal.signal(signal.SIGTERM, on_term)
