"""Is the reference LTM a genuine in-context learner? Quality, zero-information and speed checks.

Used by ``benchmarks/ltm_quality.py``; the book appendix "The reference LTM" renders its result
through its chapter module (the quality tables, the targets and their verdict belong to the paper layer).

* Quality: the LTM (training rows as context) against scikit-learn defaults
  (LogisticRegression / Ridge, RandomForest, kNN, HistGradientBoosting) on real tables
  available offline, every method on the same :class:`~iclmem.ltm.encoding.TableEncoder`
  features (median imputation and standard scaling for the methods that need them).
* Zero information (the premise of Sec. 4.2): in a multiple-choice context, |Y| copies of a
  query's features, one per candidate label, carry no information about the label, so the
  pre-trained model's prediction should be close to uniform: mean entropy / log|Y| near 1.
* Speed: rows per second for a 512-row context with 512 queries, forward and forward+backward.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..data.columns import NUMERIC_TEXT_SHARE
from .encoding import TableEncoder, subsample_features
from .interface import ICLTask
from .reference import ReferenceLTM

CLASSIFICATION_SETS = ("breast_cancer", "wine", "iris", "digits", "spotify")
REGRESSION_SETS = ("diabetes", "wine_pl", "wine_vivino_price", "wine_dot_com_prices")


@dataclass
class Table:
    name: str
    features: pd.DataFrame
    target: np.ndarray
    task: str


def load_table(name: str) -> Table:
    """A benchmark table by name: scikit-learn's bundled sets or a shipped CARTE table (iclmem.data)."""
    from ..data import load_dataset

    ds = load_dataset(name)
    return Table(name, ds.features, ds.target.to_numpy(), ds.task)


def split_table(table: Table, seed: int, max_train: int = 512, max_test: int = 500) -> tuple:
    """Random train/test split: test = min(max_test, 30% of rows), train = min(max_train, rest)."""
    rng = np.random.default_rng(seed)
    n = len(table.target)
    n_test = min(max_test, int(0.3 * n))
    order = rng.permutation(n)
    test, train = order[:n_test], order[n_test:][:max_train]
    if table.task == "classification":  # keep only test labels seen in training
        test = test[np.isin(table.target[test], table.target[train])]
    return train, test


def encode(
    table: Table,
    train: np.ndarray,
    test: np.ndarray,
    max_features: int = 32,
    seed: int = 0,
    numeric_text_share: float | None = NUMERIC_TEXT_SHARE,
):
    """Encoded (train, test) features: encoder fitted on the training rows, then the feature subsample."""
    enc = TableEncoder(numeric_text_share=numeric_text_share).fit(table.features.iloc[train])
    xtr, xte = enc.transform(table.features.iloc[train]), enc.transform(table.features.iloc[test])
    keep = subsample_features(xtr.shape[1], max_features, seed)
    return xtr[:, keep], xte[:, keep]


def ltm_predict(model: ReferenceLTM, xtr, ytr, xte, task: str, chunk: int = 256) -> dict[str, np.ndarray]:
    """Class probabilities or (mean, NLL-ready predictions) of the LTM with the training rows as context."""
    out = []
    for s in range(0, len(xte), chunk):
        out += model.predict([ICLTask(xtr, ytr, xte[s : s + chunk], None, task)])
    if task == "classification":
        return {"proba": np.concatenate([p.probabilities() for p in out])}
    return {"mean": np.concatenate([p.point() for p in out]), "preds": out}


def _baselines(task: str) -> dict[str, object]:
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def prep(m):
        return make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler(), m)

    if task == "classification":
        return {
            "linear": prep(LogisticRegression(max_iter=2000)),
            "random_forest": prep(RandomForestClassifier(random_state=0)),
            "knn": prep(KNeighborsClassifier()),
            "hist_gb": HistGradientBoostingClassifier(random_state=0),
        }
    return {
        "linear": prep(Ridge()),
        "random_forest": prep(RandomForestRegressor(random_state=0)),
        "knn": prep(KNeighborsRegressor()),
        "hist_gb": HistGradientBoostingRegressor(random_state=0),
    }


