"""
Your own data as a dataset like the others: CSV or JSON-lines files in; train.txt, val.txt,
test.txt and meta.json out, every number scaled per key to order 1 (xVal multiplies an embedding
by each value, docs/decisions.md#scaling). prepare/README.md#your-own-data-textpy has the details.

    # one record per row, random split
    python prepare/text.py stations.csv --out data/stations
    # a series, split in time
    python prepare/text.py co2.csv --window 16 --stride 4 --missing drop --out data/co2
    python prepare/text.py a.jsonl b.jsonl --split 0.9,0.05,0.05 --seed 1 --out data/mine
    python prepare/text.py train.jsonl --val val.jsonl --test test.jsonl --out data/mine

Reading. A file that starts with "{" or "[" is JSON: an object per line (JSON lines), objects spread
over lines, or one array of objects, a record each; any other file is CSV with a header row
(delimiter , ; tab or |, the header's most frequent, named when not a comma), a record {"column":
value, ...} per row. A column of numbers is a number key, one of other values a text key. Missing
values (MISSING below, any case; JSON null and NaN; a key a JSON record lacks) are refused unless
--missing=omit (the key is left out of that record) or --missing=drop (the record, or window, is
left out). A key of dates or times (2021-03-04, 2021-03-04T12:00, 12:30, 03/04/2021, 4-Mar-2021,
5:06 PM, 20210304) is left out with a note: rows are taken in file order. A text value or key name
the tokenizer would read as holding numbers (room 12, 01234) is written as one word, its other
characters "_" ("room_12", "_01234"), so every later step reads it alike.

Records. With --window N, N consecutive rows of one file become one record {"key": [v1, ..., vN]},
a window starting every --stride S rows (default N). --order time (the default with --window)
cuts each file's rows into train, then val, then test by --split, and takes windows inside each
part; --order random (the default without) splits the records at random.

Scaling (--scale auto): every number under a key, at any depth, becomes (x - center) / spread,
center and spread the mean and standard deviation of the key's numbers in the training split
(spread 1 for a constant key); meta.json records them as "scales": {key: {"center", "spread"}},
so original = scaled * spread + center. Digits: a key's scaled numbers are written with d
decimals, the least d with 10^-d * spread <= 10^q / 10, 10^q the place of the finest digit among
the key's input numbers; scaled * spread + center is then within 0.05 * 10^q of the input, and
rounded to the input's digits it is the input, exactly (for inputs of up to 15 significant
digits, what a float64 holds). --scale none writes the numbers as they are (center 0, spread 1).
Two different inputs that the model would see as one float32 are named in a warning.
"""

import argparse
import csv
import functools
import gzip
import hashlib
import io
import json
import math
import os
import re
import sys
from decimal import Decimal

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (
    _at_least,
    dataset_files,
    one_line_errors,
    prepare_out_dir,
    swap_in,
    write_meta,  # noqa: E402
    write_split,
)
from tokenize_numbers import TextError, split_text  # noqa: E402
from util import shell_line  # noqa: E402

# a CSV cell that is a number
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# a missing value, in any case
MISSING = ("", "NA", "N/A", "NaN", "null", "None", "?", "-", "--", ".", "#N/A")
TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[ap]\.?m\.?)?"  # 12:30, 05:06:07.5, 5:06 PM
MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
DATE = re.compile(
    rf"(?:\d{{4}}-\d{{1,2}}(?:-\d{{1,2}})?|\d{{4}}/\d{{1,2}}/\d{{1,2}}"
    rf"|\d{{1,2}}[/.]\d{{1,2}}[/.](?:\d{{4}}|\d\d)"
    # 4-Mar-2021, Mar 4, 2021, Mar-2021
    rf"|\d{{1,2}}[- ]{MONTH}[- ](?:\d{{4}}|\d\d)|{MONTH} \d{{1,2}},? \d{{4}}|{MONTH}[- ]\d{{4}})"
    rf"(?:[T ]{TIME}(?:Z| ?UTC| ?GMT|[+-]\d{{2}}:?\d{{2}})?)?|{TIME}",
    re.IGNORECASE,
)
YYYYMMDD = re.compile(r"(?:1[89]|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")
# 33,231 (a thousands separator) or 12,5 (a decimal comma)
SEPARATED = re.compile(r"[+-]?\d+(?:,\d+)+(?:\.\d*)?")
CODE = re.compile(r"[+-]?0\d+")  # a leading zero: 01234 is a code (a ZIP code), not a quantity
DELIMITERS = {",": "a comma", ";": "a semicolon", "\t": "a tab", "|": "a bar"}
SPLITS = ("train", "val", "test")


def fail(message):
    sys.exit(f"error: {message}")


_MISSING = {m.lower() for m in MISSING}


def is_missing(cell):
    return cell.strip().lower() in _MISSING


def plain_number(cell):
    """The number a cell writes with a currency or percent sign, digit groups or in hex ("$12.50",
    "45%", "1_000", "$1,000", "0x1F"): the tokenizer would read it as a word, or as two numbers;
    None for any other cell."""
    if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", cell):
        return str(int(cell, 16))
    bare = re.sub(r"^([+-]?)\s*[$€£¥]\s*|\s*[%‰]$", r"\1", cell)
    # 1_000, 1,000 (after a sign)
    if re.fullmatch(r"[+-]?(?:\d+(?:_\d+)+|\d{1,3}(?:,\d{3})+)(?:\.\d*)?", bare):
        bare = re.sub("[_,]", "", bare)
    return bare if bare != cell and NUMBER.fullmatch(bare) else None


