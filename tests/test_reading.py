"""prepare/reading.py: a file's rows become a Table of a Column per key, with file and line."""
import reading
import records
from helpers import own_table


def test_a_csv_or_a_json_array_gives_numbers_text_missing_values_and_their_lines(tmp_path):
    table = own_table(tmp_path, "t;p;sky\n1;1013,5;dry\n2;;rain\n", decimal_comma=True)
    assert [table.where(r) for r in range(table.n)] == [f"{tmp_path / 'd.csv'}:{i}" for i in (2, 3)]
    t, p, sky = (table.cols[k] for k in ("t", "p", "sky"))
    assert list(t.x) == [1.0, 2.0] and p.x[0] == 1013.5 and p.code[1] == reading.GAP
    assert [sky.texts[c] for c in sky.code] == ["dry", "rain"] and p.q == -1
    table = own_table(tmp_path, '[{"a": 1.50, "b": ["x", null]},\n {"a": 2, "b": ["NA", "y"]}]', name="d.json")
    assert table.where(1).endswith("d.json:2 (record 2)") and table.cols["a"].q == -2
    assert table.cols["b"].nested == {0: ["x", None], 1: [None, "y"]}
    # a JSON list holding a null holds a missing value
    assert list(records.check_keys(table, "omit")[1]["b"]) == [True, True]


def test_rows_read_8_bytes_at_a_time_keep_their_lines_a_line_break_too(tmp_path, monkeypatch):
    notes = ["a\nb" if i == 4 else "c" for i in range(8)]
    content = "t,note\n" + "".join(f'{i},"{note}"\n' for i, note in enumerate(notes))
    whole = own_table(tmp_path, content)
    monkeypatch.setattr(reading, "BLOCK", 8)
    blocks = own_table(tmp_path, content)
    assert list(blocks.line) == list(whole.line) == [2, 3, 4, 5, 6, 8, 9, 10]
    assert list(blocks.cols["t"].x) == list(range(8)) and blocks.cols["note"].texts == ["c", "a\nb"]