def _cls_metrics(y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, log_loss, roc_auc_score

    proba = np.clip(proba, 1e-7, 1)
    proba = proba / proba.sum(1, keepdims=True)
    if len(classes) == 2:
        auc = roc_auc_score(y == classes[1], proba[:, 1])
    else:
        present = np.isin(classes, y)
        p = proba[:, present] / proba[:, present].sum(1, keepdims=True)
        auc = roc_auc_score(y, p, multi_class="ovr", labels=classes[present]) if present.sum() > 2 else np.nan
    return {
        "accuracy": accuracy_score(y, classes[proba.argmax(1)]),
        "roc_auc": auc,
        "log_loss": log_loss(y, proba, labels=classes),
    }


def text_numbers_change_encoding(name: str) -> bool:
    """Whether reading text columns of numbers as numbers changes how the table ``name`` is encoded."""
    features = load_table(name).features
    return TableEncoder().fit(features).numeric != TableEncoder(numeric_text_share=None).fit(features).numeric


def evaluate_dataset(
    model: ReferenceLTM, name: str, seeds: list[int], numeric_text_share: float | None = NUMERIC_TEXT_SHARE
) -> pd.DataFrame:
    """One row per (seed, method) with the task's metrics (``numeric_text_share``: see TableEncoder)."""
    from sklearn.metrics import r2_score

    table = load_table(name)
    rows = []
    for seed in seeds:
        train, test = split_table(table, seed)
        xtr, xte = encode(table, train, test, model.cfg.max_features, seed, numeric_text_share)
        ytr, yte = table.target[train], table.target[test]
        base = {
            "dataset": name,
            "task": table.task,
            "seed": seed,
            "n_train": len(train),
            "n_test": len(test),
            "n_features": xtr.shape[1],
        }
        t0 = time.perf_counter()
        pred = ltm_predict(model, xtr, ytr, xte, table.task)
        ltm_s = time.perf_counter() - t0
        if table.task == "classification":
            classes = np.unique(ytr)
            rows.append(base | {"method": "ltm", "seconds": ltm_s} | _cls_metrics(yte, pred["proba"], classes))
        else:
            yf = ytr.astype(float)
            scale = yf.std() + 1e-6
            nll = np.mean(np.concatenate([p.nll().numpy() for p in _with_targets(pred["preds"], yte)])) + np.log(scale)
            rows.append(base | {"method": "ltm", "seconds": ltm_s, "r2": r2_score(yte, pred["mean"]), "nll": nll})
        for method, est in _baselines(table.task).items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(xtr, ytr)
                if table.task == "classification":
                    m = _cls_metrics(yte, est.predict_proba(xte), est.classes_)
                else:
                    m = {"r2": r2_score(yte, est.predict(xte)), "nll": np.nan}
            rows.append(base | {"method": method, "seconds": time.perf_counter() - t0} | m)
    return pd.DataFrame(rows)


def _with_targets(preds, y: np.ndarray):
    out, s = [], 0
    for p in preds:
        n = len(p.task.query_x)
        p.task.query_y = y[s : s + n]
        s += n
        out.append(p)
    return out


def zero_information_check(
    model: ReferenceLTM, name: str, seed: int = 0, n_queries: int = 200, n_candidates: int = 10
) -> dict:
    """Mean entropy / log|Y| of the model's prediction in multiple-choice contexts (Sec. 4.2).

    Classification: Y = the class set. Regression: Y = the true value plus n_candidates - 1
    distinct training values; the bar distribution is renormalized over the candidates' bins.
    """
    table = load_table(name)
    train, test = split_table(table, seed)
    xtr, xte = encode(table, train, test, model.cfg.max_features, seed)
    ytr, yte = table.target[train], table.target[test]
    rng = np.random.default_rng(seed)
    ratios, tasks = [], []
    for i in rng.permutation(len(test))[:n_queries]:
        if table.task == "classification":
            cands = np.unique(ytr)
        else:
            pool = np.setdiff1d(np.unique(ytr), [yte[i]])
            cands = np.r_[yte[i], rng.choice(pool, size=min(n_candidates - 1, len(pool)), replace=False)]
        ctx = np.repeat(xte[i : i + 1], len(cands), axis=0)
        mu, sd = float(ytr.astype(float).mean()), float(ytr.astype(float).std() + 1e-6)
        tasks.append(ICLTask(ctx, cands, xte[i : i + 1], cands[:1], table.task, mu, sd))
    for t, p in zip(tasks, model.predict(tasks), strict=True):
        probs = p.probabilities()[0]
        if t.is_regression:
            from .outputs import bin_index

            z = torch.as_tensor((t.context_y.astype(float) - t.target_center) / t.target_scale, dtype=torch.float32)
            idx = np.unique(bin_index(z, model.cfg.n_bins, model.cfg.bin_bound).numpy())
            probs = probs[idx]
            probs = probs / probs.sum()
        k = len(probs)
        if k < 2:
            continue
        h = -(probs * np.log(np.clip(probs, 1e-12, 1))).sum()
        ratios.append(h / np.log(k))
    return {
        "dataset": name,
        "task": table.task,
        "n_queries": len(ratios),
        "entropy_ratio_mean": float(np.mean(ratios)),
        "entropy_ratio_min": float(np.min(ratios)),
    }


def speed(
    model: ReferenceLTM, n_context: int = 512, n_query: int = 512, n_features: int = 32, repeats: int = 3
) -> dict:
    """Rows per second (context + query rows) forward only and forward+backward."""
    rng = np.random.default_rng(0)
    task = ICLTask(
        rng.normal(size=(n_context, n_features)),
        rng.integers(0, 2, n_context),
        rng.normal(size=(n_query, n_features)),
        rng.integers(0, 2, n_query),
    )
    rows = n_context + n_query
    model.predict([task])  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeats):
        model.predict([task])
    fwd = (time.perf_counter() - t0) / repeats
    net = model.clone()
    t0 = time.perf_counter()
    for _ in range(repeats):
        loss = net.predict([task], grad=True)[0].loss().mean()
        loss.backward()
    fwd_bwd = (time.perf_counter() - t0) / repeats
    return {
        "n_context": n_context,
        "n_query": n_query,
        "n_features": n_features,
        "threads": torch.get_num_threads(),
        "forward_s": fwd,
        "forward_rows_per_s": rows / fwd,
        "forward_backward_s": fwd_bwd,
        "forward_backward_rows_per_s": rows / fwd_bwd,
    }