def read_text(path):
    """A file's text (gzip undone): UTF-8 without a byte-order mark, line ends made \\n (CR-only
    ends noted, a lone \\r refused)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    if data.startswith(b"\x1f\x8b"):  # gzip (file.csv.gz): read as the file it holds
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            fail(
                f"{path}: a damaged gzip file ({e}); expected a CSV or JSON-lines file, or one"
                " compressed with gzip"
            )
    if data.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):
        fail(
            f"{path}: a zip archive or an Excel workbook (.xlsx, .xls), not text; unzip it, or save"
            ' the sheet as "CSV UTF-8"'
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        fail(
            f'{path}: UTF-16 text (Excel\'s "Unicode Text"); save the file as UTF-8 (Excel: "CSV'
            ' UTF-8")'
        )
    try:
        # the byte-order mark a spreadsheet may write
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        fail(
            f"{path}:{data[: e.start].count(10) + 1}: not UTF-8 (byte {e.start}); save the file as"
            " UTF-8"
        )
    if "\r" in text and "\n" not in text:
        print(
            f"note: {path}: its lines end in a carriage return alone (\\r, old Mac files): read as"
            " line ends"
        )
        return text.replace("\r", "\n")
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        i = text.index("\r")
        fail(
            f"{path}:{text.count(chr(10), 0, i) + 1}: a lone carriage return (\\r) at column"
            f" {i - text.rfind(chr(10), 0, i)} in a file of \\n line ends; expected one line end"
            " per line (remove it)"
        )
    return text


def read_csv(path, text, columns, text_columns, delimiter, decimal_comma):
    """[(record, where)] of a CSV file's rows: a cell is a number (Decimal), text (str) or missing
    (None)."""
    header_line = text.partition("\n")[0]
    comments = len(re.match(r"(?:#.*\n)*", text + "\n")[0].split("\n")) - 1
    if comments > 1 or comments and not re.search(r"[,;\t|]", header_line):
        fail(
            f"{path}:1: {header_line[:40]!r} is a comment, not a header ({comments} line(s) start"
            " with #); expected the column names on line 1: delete the lines above them"
        )
    if not delimiter:
        delimiter = max(DELIMITERS, key=header_line.count)
        if not header_line.count(delimiter) and re.search(r"\S\s+\S", header_line):
            fail(
                f"{path}:1: the header holds no , ; tab or | but spaces: a file separated by"
                " spaces? write it as CSV, or name the delimiter with --delimiter"
            )
        if delimiter != ",":
            print(
                f"note: {path}: columns separated by {DELIMITERS[delimiter]} (the header's most"
                " frequent of , ; tab |)"
            )
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, strict=True)
    rows, spans, end = [], [], 0
    try:
        for row in reader:
            rows.append(row)
            spans.append((end + 1, reader.line_num))
            end = reader.line_num
    except csv.Error as e:
        fail(f'{path}:{end + 1}: {e} (an unterminated quote?); expected cells like 1.5 or "a, b"')
    while rows and not rows[-1]:
        rows.pop()
    header = [name.strip() for name in rows[0]]
    if len(rows) == 1:
        fail(f"{path}: a header and no rows; expected one row per record after the header")
    names = header[:-1] if len(header) > 1 and not header[-1] else header
    if all(len(row) == len(names) + 1 and not row[-1].strip() for row in rows[1:]):
        print(
            f"note: {path}: every row ends in {DELIMITERS.get(delimiter, repr(delimiter))}, an"
            " empty last column with no name: left out"
        )
        header, rows = names, [names] + [row[:-1] for row in rows[1:]]
    multi = [(i, s) for i, s in enumerate(spans[1 : len(rows)], 1) if s[1] > s[0]]
    if multi:
        i, (first, last) = multi[0]
        print(
            f"note: {path}:{first}-{last}: a quoted cell holds a line break, read as part of the"
            f" cell ({len(multi)} such row(s)); if a quote is unterminated, close it"
        )
    where = [f"{path}:{first}" for first, _ in spans]
    for i, row in enumerate(rows[1:], 1):
        if not row:
            fail(f"{where[i]}: empty line; expected one row per record")
        if len(row) != len(header):
            fail(
                f"{where[i]}: {len(row)} cells, but the header ({path}:1) names {len(header)}"
                " columns"
                + (
                    " (the last one empty: a delimiter at the end of some rows but not all?"
                    " remove it)"
                    if len(row) == len(header) + 1 and not row[-1].strip()
                    else (
                        f" (separated by {DELIMITERS.get(delimiter, repr(delimiter))}: another"
                        " delimiter? --delimiter)"
                        if delimiter == ","
                        else ""
                    )
                )
            )
    wanted = []
    for j, name in enumerate(header):
        if not name and j == 0 and "" not in header[1:]:
            print(f"note: {path}: column 1 has no name (row names, as R writes them): left out")
            continue
        if not name or name in header[:j]:
            fail(
                f"{path}:1: column {j + 1} of the header is"
                f" {'empty' if not name else f'{name!r} again'}; expected one distinct name per"
                " column"
            )
        if not columns or name in columns:
            wanted.append(j)
    for name in columns or []:
        if name not in header:
            fail(f"{path}:1: --columns names {name!r}, not a column here: {', '.join(header)}")
    values = []
    for j in wanted:
        name, cells = header[j], [row[j].strip() for row in rows[1:]]
        # 12,5 is 12.5; a point would be a thousands separator
        if decimal_comma and name not in text_columns:
            dotted = next(
                (i for i, c in enumerate(cells) if "." in c and NUMBER.fullmatch(c)), None
            )
            if dotted is not None:
                fail(
                    f"{where[dotted + 1]}: column {name!r}: {cells[dotted]!r} holds a point, but"
                    " --decimal-comma says numbers are written 12,5; write it without the"
                    f" thousands separator (or --text {name}: text)"
                )
            cells = [re.sub(r"^([+-]?\d*),(\d+(?:[eE][+-]?\d+)?)$", r"\1.\2", c) for c in cells]
        present = [i for i, c in enumerate(cells) if not is_missing(c)]
        numeric = [i for i in present if NUMBER.fullmatch(cells[i])]
        for i in [] if name in text_columns else present:
            if SEPARATED.fullmatch(cells[i]):
                fail(
                    f"{where[i + 1]}: column {name!r}: {cells[i]!r} holds a thousands separator or"
                    f" a decimal comma; write {cells[i].replace(',', '')} or"
                    f" {cells[i].replace(',', '.')}, or --decimal-comma for a file of decimal"
                    f" commas (or --text {name}: text)"
                )
        for i in [] if name in text_columns else present:
            if plain_number(cells[i]):
                fail(
                    f"{where[i + 1]}: column {name!r}: {cells[i]!r} is a number written with a"
                    " currency or percent sign, digit groups or in hex; write"
                    f" {plain_number(cells[i])} (a unit in the column's name), or --text {name}:"
                    " text"
                )
        if name in text_columns or not numeric:
            values.append([None if is_missing(c) else c for c in cells])
            continue
        for i in present:
            if CODE.fullmatch(cells[i]):
                fail(
                    f"{where[i + 1]}: column {name!r}: {cells[i]!r} has a leading zero, a code (a"
                    f" ZIP code?) rather than a quantity; --text {name} keeps the codes as words,"
                    " or leave it out with --columns"
                )
        bad = next((i for i in sorted(set(present) - set(numeric))), None)
        # mostly numbers: the others are malformed
        if bad is not None and len(numeric) * 2 >= len(present):
            fail(
                f"{where[bad + 1]}: column {name!r}: {cells[bad]!r} is not a number, but"
                f" {len(numeric)} of the column's {len(present)} values are; write it as one (e.g."
                f" 1013.6), or a missing value ({', '.join(MISSING[1:])})"
            )
        if bad is not None:
            fail(
                f"{where[numeric[0] + 1]}: column {name!r}: {cells[numeric[0]]!r} is a number, but"
                " most of the column's values are text; make a column all numbers or all text"
                f" (--text {name})"
            )
        values.append([None if is_missing(c) else Decimal(c) for c in cells])
    return [
        (dict(zip([header[j] for j in wanted], row)), where[i])
        for i, row in enumerate(zip(*values), 1)
    ]


def _constant(name):
    if name != "NaN":
        raise ValueError(f"{name} is not a finite number")


def _object(pairs):
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise ValueError(f"key {k!r} is repeated in one object; expected each key once")
    return dict(pairs)


def read_json(path, text, columns, text_keys):
    """[(record, where)] of a file of JSON objects, one per line (JSON lines), spread over lines, or
    in one array [{...}, {...}]: numbers Decimal (their digits kept), null, NaN and MISSING None."""
    decoder = json.JSONDecoder(
        parse_float=Decimal, parse_int=Decimal, parse_constant=_constant, object_pairs_hook=_object
    )
    space = re.compile(r"\s*")
    records, i, line, at = [], space.match(text).end(), 1, 0
    array = text.startswith("[", i)
    i = space.match(text, i + array).end()
    while i < len(text) and not (array and text[i] == "]"):
        line, at = line + text.count("\n", at, i), i
        where = f"{path}:{line}" + (f" (record {len(records) + 1})" if array else "")
        try:
            record, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            fail(f"{path}:{e.lineno}: not a JSON record ({e.msg} at column {e.colno})")
        except ValueError as e:
            fail(f"{where}: {e}")
        if not isinstance(record, dict) or not record:
            fail(
                f'{where}: expected a JSON object {{"key": value, ...}}, found {text[at:i][:40]!r}'
            )
        record = {
            k: rewrite(v, lambda x: None if isinstance(x, str) and is_missing(x) else x)
            for k, v in record.items()
            if not columns or k in columns
        }
        for k, v in record.items():
            quoted = [
                x
                for x in leaves(v)
                if isinstance(x, str) and (NUMBER.fullmatch(x.strip()) or plain_number(x))
            ]
            if quoted and k not in text_keys:
                fail(
                    f"{where}: key {k!r}: {quoted[0]!r} is a number written as a string; write it"
                    f" as a JSON number ({plain_number(quoted[0]) or quoted[0].strip()}), or --text"
                    f" {k} keeps the key's strings as words"
                )
        records.append((record, where))
        i = space.match(text, i).end()
        if array and text.startswith(",", i):
            i = space.match(text, i + 1).end()
        elif array and i < len(text) and text[i] != "]":
            fail(
                f"{path}:{text.count(chr(10), 0, i) + 1}: expected , or ] after a record of the"
                " JSON array"
            )
    if array and text[i:].strip() != "]":
        fail(
            f"{path}:{text.count(chr(10), 0, i) + 1}: "
            + (
                "the file ends inside the JSON array; expected ] at its end"
                if i == len(text)
                else "expected nothing after the JSON array's ]"
            )
        )
    if not records:
        fail(
            f'{path}: an empty JSON array; expected JSON objects {{"key": value, ...}}, a record'
            " each"
        )
    values = list(records[0][0].values()) if len(records) == 1 else []
    if len(values) > 1 and all(
        isinstance(v, (dict, list)) and len(v) == len(values[0]) > 1 for v in values
    ):
        fail(
            f"{path}: one JSON object of columns, each holding {len(values[0])} values (pandas'"
            " to_json writes this by default); expected a record per row: write it with"
            ' to_json(orient="records", lines=True)'
        )
    return records


def read_file(path, args):
    """([(record, where)] of one file's rows in order, what the file calls a key: "key" (JSON) or
    "column" (CSV))."""
    text = read_text(path).rstrip("\n")  # the newline that ends the last line
    if not text.strip():
        fail(f"{path}: empty file; expected a CSV header and rows, or one JSON record per line")
    if text.lstrip().startswith(("{", "[")):
        return read_json(path, text, args.columns, args.text), "key"
    return (
        read_csv(path, text, args.columns, args.text, args.delimiter, args.decimal_comma),
        "column",
    )


def rewrite(value, f):
    """A value with f applied to each of its leaves."""
    if isinstance(value, dict):
        return {k: rewrite(v, f) for k, v in value.items()}
    return [rewrite(v, f) for v in value] if isinstance(value, list) else f(value)


def leaves(value):
    """The numbers (Decimal), strings, booleans and nulls under a value, in order."""
    if isinstance(value, dict):
        value = list(value.values())
    return [x for v in value for x in leaves(v)] if isinstance(value, list) else [value]


def kinds(value):
    """The kinds of a value's leaves: 'number', 'text' (strings and booleans), 'null' (missing)."""
    return {
        "number" if isinstance(x, Decimal) else "null" if x is None else "text"
        for x in leaves(value)
    }


