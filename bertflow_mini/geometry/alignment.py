"""Alignment and uniformity (Wang & Isola 2020): two numbers for what contrastive learning optimises.

On ℓ2-normalised vectors ``f(x)``:

* **alignment** ``E_{(x, y) ~ positive pairs} ‖f(x) − f(y)‖^α`` (α = 2): how close sentences that
  mean the same thing are. Lower is better; 0 when every positive pair coincides.
* **uniformity** ``log E_{x, y ~ data} exp(−t ‖f(x) − f(y)‖²)`` (t = 2): how evenly the vectors
  spread over the unit sphere. Lower is better; 0 when every vector is the same (a collapsed space,
  the anisotropy of raw BERT taken to its limit), about −4 for points spread uniformly over a
  high-dimensional sphere (there ‖u − v‖² ≈ 2 for almost every pair).

Gao et al. (2021, SimCSE, Fig. 2) measure both on STS-B: positive pairs are the pairs with a gold
score above 4 (of 5), the data all STS-B sentences. :func:`stsb_alignment_uniformity` does that on one
split (the test split by default; which split they used is our reading), :func:`method_geometry` for
every method of the book's STS table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from bertflow_mini._checks import check_matrix
from bertflow_mini.evaluation.vectors import unit_rows

if TYPE_CHECKING:
    import pandas as pd

    from bertflow_mini.encoders.pooling import Pooling
    from bertflow_mini.evaluation.reproduce import Evaluation
    from bertflow_mini.evaluation.sts import Embedder


def alignment(a: np.ndarray, b: np.ndarray, alpha: float = 2.0) -> float:
    """Mean ``‖u_i − v_i‖^α`` over the rows of ``a`` and ``b`` (normalised first): the positive pairs."""
    u, v = unit_rows(a, "a"), unit_rows(b, "b")
    if u.shape != v.shape:
        raise ValueError(
            f"a and b must have the same shape, got {u.shape} and {v.shape}"
        )
    return float((np.linalg.norm(u - v, axis=1) ** alpha).mean())


def uniformity(
    x: np.ndarray, t: float = 2.0, max_rows: int | None = 5000, seed: int = 0
) -> float:
    """``log`` of the mean of ``exp(−t ‖u_i − u_j‖²)`` over all pairs i < j of normalised rows.

    Above ``max_rows`` rows a fixed random subset of that size is used (the mean over pairs of a
    subset is an unbiased estimate; exact pairs cost O(n²)). Computed in log space.
    """
    u = unit_rows(x, "x")
    if len(u) < 2:
        raise ValueError("uniformity needs at least 2 rows")
    if max_rows is not None and len(u) > max_rows:
        u = u[
            np.sort(np.random.default_rng(seed).choice(len(u), max_rows, replace=False))
        ]
    # ‖u − v‖² = 2 − 2 u·v on the unit sphere
    sq = np.clip(2.0 - 2.0 * (u @ u.T), 0.0, None)
    pairs = sq[np.triu_indices(len(u), k=1)]
    from scipy.special import logsumexp

    return float(logsumexp(-t * pairs) - np.log(len(pairs)))


def stsb_alignment_uniformity(
    embed: Embedder, threshold: float = 4.0, split: str = "test"
) -> dict[str, float]:
    """Gao et al.'s measurement: alignment over STS-B ``split`` pairs scored ≥ ``threshold``,
    uniformity over all that split's sentences; ``embed`` maps a list of sentences to ``(n, d)``."""
    from bertflow_mini.data import load_sts

    pairs = load_sts("STSB", split)
    keep = pairs.scores >= threshold
    first = [s for s, k in zip(pairs.sent1, keep) if k]
    second = [s for s, k in zip(pairs.sent2, keep) if k]
    return {
        "alignment": alignment(embed(first), embed(second)),
        "uniformity": uniformity(embed(pairs.sentences())),
    }


