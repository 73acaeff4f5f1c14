"""The baselines eval.py scores a model against (docs/training.md#evaluate)."""

import json
import math
import os
from collections import Counter, defaultdict

import numpy as np

from dataset import read_samples
from predict import is_json_number, json_paths, masked_groups
from util import TextError, format_number

# a period's peak: its least autocorrelation and rise above the dip before it
PERIOD_R = 0.3
RESAMPLES = 2000  # the verdict's bootstrap
FEWEST = 20  # test records a verdict needs
# when the model loses to its best baseline
NEXT = "longer training (--max_iters), --scale record, a --window covering a period, several seeds"
BASELINES = dict(
    train_mean="training mean",
    least_squares="least squares",
    persistence="persistence",
    seasonal_persistence="seasonal persistence",
)


def previous_values(line, indices, where, what, lag=1, hidden=()):
    """Each masked number's value lag steps earlier in its list (lag 1: the last not hidden), or
    None where that is hidden; what: names a number first in its list as an error."""
    record = json.loads(line)
    paths, out = list(json_paths(record)), []
    hidden = {paths[i] for i in hidden}
    for i in indices:
        *parent, step = paths[i]
        if what and isinstance(step, int) and step < 1:
            raise TextError(f"{where}: {what} with 1 time step(s); a forecast needs at least 2")
        value = record
        for k in parent:
            value = value[k]
        k = step - lag if isinstance(step, int) else -1
        while lag == 1 and (*parent, k) in hidden:
            k -= 1
        out.append(value[k] if k >= 0 and (*parent, k) not in hidden else None)
    return out


def number_at(record, key, step):
    """The number under key (step: in its list), or NaN."""
    v = record.get(key)
    if isinstance(v, list):
        v = v[step] if step is not None and step < len(v) else None
    elif step:
        v = None
    return v if is_json_number(v) else math.nan


class LeastSquares:
    """Least squares (with intercept) of the target column (key, step or None) on the others; a
    missing predictor is filled with its training mean."""

    def __init__(self, columns, target):
        self.columns, self.target, self.rows = [c for c in columns if c != target], target, []

    def row(self, record):
        return [number_at(record, *c) for c in self.columns]

    def add(self, record):
        if not math.isnan(y := number_at(record, *self.target)):
            self.rows.append([*self.row(record), y])

    def fit(self):
        """Self, or None without a predictor."""
        z = np.array(self.rows, float).reshape(-1, len(self.columns) + 1)
        x, y = z[:, :-1], z[:, -1]
        seen = ~np.isnan(x).all(0)
        if not seen.any():
            return None
        self.columns = [c for c, s in zip(self.columns, seen) if s]
        self.predictors = list(dict.fromkeys(k for k, _ in self.columns))
        self.means = np.nanmean(x[:, seen], 0)
        x = np.where(np.isnan(x[:, seen]), self.means, x[:, seen])
        self.weights = np.linalg.lstsq(np.c_[x, np.ones(len(y))], y, rcond=None)[0]
        return self

    def predict(self, records):
        """The prediction for each record with the target; how many lacked a predictor."""
        records = [r for r in records if not math.isnan(number_at(r, *self.target))]
        x = np.array([self.row(r) for r in records], float).reshape(len(records), -1)
        filled = int(np.isnan(x).any(1).sum())
        x = np.where(np.isnan(x), self.means, x)
        return x @ self.weights[:-1] + self.weights[-1], filled