def numbers(value):
    return [x for x in leaves(value) if isinstance(x, Decimal)]


def reads_numbers(text):
    """Whether the tokenizer reads a number in a JSON string (a key or a text value)."""
    try:
        return any(kind == "num" for kind, _ in split_text(json.dumps(text, ensure_ascii=False)))
    except TextError:
        return True


def one_word(text):
    """A string the tokenizer reads as one word: every character but letters, digits and _ made _
    ("room_12", "_01234")."""
    word = re.sub(r"\W", "_", text)
    return "_" + word if not word or word[0].isdigit() else word


def is_date(x):
    return (
        DATE.fullmatch(x) is not None
        if isinstance(x, str)
        else (isinstance(x, Decimal) and YYYYMMDD.fullmatch(str(x)) is not None)
    )


def date_keys(rows, keys, text_keys):
    """The keys every present value of which is a date or time (not forced to text)."""
    dates = []
    for key in keys:
        values = [r[key] for r, _ in rows if r.get(key) is not None]
        if key not in text_keys and values and all(is_date(v) for v in values):
            dates.append(key)
            # ISO dates and yyyymmdd sort as text
            sortable = all(re.match(r"\d{4}", str(v)) for v in values)
            order = next(
                (
                    w
                    for (a, _), (b, w) in zip(rows, rows[1:])
                    if sortable
                    and None not in (a.get(key), b.get(key))
                    and str(b[key]) < str(a[key])
                ),
                None,
            )
            print(
                f"note: key {key!r} holds dates or times ({values[0]} ... {values[-1]}): left out;"
                " the rows are taken in file order"
                + (f" (they go back in time at {order}: sort the file)" if order else "")
            )
    return dates


