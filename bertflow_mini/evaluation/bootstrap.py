"""Is a difference between two STS scores real? A paired bootstrap over the test pairs.

Two methods scored on the *same* pairs are not independent samples: a pair that is hard for one is
usually hard for the other. The paired bootstrap keeps that pairing. Draw the test pairs with
replacement, score both methods on the same draw, and keep the difference

.. math::

    \\Delta^{*}_r = \\rho(s_a[I_r], g[I_r]) - \\rho(s_b[I_r], g[I_r]), \\qquad r = 1, \\dots, R,

where :math:`I_r` is the r-th draw of pair indices, :math:`s_a, s_b` the two similarities and
:math:`g` the gold scores (Efron & Tibshirani 1993, ch. 13: the percentile interval). The central
``level`` share of the :math:`\\Delta^{*}_r` is the confidence interval; when it excludes 0 the
difference is not explained by which pairs happened to be in the test set.

For a dataset aggregated with ``wmean`` (STS12–16, see :mod:`bertflow_mini.evaluation.sts`) the draw is
*stratified*: each subset is resampled to its own size, so every draw has the subset sizes the
weights assume, and the statistic is the size-weighted mean of per-subset Spearman values.

What this interval does not cover: the randomness of a flow's training seed and of the encoder's
pretraining seed. Those are measured separately (several seeds) and printed beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

__all__ = [
    "PairedDifference",
    "average_difference",
    "compare",
    "paired_bootstrap",
    "resampled_scores",
    "spearman_rows",
    "subset_mean_difference",
]


@dataclass(frozen=True)
class PairedDifference:
    """A difference of two scores (Spearman × 100, or two subsets' mean values) and its bootstrap
    percentile interval."""

    observed: float  # score(a) - score(b) on the test set as it is
    low: float
    high: float
    level: float
    n_resamples: int

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies entirely on one side of 0: the sign is not sampling noise."""
        return self.low > 0 or self.high < 0


def _check(
    sims_a: np.ndarray, sims_b: np.ndarray, gold: np.ndarray
) -> tuple[np.ndarray, ...]:
    arrays = tuple(np.asarray(x, dtype=np.float64) for x in (sims_a, sims_b, gold))
    for name, x in zip(("sims_a", "sims_b", "gold"), arrays):
        if x.ndim != 1 or len(x) != len(arrays[2]):
            raise ValueError(
                f"{name} must be 1-D with one value per pair, got shape {x.shape}"
            )
        if not np.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or infinity")
    if len(arrays[2]) < 3:
        raise ValueError("a bootstrap of Spearman needs at least 3 pairs")
    return arrays


def resample_indices(
    subsets: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """For each subset (first-seen order), an ``(n_resamples, n_subset)`` array of pair indices
    drawn with replacement from that subset's pairs."""
    subsets = np.asarray(subsets)
    draws = []
    for name in dict.fromkeys(subsets.tolist()):
        members = np.flatnonzero(subsets == name)
        draws.append(
            members[rng.integers(0, len(members), (n_resamples, len(members)))]
        )
    return draws


def _centred_ranks(x: np.ndarray) -> np.ndarray:
    # ties get average ranks, as in scipy.stats.spearmanr
    r: np.ndarray = rankdata(x, axis=1)
    centred: np.ndarray = r - r.mean(1, keepdims=True)
    return centred


def _correlate(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        r: np.ndarray = (
            100.0 * (rx * ry).sum(1) / np.sqrt((rx**2).sum(1) * (ry**2).sum(1))
        )
        return r


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ × 100 of each row of ``x`` with the same row of ``y``: the Pearson correlation
    of the rows' ranks."""
    return _correlate(_centred_ranks(x), _centred_ranks(y))


def _weighted_scores(
    sims: dict[str, np.ndarray], gold: np.ndarray, draws: list[np.ndarray]
) -> dict[str, np.ndarray]:
    """Size-weighted mean over subsets of the per-draw Spearman (``wmean``), one value per draw
    and method; the gold scores of each draw are ranked once for all methods."""
    sizes = np.array([d.shape[1] for d in draws], dtype=np.float64)
    total = {name: np.zeros(draws[0].shape[0]) for name in sims}
    for d, size in zip(draws, sizes):
        gold_ranks = _centred_ranks(gold[d])
        for name, s in sims.items():
            total[name] += size * _correlate(_centred_ranks(s[d]), gold_ranks)
    return {name: t / sizes.sum() for name, t in total.items()}


def _labels(subsets: np.ndarray | None, n: int) -> np.ndarray:
    subsets = np.zeros(n) if subsets is None else np.asarray(subsets)
    if subsets.shape != (n,):
        raise ValueError(
            f"subsets must have one label per pair, got shape {subsets.shape}"
        )
    return subsets


def resampled_scores(
    sims: dict[str, np.ndarray],
    gold: np.ndarray,
    subsets: np.ndarray | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Each method's Spearman × 100 (``wmean`` over ``subsets``) on the *same* ``n_resamples``
    draws of pairs: differences of two entries are paired bootstrap values."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    checked = {name: _check(s, s, gold)[0] for name, s in sims.items()}
    gold = np.asarray(gold, dtype=np.float64)
    draws = resample_indices(
        _labels(subsets, len(gold)), n_resamples, np.random.default_rng(seed)
    )
    return _weighted_scores(checked, gold, draws)


def percentile_interval(
    observed: float, diffs: np.ndarray, level: float
) -> PairedDifference:
    """``observed`` with the ``level`` percentile interval of the finite bootstrap ``diffs``."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    diffs = diffs[np.isfinite(diffs)]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return PairedDifference(observed, float(low), float(high), level, len(diffs))


def _observed(sims: np.ndarray, gold: np.ndarray, subsets: np.ndarray) -> float:
    whole = [
        np.flatnonzero(subsets == s)[None, :] for s in dict.fromkeys(subsets.tolist())
    ]
    return float(
        _weighted_scores({"": np.asarray(sims, dtype=np.float64)}, gold, whole)[""][0]
    )


def paired_bootstrap(
    sims_a: np.ndarray,
    sims_b: np.ndarray,
    gold: np.ndarray,
    subsets: np.ndarray | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Observed score(a) − score(b) and its percentile interval at ``level`` (see the module doc)."""
    return compare(sims_a, {"b": sims_b}, gold, subsets, n_resamples, level, seed)["b"]


def compare(
    sims: np.ndarray,
    others: dict[str, np.ndarray],
    gold: np.ndarray,
    subsets: np.ndarray | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, PairedDifference]:
    """score(``sims``) − score(other) for each of ``others``, all on the same draws (each method
    and the gold scores are ranked once per draw)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    for name, other in others.items():
        _check(sims, other, gold)
    gold = np.asarray(gold, dtype=np.float64)
    labels = _labels(subsets, len(gold))
    scores = resampled_scores({"": sims, **others}, gold, labels, n_resamples, seed)
    base = _observed(sims, gold, labels)
    return {
        name: percentile_interval(
            base - _observed(other, gold, labels), scores[""] - scores[name], level
        )
        for name, other in others.items()
    }


def subset_mean_difference(
    values: np.ndarray,
    subsets: np.ndarray,
    a: str,
    b: str,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Mean of ``values`` over subset ``a``'s pairs minus over ``b``'s, with the percentile
    interval from resampling each subset's pairs: is one subset's mean cosine really above
    another's, or is the gap which pairs happened to be drawn?"""
    values, labels = np.asarray(values, dtype=np.float64), np.asarray(subsets)
    if values.ndim != 1 or labels.shape != values.shape:
        raise ValueError("values and subsets must be 1-D, one entry per pair")
    if not np.isfinite(values).all():
        raise ValueError("values contains NaN or infinity")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    for name in (a, b):
        if not (labels == name).any():
            raise ValueError(f"no pair belongs to subset {name!r}")
    pick = (labels == a) | (labels == b)
    draws = resample_indices(labels[pick], n_resamples, np.random.default_rng(seed))
    order = list(dict.fromkeys(labels[pick].tolist()))
    kept = values[pick]
    means = {name: kept[d].mean(1) for name, d in zip(order, draws)}
    observed = float(values[labels == a].mean() - values[labels == b].mean())
    return percentile_interval(observed, means[a] - means[b], level)


def average_difference(
    sims_a: Mapping[str, np.ndarray],
    sims_b: Mapping[str, np.ndarray],
    pairs: Mapping[str, Any],
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """``Avg.`` over the tasks of Spearman × 100 (``wmean``) of ``sims_a`` minus that of
    ``sims_b``, both scored on the same ``pairs`` (task -> STSPairs), with a paired bootstrap
    percentile interval (:class:`PairedDifference`).

    Each task's pairs are resampled as :func:`~bertflow_mini.evaluation.bootstrap.paired_bootstrap`
    does (stratified by subset; the i-th task with ``seed + i``), a and b on the same draws, and
    each draw's differences are averaged over the tasks as the ``Avg.`` column is. The interval
    covers which test pairs were drawn, not the fits' or the encoders' seeds."""
    from bertflow_mini.evaluation.sts import score_similarities, task_average

    if not pairs or set(sims_a) != set(pairs) or set(sims_b) != set(pairs):
        raise ValueError(
            "sims_a, sims_b and pairs must name the same tasks, at least one: got "
            f"{sorted(sims_a)}, {sorted(sims_b)} and {sorted(pairs)}"
        )
    observed, draws = [], []
    for i, (task, p) in enumerate(pairs.items()):
        a, b = (np.asarray(s[task], dtype=np.float64) for s in (sims_a, sims_b))
        observed.append(score_similarities(p, a).wmean - score_similarities(p, b).wmean)
        scores = resampled_scores(
            {"a": a, "b": b}, p.scores, np.asarray(p.subsets), n_resamples, seed + i
        )
        draws.append(scores["a"] - scores["b"])
    return percentile_interval(
        float(task_average(observed)), task_average(np.array(draws), axis=0), level
    )