def method_geometry(
    evaluation: Evaluation,
    methods: Iterable[str],
    pooling: Pooling = "first-last-avg",
    threshold: float = 4.0,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per method of :mod:`bertflow_mini.evaluation.reproduce` (``simcse`` variants included): alignment,
    uniformity and IsoScore of STS-B test sentences. ``evaluation`` is the encoder's
    :class:`bertflow_mini.evaluation.reproduce.Evaluation`: each post-processor is the one its STS table uses
    (fitted on every STS-B sentence, no labels), fitted once for both. IsoScore is
    :func:`bertflow_mini.geometry.isotropy.iso_score`."""
    import pandas as pd

    from bertflow_mini.data import load_sts
    from bertflow_mini.evaluation.methods import split_method
    from bertflow_mini.geometry.isotropy import iso_score

    pairs = load_sts("STSB", "test")
    keep = pairs.scores >= threshold
    rows = {}
    for method in methods:
        tuned, post_name = split_method(method)
        ev = evaluation.simcse() if tuned else evaluation
        emb = ev.embedded("STSB", pooling)
        post = ev.postprocessor("STSB", pooling, post_name, "target", seed)
        f = (lambda x: x) if post is None else post.transform
        a = f(emb([s for s, k in zip(pairs.sent1, keep) if k]))
        b = f(emb([s for s, k in zip(pairs.sent2, keep) if k]))
        every = f(emb(pairs.sentences()))
        rows[method] = {
            "alignment": alignment(a, b),
            "uniformity": uniformity(every),
            "IsoScore": iso_score(every),
        }
    return pd.DataFrame(rows).T


def iso_scores_by_sample(
    transforms: Mapping[str, Callable[[np.ndarray], np.ndarray] | None],
    fitted_on: np.ndarray,
    test: np.ndarray,
    seed: int = 0,
) -> pd.DataFrame:
    """IsoScore of each post-processor's output on three samples — the sentences it was fitted on,
    a random subset of them as large as ``test``, and ``test`` — with the covariance's spectrum on
    the fitted sentences; a last row does the same for exactly isotropic Gaussian samples of each
    size. Separates what the fit guarantees, what a smaller sample costs, and what ``test`` adds.

    ``transforms`` maps a name to ``f(X)`` (``None``: the vectors as they are)."""
    import pandas as pd

    from bertflow_mini.geometry.isotropy import iso_score

    x = check_matrix(fitted_on, "fitted_on").astype(np.float64)
    t = check_matrix(test, "test", dim=x.shape[1]).astype(np.float64)
    if len(t) > len(x):
        raise ValueError(f"test has {len(t)} rows, more than the {len(x)} fitted on")
    rng = np.random.default_rng(seed)
    subset = x[np.sort(rng.choice(len(x), len(t), replace=False))]
    gaussian = {
        "fitted": rng.standard_normal(x.shape),
        "subset": rng.standard_normal(t.shape),
        "test": rng.standard_normal(t.shape),
    }
    samples = {}
    for name, f in transforms.items():
        apply = f or (lambda v: v)
        samples[name] = {"fitted": apply(x), "subset": apply(subset), "test": apply(t)}
    samples["N(0, I) sample of each size"] = gaussian
    rows = {}
    for name, s in samples.items():
        lam = np.linalg.eigvalsh(np.cov(s["fitted"], rowvar=False))
        var = s["fitted"].var(axis=0, ddof=1)
        rows[name] = {
            f"IsoScore, the {len(x):,} fitted on": iso_score(s["fitted"]),
            f"random {len(t):,} of them": iso_score(s["subset"]),
            f"the {len(t):,} test": iso_score(s["test"]),
            "coordinate variance, min": var.min(),
            "coordinate variance, max": var.max(),
            "covariance eigenvalue, min": lam.min(),
            "covariance eigenvalue, max": lam.max(),
        }
    return pd.DataFrame(rows).T