def words_for_tokenizer(files):
    """Key names and text values the tokenizer would read as numbers become one word each (noted);
    {old: new} keys."""
    renamed, values = {}, {}
    for _, rows in files:
        for record, _ in rows:
            for key, value in record.items():
                if key not in renamed:
                    renamed[key] = one_word(key) if reads_numbers(key) else key
                for x in leaves(value):
                    if isinstance(x, str) and x not in values:
                        values[x] = one_word(x) if reads_numbers(x) else x
    for mapping, what in ((renamed, "key"), (values, "text value")):
        changed = {a: b for a, b in mapping.items() if a != b}
        clash = {}
        for a, b in mapping.items():
            if clash.setdefault(b, a) != a:
                fail(f"the {what}s {clash[b]!r} and {a!r} would both be written {b!r}; rename one")
        if changed:
            a, b = next(iter(changed.items()))
            print(
                f"note: {len(changed)} {what}(s) the tokenizer would read as numbers written as one"
                f" word each: {a!r} as {b!r}"
                + (" (--mask_key takes the new name)" if what == "key" else "")
            )
    for i, (path, rows) in enumerate(files):
        files[i] = (
            path,
            [
                (
                    {
                        renamed[k]: rewrite(
                            v, lambda x: values.get(x, x) if isinstance(x, str) else x
                        )
                        for k, v in record.items()
                    },
                    where,
                )
                for record, where in rows
            ],
        )
    return renamed


