"""The STS harness: cosine per pair, Spearman × 100 against the gold scores, two ways to aggregate.

A dataset such as STS12 is a union of *subsets* (MSRpar, MSRvid, …) from different sources, whose
gold scores are not on comparable scales. Papers aggregate them in one of two ways:

* ``wmean`` — Spearman's ρ per subset, then the mean weighted by subset size. SentEval, BERT-flow
  and the whitening paper report this.
* ``all`` — pool every pair of the year into one list and compute a single ρ. SBERT and SimCSE
  report this.

The two can differ by several points on STS12–16 for the *same* embeddings, which is the most
common reason published tables disagree. STS-B and SICK-R are single sets, where both are equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import spearmanr

from bertflow_mini.data import TASKS, STSPairs, load_sts, word_set
from bertflow_mini.evaluation.vectors import cosine_scores as cosine_scores

if TYPE_CHECKING:
    from bertflow_mini.evaluation.methods import PostProcessor

Embedder = Callable[[list[str]], np.ndarray]


def cosine_after(
    a: np.ndarray,
    b: np.ndarray,
    post: PostProcessor | None = None,
    fit_on: np.ndarray | None = None,
) -> np.ndarray:
    """Row-wise cosine of ``a`` and ``b`` after the post-processor ``post`` (``None``: raw cosine),
    fitted first on the vectors ``fit_on`` when they are given (else ``post`` is already fitted):
    fit, transform both sides, take the cosine — the one path every evaluation scores through."""
    if post is not None:
        if fit_on is not None:
            post.fit(fit_on)
        a, b = post.transform(a), post.transform(b)
    return cosine_scores(a, b, zero_scores_zero=True)


def spearman(pred: np.ndarray, gold: np.ndarray) -> float:
    """Spearman's rank correlation × 100 (scipy), the number every STS table prints."""
    pred, gold = np.asarray(pred, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if pred.shape != gold.shape or pred.ndim != 1:
        raise ValueError(
            f"pred and gold must be 1-D of equal length, got {pred.shape} and {gold.shape}"
        )
    if len(pred) < 3 or not (np.isfinite(pred).all() and np.isfinite(gold).all()):
        raise ValueError("spearman needs at least 3 finite values on each side")
    return float(spearmanr(pred, gold).statistic) * 100.0


@dataclass
class STSResult:
    """One dataset's score: both aggregations and the per-subset numbers behind them."""

    task: str
    wmean: float
    all: float
    n_pairs: int
    # name -> (n pairs, Spearman)
    subsets: dict[str, tuple[int, float]] = field(default_factory=dict)


def score_pairs(pairs: STSPairs, emb1: np.ndarray, emb2: np.ndarray) -> STSResult:
    """Score one dataset given the embeddings of its left and right sentences (cosine)."""
    if len(emb1) != len(pairs) or len(emb2) != len(pairs):
        raise ValueError(
            f"{pairs.task}: {len(pairs)} pairs but {len(emb1)} / {len(emb2)} embeddings"
        )
    return score_similarities(pairs, cosine_scores(emb1, emb2, zero_scores_zero=True))


def score_similarities(pairs: STSPairs, sims: np.ndarray) -> STSResult:
    """Score one dataset given any predicted similarity per pair: Spearman per subset, ``wmean``, ``all``."""
    sims = np.asarray(sims, dtype=np.float64)
    if sims.shape != (len(pairs),):
        raise ValueError(
            f"{pairs.task}: {len(pairs)} pairs but similarities of shape {sims.shape}"
        )
    subsets = np.asarray(pairs.subsets)
    per_subset = {}
    for name in dict.fromkeys(pairs.subsets):  # first-seen order
        m = subsets == name
        per_subset[name] = (int(m.sum()), spearman(sims[m], pairs.scores[m]))
    sizes = np.array([n for n, _ in per_subset.values()], dtype=np.float64)
    rhos = np.array([r for _, r in per_subset.values()])
    return STSResult(
        task=pairs.task,
        wmean=float((sizes * rhos).sum() / sizes.sum()),
        all=spearman(sims, pairs.scores),
        n_pairs=len(pairs),
        subsets=per_subset,
    )


def word_overlap(sent1: Sequence[str], sent2: Sequence[str]) -> np.ndarray:
    """The no-model baseline: Jaccard similarity |A ∩ B| / |A ∪ B| of the lower-cased word sets
    (words = runs of letters and digits; punctuation ignored). Two empty sentences score 0."""
    out = np.zeros(len(sent1))
    for i, (a, b) in enumerate(zip(sent1, sent2, strict=True)):
        A, B = word_set(a), word_set(b)
        out[i] = len(A & B) / len(A | B) if A | B else 0.0
    return out


@dataclass
class Embedded:
    """Vectors of a set of distinct sentences, looked up by sentence: ``emb(["a", "b"])`` → (2, d)."""

    sentences: list[str]
    vectors: np.ndarray

    def __post_init__(self) -> None:
        if len(self.sentences) != len(self.vectors):
            raise ValueError(
                f"{len(self.sentences)} sentences but {len(self.vectors)} vectors"
            )
        self.index = {s: i for i, s in enumerate(self.sentences)}

    def __call__(self, sentences: Sequence[str]) -> np.ndarray:
        missing = [s for s in sentences if s not in self.index]
        if missing:
            raise KeyError(
                f"{len(missing)} sentence(s) were not encoded, e.g. {missing[0]!r}"
            )
        return self.vectors[[self.index[s] for s in sentences]]


def evaluate_embedder(embed: Embedder, pairs: STSPairs) -> STSResult:
    """Embed a dataset's distinct sentences in one call, then score its pairs."""
    sentences = pairs.sentences()
    emb = Embedded(sentences, embed(sentences))
    return score_pairs(pairs, emb(pairs.sent1), emb(pairs.sent2))


def evaluate(
    embed: Embedder, tasks: Iterable[str] = TASKS, root: str | Path | None = None
) -> list[STSResult]:
    """Evaluate ``embed`` (a function: list of sentences → ``(n, d)`` array) on the test split of each task."""
    return [
        evaluate_embedder(embed, load_sts(task, "test", root=root)) for task in tasks
    ]


#: The papers' name for a row's mean over its datasets.
AVG = "Avg."


def task_average(scores: ArrayLike, axis: int = -1) -> np.ndarray:
    """The papers' ``Avg.``: the mean over the datasets along ``axis``, skipping a NaN (a dataset a
    paper did not report). The one place the average column is computed."""
    scores = np.asarray(scores, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        average: np.ndarray = np.nansum(scores, axis=axis) / (~np.isnan(scores)).sum(
            axis=axis
        )
        return average


@dataclass
class Table:
    """Mean and standard deviation over seeds, one row per system, columns = datasets + ``Avg.``."""

    mean: pd.DataFrame
    std: pd.DataFrame
    seeds: int

    def formatted(self, digits: int = 2) -> pd.DataFrame:
        """Cells as ``"71.23"``, or ``"71.23 ± 0.41"`` when there were several seeds and the spread is not 0."""

        def cell(m: float, s: float) -> str:
            return f"{m:.{digits}f}" + (
                f" ± {s:.{digits}f}" if self.seeds > 1 and s > 0 else ""
            )

        out = self.mean.copy().astype(object)
        for r in out.index:
            for c in out.columns:
                out.loc[r, c] = cell(self.mean.loc[r, c], self.std.loc[r, c])
        return out


def sts_table(
    scores: Mapping[str, np.ndarray | Sequence[Sequence[float]]],
    tasks: Sequence[str],
    seeds: int = 1,
) -> Table:
    """The STS results table both CLI commands print: a row per label, a column per dataset and
    ``Avg.``. ``scores[label]`` holds one run per row (a score per task); the table gives the mean
    over the runs and their sd (``ddof=1``, 0 for one run). ``seeds`` is what was asked for."""
    tasks = list(tasks)
    means, stds = {}, {}
    for label, runs in scores.items():
        values = np.asarray(runs, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != len(tasks) or not len(values):
            raise ValueError(
                f"{label}: scores of shape {values.shape}, want (runs, {len(tasks)})"
            )
        # the Avg. column per run, so that its sd is the spread of the runs' averages
        values = np.column_stack([values, task_average(values)])
        means[label] = values.mean(0)
        stds[label] = (
            values.std(0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1])
        )
    cols = [*tasks, AVG]
    return Table(
        pd.DataFrame(means, index=cols).T, pd.DataFrame(stds, index=cols).T, seeds
    )


def results_table(
    results: Sequence[STSResult], aggregation: str = "wmean", name: str = "ours"
) -> pd.DataFrame:
    """One row (``name``) × one column per task, plus their average: the shape of the papers' tables."""
    if aggregation not in ("wmean", "all"):
        raise ValueError("aggregation must be 'wmean' or 'all'")
    row = {r.task: getattr(r, aggregation) for r in results}
    return sts_table({name: [list(row.values())]}, list(row)).mean


def with_average(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a row per system, a column per dataset) plus the papers' ``Avg.`` column: each
    row's mean over the datasets it has (a dataset a paper did not report is skipped)."""
    out = table.copy()
    out[AVG] = task_average(table.to_numpy(dtype=np.float64))
    return out


def subset_table(results: Sequence[STSResult]) -> pd.DataFrame:
    """Per-subset rows (task, subset, pairs, Spearman) — what ``wmean`` averages."""
    rows = [
        {"task": r.task, "subset": s, "pairs": n, "spearman": rho}
        for r in results
        for s, (n, rho) in r.subsets.items()
    ]
    return pd.DataFrame(rows)
