"""
The scores of predicted numbers (NaN marks an invalid prediction of a text encoding): eval.py's
tables and sample.py --mask_last read them from here.
"""
import math

import numpy as np


def mse(y, yhat):
    """Mean squared error over the valid (non-NaN) predictions; NaN if there are none."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    ok = ~np.isnan(yhat)
    return float(np.mean((y[ok] - yhat[ok]) ** 2)) if ok.any() else math.nan


def adjusted_r_squared(r2, n, p=1):
    """1 − (1 − R²)(n − 1)/(n − p − 1): R² corrected for p explanatory variables and n points."""
    return 1 - (1 - r2) * (n - 1) / (n - p - 1) if n > p + 1 else math.nan


def accuracy(y, yhat, figures):
    """Fraction of predictions equal to the truth at `figures` significant figures; NaN is wrong."""
    fmt = f"{{:.{figures - 1}e}}"
    return float(np.mean([not math.isnan(p) and fmt.format(p) == fmt.format(t) for t, p in zip(y, yhat)]))


def r_squared(y, yhat):
    """R² = 1 − Σ(y−ŷ)² / Σ(y−ȳ)², over the valid (non-NaN) predictions; NaN with fewer than 2."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    ok = ~np.isnan(yhat)
    y, yhat = y[ok], yhat[ok]
    return float(1 - np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2)) if len(y) > 1 else math.nan