def counts_up(rows, key):
    """The step by which a key's values go up from row to row, the same each time but perhaps
    wrapping to their least (a row number, a year, an hour of the day, a timestamp), else None."""
    xs = [r.get(key) for r, _ in rows]
    if len(xs) <= 2 or not all(isinstance(x, Decimal) for x in xs):
        return None
    low, high = min(xs), max(xs)
    step = next((b - a for a, b in zip(xs, xs[1:]) if (a, b) != (high, low)), 0)
    counts = (
        step > 0
        and high - low >= 2 * step
        and all(b - a == step or (a, b) == (high, low) for a, b in zip(xs, xs[1:]))
    )
    return step if counts else None


def windows(rows, window, stride):
    """[(record, where, row indices)] of rows (record, where) taken window at a time, a window
    starting every stride."""
    if window <= 1:
        return [(r, w, [i]) for i, (r, w) in enumerate(rows)]
    return [
        (
            {key: [rows[i][0].get(key) for i in range(s, s + window)] for key in rows[s][0]},
            rows[s][1],
            list(range(s, s + window)),
        )
        for s in range(0, len(rows) - window + 1, stride)
    ]


def time_parts(path, rows, fractions, window):
    """Train, val and test rows of one file in time order: the first rows, then the next, then the
    last."""
    n = len(rows)
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    counts = (n - n_val - n_test, n_val, n_test)
    if min(counts) < max(window, 1):
        fail(
            f"{path}: --split {','.join(map(str, fractions))} in time order cuts its {n} rows into"
            f" {counts[0]}/{n_val}/{n_test}; each part needs {max(window, 1)} (a window): more"
            " rows, other fractions, or a smaller --window"
        )
    return [rows[: counts[0]], rows[counts[0] : n - n_test], rows[n - n_test :]]


def check_keys(records):
    """Every present value of a key has the same kinds (numbers, text, or both)."""
    kind, first = {}, {}
    for record, where, _ in records:
        for key, value in record.items():
            found = kinds(value) - {"null"}
            if found and key not in kind:
                kind[key], first[key] = found, where
            elif found and found != kind[key]:
                fail(
                    f"{where}: key {key!r} holds {' and '.join(sorted(found))}, but "
                    f"{' and '.join(sorted(kind[key]))} at {first[key]}"
                )
    return kind


def split_records(records, fractions, seed):
    """Train, val and test: a random partition of the records (each split in file order)."""
    n = len(records)
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    counts = (n - n_val - n_test, n_val, n_test)
    if min(counts) < 1:
        fail(
            f"--split {','.join(map(str, fractions))}: {n} records give train/val/test"
            f" {counts[0]}/{n_val}/{n_test}; every split needs a record (more data, or other"
            " fractions)"
        )
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.cumsum(counts)[:-1]
    return [[records[i] for i in sorted(part)] for part in np.split(order, bounds)]


def fractions_of(text):
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3 or min(parts) <= 0 or abs(sum(parts) - 1) > 1e-6:
        fail(
            f"--split {text}: expected three positive fractions that add up to 1 (train,val,test:"
            " 0.8,0.1,0.1)"
        )
    return parts


def scales_of(train, keys, mode):
    """{key: {"center", "spread"}} of every key that holds numbers, from the training records."""
    scales = {}
    for key in keys:
        xs = np.array([float(x) for record, _, _ in train for x in numbers(record.get(key, []))])
        if xs.size == 0:
            fail(
                f"key {key!r} holds no number in the training split ({train[0][1]} ...), so it has"
                " no scale"
            )
        if xs.std() == 0:
            print(
                f"note: key {key!r} is constant in train ({xs[0]:g}): nothing to learn from it;"
                " --columns leaves it out"
            )
        if mode == "none":
            scales[key] = {"center": 0.0, "spread": 1.0}
        # 6 significant digits (the center's to a millionth of the spread): readable, and exactly
        # what is applied
        else:
            spread = float(f"{xs.std():.6g}") or 1.0
            digits = 6 + max(0, math.ceil(math.log10(abs(xs.mean()) / spread))) if xs.mean() else 6
            scales[key] = {"center": float(f"{xs.mean():.{digits}g}"), "spread": spread}
    return scales


def decimals_of(parts, key, spread):
    """The decimals of a key's scaled numbers: the least d with 10^-d * spread <= 10^q / 10 (see
    above)."""
    q = min(
        x.as_tuple().exponent
        for part in parts
        for record, _, _ in part
        for x in numbers(record.get(key, []))
    )
    return max(0, math.ceil(math.log10(spread) - q + 1 - 1e-9))


def scaled(x, scale, digits):
    """A number as written: (x - center) / spread with `digits` decimals, no trailing zeros."""
    if digits is None:
        return str(x)
    s = f"{(float(x) - scale['center']) / scale['spread']:.{digits}f}"
    s = s.rstrip("0").rstrip(".") if "." in s else s
    return "0" if s in ("-0", "") else s