def period_of(lists):
    """The period of short series (each less its straight line): the shortest lag nearly as high as
    the highest peak of their pooled autocorrelation r, or None; r."""
    longest = max(map(len, lists), default=0)
    products, squares, pairs = np.zeros((3, longest + 2))
    for n in set(map(len, lists)):
        x = np.array([v for v in lists if len(v) == n], float)
        line = np.vander(np.arange(n), 2)
        x = x - x @ line @ np.linalg.pinv(line)
        for k in range(1, min(n - 1, n // 2 + 1) + 1):
            products[k] += np.sum(x[:, k:] * x[:, :-k])
            squares[k] += np.sum(x[:, k:] ** 2 + x[:, :-k] ** 2) / 2
            pairs[k] += len(x) * (n - k)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(pairs >= 20, products / squares, math.nan)
    peaks = [
        k
        for k in range(2, longest // 2 + 1)
        if r[k] >= PERIOD_R
        and r[k] > r[k - 1]
        and not r[k] < r[k + 1]
        and r[k] - np.nanmin(r[1:k]) >= PERIOD_R
    ]
    if not peaks:
        return None, r
    best = max(r[k] for k in peaks)
    return next(k for k in peaks if r[k] >= best - 0.1), r


def learn_baselines(task, data, meta, keys, every, period):
    """From the training split: each quantity's mean, each key's least-squares fit and lags."""
    series = task == "era5" or (task == "text" and bool(keys) and every is not True)
    lags = {q: [1] for q in (keys or ["t+1"])} if series else {}
    if task != "text":
        return {"means": {}, "fits": {}, "lags": lags}, []
    own = meta.get("dataset") == "text" and bool(keys)
    window = meta.get("window")
    steps = range(window) if window else [None]
    columns = [(k, i) for k in meta.get("scales") or {} for i in steps]
    # own data: each key's lists and least-squares fit of its last step
    lists = {key: [] for key in keys} if own else {}
    fits = {} if window and every else {k: LeastSquares(columns, (k, steps[-1])) for k in lists}
    path, numbers = os.path.join(data, "train.txt"), {}
    for number, line in read_samples(path, required=False):
        pieces, groups = masked_groups(task, line, f"{path}:{number}", keys, every)
        values = [v for kind, v in pieces if kind == "num"]
        for quantity, indices in groups.items():
            numbers.setdefault(quantity, []).extend(values[i] for i in indices)
        record = json.loads(line) if own else {}
        for key, found in lists.items():
            if key in fits:
                fits[key].add(record)
            v = value_under(record, key)
            if isinstance(v, list) and all(map(is_json_number, v)):
                found.append(v)
    notes = []
    for key in lists if series else ():
        found, r = period_of(lists[key])
        if lag := period or found:
            lags[key].append(lag)
        if not any(lists[key]):
            notes.append(f"{key}: no list of numbers under it: no persistence or seasonal baseline")
            continue
        if period:
            notes.append(f"{key}: seasonal persistence with the period given, --period={period}")
        elif lag:
            notes.append(f"{key}: period {lag} detected in the training lists (r = {r[found]:.2f})")
        else:
            notes.append(f"{key}: no period found in the training lists: no seasonal persistence")
    means = {quantity: float(np.mean(v)) for quantity, v in numbers.items() if v}
    return {"means": means, "fits": {k: f.fit() for k, f in fits.items()}, "lags": lags}, notes


def value_under(record, key):
    """The value under a top-level key, else under a path to a nested one (meta.t), or None."""
    if key in record:
        return record[key]
    for k in key.split("."):
        record = record.get(k) if isinstance(record, dict) else None
    return record


def baseline_predictions(task, numbered, masked, where, learned, window):
    """{quantity: {baseline: (predictions, report extras)}} of a split's (line number, line) pairs
    (masked: each line's groups); {quantity: note} where seasonal persistence lacks values."""
    earlier = {q: {lag: [] for lag in q_lags} for q, q_lags in learned["lags"].items()}
    strict = task == "era5" or window
    counts = Counter()
    for (number, line), groups in zip(numbered, masked):
        at = f"{where}:{number}"
        hidden = [i for indices in groups.values() for i in indices]
        for quantity, indices in groups.items():
            counts[quantity] += len(indices)
            what = ("a station" if task == "era5" else f"key {quantity!r}") if strict else None
            for lag, values in earlier.get(quantity, {}).items():
                values += previous_values(line, indices, at, what, lag, hidden)
    out, notes = defaultdict(dict), {}
    for quantity, mean in learned["means"].items():
        out[quantity]["train_mean"] = ([mean] * counts[quantity], {})
    for quantity, fit in ((q, f) for q, f in learned["fits"].items() if f):
        predicted, filled = fit.predict([json.loads(line) for _, line in numbered])
        if len(predicted) == counts[quantity]:
            extra = {"predictors": fit.predictors, "filled": filled}
            out[quantity]["least_squares"] = (predicted, extra)
    for quantity, by_lag in earlier.items():
        for (lag, values), name in zip(by_lag.items(), ("persistence", "seasonal_persistence")):
            if None not in values:
                out[quantity][name] = (values, {"period": lag} if lag > 1 else {})
            elif lag > 1:
                few = f"a masked number has no value {lag} steps before it that is not masked"
                notes[quantity] = f"no seasonal persistence: {few}"
    return out, notes


def verdict(r, predicted, lines):
    """The model's median against each baseline on the values it predicted (lines: their records),
    and the verdict against the best, or None."""
    y = np.asarray(r["truth"], float)
    # squared errors in the file's units (--scale record: each record's)
    w = np.broadcast_to(np.asarray((r.get("scale") or (0, 1))[1]) ** 2, y.shape)
    model = w * (np.array(r["median"], float) - y) ** 2
    ok = ~np.isnan(model)
    if not predicted or not ok.any():
        return None
    records = np.unique(np.asarray(lines)[ok], return_inverse=True)[1]
    n = int(records.max()) + 1
    # the bootstrap: the same resamples of the records for each baseline, 100 at a time
    rng = np.random.default_rng(0)
    picks = [rng.integers(0, n, (100, n)) for _ in range(RESAMPLES // 100)]
    ours, paired = np.bincount(records, model[ok]), {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, p in predicted.items():
            theirs = np.bincount(records, w[ok] * (np.asarray(p, float)[ok] - y[ok]) ** 2)
            ratios = np.concatenate([ours[pick].sum(1) / theirs[pick].sum(1) for pick in picks])
            low, high = np.percentile(ratios, [2.5, 97.5])
            paired[name] = [float(ours.sum() / theirs.sum()), float(low), float(high)]
    # the least MSE: the highest ratio
    best = max(paired, key=lambda name: paired[name][0])
    _, low, high = paired[best]
    says = "loses to" if low > 1 else "beats" if high < 1 else "no clear difference"
    says = "too few" if n < FEWEST else says
    return dict(best=best, says=says, records=n, paired=paired)


def verdict_text(v):
    """The verdict in words: beats or loses to where its 95% interval excludes 1."""
    ratio, low, high = (format_number(x, 3) for x in v["paired"][v["best"]])
    best, n = f"the best baseline ({BASELINES[v['best']]})", v["records"]
    if v["says"] == "too few":
        said = f"{n} records are too few to tell the model from {best}"
        return f"{said}: its MSE is {ratio}× the baseline's; {FEWEST - n} more would do"
    said = f"the model {v['says']} {best}"
    if v["says"] == "no clear difference":
        said = f"no clear difference between the model and {best}"
    return f"{said}: its MSE is {ratio}× the baseline's (95% interval {low}–{high}, {n} records)"


def in_file_units(x, scale):
    """Scaled values x in the file's units (spread: one, or each value's; None: as they are)."""
    center, spread = scale or (0, 1)
    return np.asarray(x, float) * spread + center


def outside_training(quantity, truths, meta, scale):
    """A note where true values lie outside their key's training range (meta.json's)."""
    ranges = meta.get("ranges") or {}
    key = quantity.split(".t+")[0]
    key = key if key in ranges else key.split(".")[0]
    if key not in ranges or not scale:
        return None
    least, largest = ranges[key]
    y = in_file_units(truths, scale)
    rounding = 10.0 ** -(meta.get("decimals") or {}).get(key, 99) * np.asarray(scale[1])
    out = y[(y < least - rounding) | (y > largest + rounding)]
    if not len(out):
        return None
    below = int((out < least).sum())
    said = f"{len(out)} of {len(y)} true values lie outside the training range"
    said += f" [{least:g}, {largest:g}] ({below} below, {len(out) - below} above,"
    said += f" from {out.min():g} to {out.max():g})"
    if meta.get("scale") != "record":
        said += "; a level that moves: prepare/text.py --scale record"
    return said


def baseline_text(name, scores, task):
    """What a baseline predicts, in words."""
    if name == "least_squares":
        filled = f", in {scores['filled']} record(s)" if scores["filled"] else ""
        return (
            f"least squares on the record's other numbers ({', '.join(scores['predictors'])};"
            f" a missing one filled with its training mean{filled})"
        )
    if name == "seasonal_persistence":
        return f"seasonal persistence (the value {scores['period']} steps earlier)"
    if name == "persistence" and task == "era5":
        return "persistence (each station's previous step)"
    if name == "persistence":
        return "persistence (the key's last value that the model reads)"
    return "the key's training mean"