def check_resolution(parts, key, writer):
    """Warn where two different inputs of a key reach the model as one float32, or the key spans
    many decades."""
    seen, xs, told = {}, [], False
    for part in parts:
        for record, where, _ in part:
            for x in numbers(record.get(key, [])):
                xs.append(abs(float(x)))
                y = np.float32(writer(x))
                if seen.setdefault(y, (x, where))[0] != x and not told:
                    told = True
                    print(
                        f"warning: {where}: key {key!r}: {x} and {seen[y][0]} ({seen[y][1]}) reach"
                        f" the model as one value ({y:g} after scaling): too many digits for a"
                        " float32 beside the key's spread, or a range over many decades; write"
                        " log10 of the key as a column of its own, --scale none, or leave the key"
                        " out (--columns) if it is an ID"
                    )
    nonzero = [x for x in xs if x > 0]
    if nonzero and max(nonzero) / min(nonzero) > 1e6:
        print(
            f"warning: key {key!r}: |x| from {min(nonzero):.3g} to {max(nonzero):.3g},"
            f" {math.log10(max(nonzero) / min(nonzero)):.0f} decades: scaled by its spread, the"
            " small ones are close to 0; write log10 of the key as a column of its own, or --scale"
            " none"
        )


def dump(value, write_number):
    """A value as compact JSON, its numbers written by write_number."""
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(k, ensure_ascii=False)}:{dump(v, write_number)}"
                for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(dump(v, write_number) for v in value) + "]"
    return (
        write_number(value) if isinstance(value, Decimal) else json.dumps(value, ensure_ascii=False)
    )


def check_inputs(paths):
    """No file given twice, under one name or two (a val or test file equal to a training file
    leaks)."""
    seen = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            fail(f"cannot read {path}: {e.strerror}")
        if digest in seen:
            fail(
                f"{path} holds the same bytes as {seen[digest]}: a file given twice (or a val/test"
                " file equal to train) would put the same records in two splits; give each file"
                " once"
            )
        seen[digest] = path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="CSV or JSON-lines files (the training data with --val)",
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--window", type=_at_least(1), default=1, help="N consecutive rows of a file per record"
    )
    p.add_argument(
        "--stride",
        type=_at_least(1),
        help="with --window: a window starts every S rows (default N: no overlap)",
    )
    p.add_argument(
        "--order",
        choices=("time", "random"),
        help="split in time order (default with --window) or at random",
    )
    p.add_argument(
        "--split",
        default="0.8,0.1,0.1",
        help="train,val,test fractions (of the rows in time order)",
    )
    p.add_argument(
        "--seed", type=_at_least(0), default=1337, help="seed of the random split (default 1337)"
    )
    p.add_argument("--val", metavar="FILE", help="validation records from FILE instead of a split")
    p.add_argument("--test", metavar="FILE", help="test records from FILE (with --val)")
    p.add_argument(
        "--missing",
        choices=("refuse", "omit", "drop"),
        default="refuse",
        help=(
            f"a missing value ({', '.join(repr(m) for m in MISSING)}, any case; JSON null, NaN):"
            " refuse (default), omit (leave its key out of the record) or drop (leave the record"
            " out)"
        ),
    )
    p.add_argument(
        "--columns", help="the columns (CSV) or top-level keys (JSON) to keep, comma-separated"
    )
    p.add_argument(
        "--text", default="", help="columns to read as text, not numbers or dates, comma-separated"
    )
    p.add_argument(
        "--delimiter", help="the CSV delimiter (default: the header's most frequent of , ; tab |)"
    )
    p.add_argument(
        "--decimal-comma",
        action="store_true",
        help=(
            "CSV numbers are written 12,5 (as European spreadsheets write them, with ; or tab"
            " between cells)"
        ),
    )
    p.add_argument(
        "--scale",
        choices=("auto", "none"),
        default="auto",
        help=(
            "auto: each key's numbers centred and divided by their spread on train; none: as"
            " they are"
        ),
    )
    p.add_argument(
        "--force", action="store_true", help="replace a dataset in --out (other files stay)"
    )
    args = p.parse_args(argv)
    if bool(args.val) != bool(args.test):
        fail("--val and --test go together (or neither, for a --split)")
    if args.stride and args.window <= 1:
        fail("--stride goes with --window N (N > 1): the rows between the starts of two windows")
    fractions = fractions_of(args.split)
    args.columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    args.text = {c.strip() for c in args.text.split(",") if c.strip()}
    args.delimiter = {"tab": "\t", "\\t": "\t"}.get(args.delimiter, args.delimiter)
    stride = args.stride or args.window
    order = args.order or ("time" if args.window > 1 else "random")
    if order == "random" and stride < args.window and not args.val:
        fail(
            f"--stride {stride} < --window {args.window} with --order random: overlapping windows"
            " would share rows between train and test; use --order time, or a stride of at least"
            " the window"
        )
    inputs = args.files + ([args.val, args.test] if args.val else [])
    check_inputs(inputs)
    if os.path.isdir(args.out):  # --force would delete an input before it is read back
        replaced = {os.path.realpath(os.path.join(args.out, n)) for n in dataset_files(args.out)[0]}
        replaced |= {os.path.realpath(os.path.join(args.out, f"{s}.txt")) for s in SPLITS}
        for path in inputs:
            if os.path.realpath(path) in replaced:
                fail(
                    f"{path} is a file that writing a dataset to {args.out} replaces; choose"
                    " another --out"
                )

    nouns = {path: read_file(path, args) for path in inputs}
    files = [(path, nouns[path][0]) for path in inputs]
    rows = [r for _, part in files for r in part]
    keys = list(dict.fromkeys(k for record, _ in rows for k in record))
    for name in args.text:
        if name not in keys:
            fail(f"--text names {name!r}, not a column or key of the files: {', '.join(keys)}")
    dates = date_keys(rows, keys, args.text)
    files = [
        (path, [({k: v for k, v in r.items() if k not in dates}, w) for r, w in part])
        for path, part in files
    ]
    renamed = words_for_tokenizer(files)
    keys = [renamed[k] for k in keys if k not in dates]
    if not keys:
        fail(
            f"{inputs[0]}: no key left once the dates are left out; expected a column of numbers or"
            " text"
        )
    kind = check_keys([(r, w, None) for _, part in files for r, w in part])
    for key in [k for k in keys if k not in kind]:
        fail(
            f"key {key!r} holds no value in any record (each is empty or a missing value); leave it"
            " out with --columns"
        )
    for path, part in files:
        for record, where in part:
            for key in keys:  # a key a record lacks is missing too
                record.setdefault(key, None)
                if args.missing == "refuse" and "null" in kinds(record[key]):
                    fail(
                        f"{where}: {nouns[path][1]} {key!r} is missing (no value, or one of"
                        f" {', '.join(map(repr, MISSING))}, null); --missing=omit leaves it out of"
                        " the record, --missing=drop drops the record"
                    )
                for x in numbers(record[key]):
                    if not math.isfinite(float(x)) or (x and not float(x)):
                        fail(
                            f"{where}: {nouns[path][1]} {key!r}: {x} is beyond what a float64 holds"
                            " (|x| from 1e-308 to 1.8e308, or 0); write the key in other units (a"
                            " power of ten in its name)"
                        )
    steps = {k: {counts_up(part, k) for _, part in files} for k in keys}
    index_like = [k for k in keys if None not in steps[k]]
    for key in index_like:
        print(
            f"note: key {key!r} goes up by {' or '.join(sorted(map(str, steps[key])))} from row to"
            " row (a row number, a year, an hour of the day, a timestamp?): kept as a number;"
            " --columns leaves it out"
        )

    # records per split: (record, where, [(file, row)]), a row's place kept to account for every row
    place = lambda i, rs: [(i, j) for j in rs]
    by_file = [
        [(r, w, place(i, rs)) for r, w, rs in windows(part, args.window, stride)]
        for i, (_, part) in enumerate(files)
    ]
    if args.val:
        n_train = len(args.files)
        parts = [[r for f in by_file[:n_train] for r in f], by_file[n_train], by_file[n_train + 1]]
        how = {"train": args.files, "val": args.val, "test": args.test}
    elif order == "time":
        parts = [[], [], []]
        for i, (path, part) in enumerate(files):
            offset = 0
            for k, rows_k in enumerate(time_parts(path, part, fractions, args.window)):
                parts[k] += [
                    (r, w, [(i, offset + j) for j in rs])
                    for r, w, rs in windows(rows_k, args.window, stride)
                ]
                offset += len(rows_k)
        how = {"files": args.files, "fractions": fractions, "order": "time"}
    else:
        for i, (path, part) in enumerate(files):
            if len(part) < args.window:
                fail(
                    f"{part[-1][1]}: the file ends after {len(part)} rows, before a window of"
                    f" {args.window} is full; lower --window"
                )
        parts = split_records([r for f in by_file for r in f], fractions, args.seed)
        how = {"files": args.files, "fractions": fractions, "seed": args.seed, "order": "random"}
    windowed = {place for part in parts for _, _, places in part for place in places}
    missing = {}  # key -> records it was left out of (omit) or records dropped for it (drop)
    for k, part in enumerate(parts):
        kept = []
        for record, where, places in part:
            gaps = [key for key in keys if "null" in kinds(record[key])]
            for key in gaps:
                missing[key] = missing.get(key, 0) + 1
            if args.missing == "omit":
                record = {key: v for key, v in record.items() if key not in gaps}
            if record and not (args.missing == "drop" and gaps):
                kept.append((record, where, places))
        parts[k] = kept
    for k, part in zip(SPLITS, parts):
        if not part:
            fail(
                f"the {k} split holds no record once"
                f" {'missing values are dropped' if missing else 'split'}; more data, other --split"
                " fractions, or a smaller --window"
            )
    number_keys = [k for k in keys if "number" in kind[k]]
    text_keys = [k for k in keys if "text" in kind[k]]
    scales = scales_of(parts[0], number_keys, args.scale)
    digits = {
        k: None if args.scale == "none" else decimals_of(parts, k, scales[k]["spread"])
        for k in number_keys
    }
    writers = {k: functools.partial(scaled, scale=scales[k], digits=digits[k]) for k in number_keys}
    for k in number_keys:
        check_resolution(parts, k, writers[k])

    lines, vocab, largest, counts = {}, {}, {k: 0.0 for k in number_keys}, []
    for split, part in zip(SPLITS, parts):
        lines[split] = []
        for record, where, _ in part:
            line = (
                "{"
                + ",".join(
                    f"{json.dumps(k, ensure_ascii=False)}:{dump(record[k], writers.get(k, str))}"
                    for k in keys
                    if k in record
                )
                + "}"
            )
            try:
                pieces = split_text(line, where)
            except TextError as e:
                fail(f"{e} (written as {line[:60]!r})")
            tokens = [t for kind_, t in pieces if kind_ == "text"]
            if len(pieces) - len(tokens) != sum(len(numbers(v)) for v in record.values()):
                fail(
                    f"{where}: the tokenizer reads {len(pieces) - len(tokens)} numbers in the"
                    f" record written as {line[:60]!r}, which holds"
                    f" {sum(len(numbers(v)) for v in record.values())}"
                )
            if split == "train":
                vocab.update(dict.fromkeys(tokens))
            else:
                unseen = [t for t in tokens if t not in vocab]
                if unseen:
                    fail(
                        f"{where}: the {split} record holds the text token {unseen[0]!r}, which no"
                        " training record has, so tokenize_numbers.py could not encode it; add"
                        " such records to the training data, or write the value as a number or a"
                        " category train has"
                    )
            counts.append((len(pieces) - len(tokens), len(pieces)))
            lines[split].append(line)
            for k in number_keys:
                for x in numbers(record.get(k, [])):
                    largest[k] = max(
                        largest[k], abs((float(x) - scales[k]["center"]) / scales[k]["spread"])
                    )
    in_train = set(lines["train"])
    repeated = {s: sum(line in in_train for line in lines[s]) for s in SPLITS[1:]}
    varies = [
        k
        for k in number_keys
        if len({x for r, _, _ in parts[0] for x in numbers(r.get(k, []))}) > 1
    ]
    # train.py's hint
    mask_key = next(
        (k for k in varies if k not in index_like), number_keys[0] if number_keys else None
    )

    stage = prepare_out_dir(args.out, args.force, [f"{s}.txt" for s in SPLITS] + ["meta.json"])
    for split in SPLITS:
        write_split(stage, split, lines[split])
    n_rows = len(rows)
    kept_rows = {place for part in parts for _, _, places in part for place in places}
    write_meta(
        stage,
        {
            "dataset": "text",
            "splits": {s: len(lines[s]) for s in SPLITS},
            "source": how,
            "window": args.window if args.window > 1 else None,
            "stride": stride if args.window > 1 else None,
            "keys": keys,
            "text_keys": text_keys,
            "scales": scales,
            "decimals": digits,
            "scale": args.scale,
            "missing": {"markers": list(MISSING), "how": args.missing, "records": missing},
            "dates_left_out": dates,
            "renamed": {a: b for a, b in renamed.items() if a != b},
            "mask_key": mask_key,
            "rows": {"read": n_rows, "in_records": len(kept_rows)},
            "command": " ".join(
                ["python", "prepare/text.py"] + (sys.argv[1:] if argv is None else list(argv))
            ),
        },
    )
    swap_in(args.out, stage)

    unit = f" of {args.window} rows each (a window every {stride})" if args.window > 1 else ""
    print(
        f"wrote {args.out}: train {len(parts[0])}, val {len(parts[1])}, test {len(parts[2])}"
        f" records{unit}, "
        "split "
        + (
            "from the files"
            if args.val
            else "in time order (per file)"
            if order == "time"
            else "at random"
        )
    )
    print(
        f"rows: {n_rows} read = {len(kept_rows)} in records written + {len(windowed - kept_rows)}"
        f" left out for a missing value + {n_rows - len(windowed)} in no window (a file's or a"
        " split's last rows)"
    )
    print(
        f"missing values ({', '.join(map(repr, MISSING))} in any case; JSON null, NaN; a key a"
        " record lacks): "
        + (
            ", ".join(f"{k} {n}" for k, n in missing.items())
            + (
                " records left out (drop)"
                if args.missing == "drop"
                else " values left out of their records (omit)"
            )
            if missing
            else "none"
        )
    )
    for k in keys:
        if k in scales:
            s = scales[k]
            print(
                f"  {k:>12}: numbers, scaled (x - {s['center']:g}) / {s['spread']:g}, {digits[k]}"
                f" decimals, largest |x| written {largest[k]:.3g}"
                if args.scale == "auto"
                else f"  {k:>12}: numbers, as they are, largest |x| {largest[k]:.3g}"
            )
        if k in text_keys:
            values = sorted(
                {
                    v
                    for part in parts
                    for r, _, _ in part
                    for v in leaves(r.get(k))
                    if not isinstance(v, Decimal)
                },
                key=str,
            )
            print(
                f"  {k:>12}: text, {len(values)} value(s): {', '.join(map(str, values[:12]))}"
                + (" ..." if len(values) > 12 else "")
            )
    n_numbers, n_pieces = zip(*counts)
    print(
        f"numbers per record: {min(n_numbers)}-{max(n_numbers)}; tokens per record (xval): "
        f"{min(n_pieces)}-{max(n_pieces)}"
    )
    print(f"text tokens ({len(vocab)}): {' '.join(sorted(vocab))}")
    for s, n in repeated.items():
        if n:
            print(
                f"note: {n} of the {len(lines[s])} {s} records are also, exactly, in train"
                " (duplicate records)"
            )
    for k in number_keys:
        if args.scale == "none" and not 0.1 <= largest[k] <= 10:
            print(
                f"warning: key {k!r}: numbers up to |x| = {largest[k]:.4g}; xVal learns best with"
                " values of order 1 (--scale auto scales them)"
            )
    print(f"next: {shell_line('python', 'tokenize_numbers.py', args.out, '--encoding', 'xval')}")


if __name__ == "__main__":
    one_line_errors()
    main()
