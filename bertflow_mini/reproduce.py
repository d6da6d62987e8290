"""The paper's STS table, end to end: encode each dataset once, fit each post-processor, score.

For every dataset the steps are the paper's:

1. encode every sentence of the dataset once (BERT frozen; the embedding cache makes reruns free);
2. fit the post-processor — a flow, whitening, or all-but-the-top — on the *fitting set*, without
   labels: ``target`` = the dataset's own sentences (train + dev + test, as Li et al. and Su et al.
   did), or ``train`` = training sentences only;
3. transform the test pairs and score cosine against the gold scores (:mod:`bertflow_mini.sts`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .data import TASKS, canonical_task, load_sts, splits
from .models import Encoder, Pooling, encode
from .published import COLUMNS, published_table
from .sts import STSResult, score_pairs

METHODS = ("none", "flow", "whitening", "whitening-256", "abtt")  # the paper's, for bert-base (768-d)
FIT_CHOICES = ("target", "train")
#: Datasets with no training split of their own are fitted on these training sentences under ``fit="train"``.
TRAIN_FALLBACK = (("STSB", "train"), ("SICK-R", "train"))


@dataclass
class Embedded:
    """Vectors of a set of distinct sentences, looked up by sentence."""

    sentences: list[str]
    vectors: np.ndarray

    def __post_init__(self) -> None:
        self.index = {s: i for i, s in enumerate(self.sentences)}

    def __call__(self, sentences: Sequence[str]) -> np.ndarray:
        missing = [s for s in sentences if s not in self.index]
        if missing:
            raise KeyError(f"{len(missing)} sentence(s) were not encoded, e.g. {missing[0]!r}")
        return self.vectors[[self.index[s] for s in sentences]]


def task_sentences(task: str, which: Iterable[str] | None = None) -> list[str]:
    """Distinct sentences of ``task``'s splits (all of them by default), in first-seen order."""
    task = canonical_task(task)
    seen: dict[str, None] = {}
    for split in which or splits(task):
        seen.update(dict.fromkeys(load_sts(task, split).sentences()))
    return list(seen)


def embed_task(encoder: Encoder, task: str, pooling: Pooling = "first-last-avg", progress: bool = True) -> Embedded:
    """Every sentence of every split of ``task``, encoded once (one cache entry per model and dataset)."""
    sentences = task_sentences(task)
    return Embedded(sentences, encode(encoder, sentences, pooling, progress=progress))


def fitting_sentences(task: str, fit: str = "target") -> list[tuple[str, list[str]]]:
    """The unlabelled sentences a post-processor for ``task`` is fitted on, grouped by source dataset.

    ``target``: the dataset's own sentences, all splits. ``train``: its training split; STS12–16 have
    none, so they use the STS-B and SICK training sentences (:data:`TRAIN_FALLBACK`).
    """
    task = canonical_task(task)
    if fit not in FIT_CHOICES:
        raise ValueError(f"fit must be one of {FIT_CHOICES}, got {fit!r}")
    if fit == "target":
        return [(task, task_sentences(task))]
    if "train" in splits(task):
        return [(task, task_sentences(task, ["train"]))]
    return [(t, task_sentences(t, [s])) for t, s in TRAIN_FALLBACK]


def default_methods(dim: int) -> tuple[str, ...]:
    """:data:`METHODS` with the whitening paper's truncation scaled to the model: it kept 256 of
    bert-base's 768 dimensions and 384 of bert-large's 1024; other widths keep a third (a multiple of 8)."""
    k = {768: 256, 1024: 384}.get(dim, max(8, dim // 3 // 8 * 8))
    return ("none", "flow", "whitening", f"whitening-{k}", "abtt")


def make_postprocessor(method: str, seed: int = 0, progress: bool = False):
    """A fresh, unfitted post-processor for ``method``: ``none``, ``flow``, ``whitening``,
    ``whitening-<k>`` (keep k dimensions) or ``abtt`` (all-but-the-top)."""
    if method == "none":
        return None
    if method == "flow":
        from .flow import FlowTransform

        return FlowTransform(seed=seed, progress=progress)
    if method == "whitening" or method.startswith("whitening-"):
        from .whitening import Whitening

        k = int(method.split("-", 1)[1]) if "-" in method else None
        return Whitening(k=k)
    if method == "abtt":
        from .whitening import AllButTheTop

        return AllButTheTop()
    raise ValueError(f"unknown method {method!r}; use one of {METHODS} or whitening-<k>")


def evaluate_method(
    encoder: Encoder, task: str, pooling: Pooling, method: str, fit: str = "target", seed: int = 0,
    progress: bool = True, fitted: dict | None = None,
) -> STSResult:
    """Spearman on ``task``'s test pairs after fitting ``method`` on its fitting sentences.

    ``fitted``, a dict shared across calls, keeps post-processors already fitted on the same
    sentences (under ``fit="train"`` STS12–16 share one fitting set), so each is fitted once.
    """
    pairs = load_sts(task, "test")
    emb = embed_task(encoder, task, pooling, progress)
    a, b = emb(pairs.sent1), emb(pairs.sent2)
    if method != "none":
        sources = fitting_sentences(task, fit)
        key = (method, seed, repr(pooling), tuple(source for source, _ in sources))
        post = (fitted or {}).get(key)
        if post is None:
            post = make_postprocessor(method, seed, progress)
            parts = [
                (emb if source == canonical_task(task) else embed_task(encoder, source, pooling, progress))(sents)
                for source, sents in sources
            ]
            post.fit(np.concatenate(parts))
            if fitted is not None:
                fitted[key] = post
        a, b = post.transform(a), post.transform(b)
    return score_pairs(pairs, a, b)


@dataclass
class Table:
    """Mean and standard deviation over seeds, one row per method, columns = tasks + ``Avg.``."""

    mean: pd.DataFrame
    std: pd.DataFrame
    seeds: int

    def formatted(self, digits: int = 2) -> pd.DataFrame:
        """Cells as ``"71.23"``, or ``"71.23 ± 0.41"`` when there were several seeds and the spread is not 0."""
        def cell(m: float, s: float) -> str:
            return f"{m:.{digits}f}" + (f" ± {s:.{digits}f}" if self.seeds > 1 and s > 0 else "")

        out = self.mean.copy().astype(object)
        for r in out.index:
            for c in out.columns:
                out.loc[r, c] = cell(self.mean.loc[r, c], self.std.loc[r, c])
        return out


def reproduce(
    encoder: Encoder,
    pooling: Pooling = "first-last-avg",
    methods: Sequence[str] = METHODS,
    fit: str = "target",
    tasks: Sequence[str] = TASKS,
    seeds: int = 1,
    aggregation: str = "wmean",
    progress: bool = True,
) -> Table:
    """The paper-shaped table for one encoder and pooling: a row per method, a column per dataset."""
    if seeds < 1:
        raise ValueError("seeds must be at least 1")
    tasks = [canonical_task(t) for t in tasks]
    means, stds, fitted = {}, {}, {}
    for method in methods:
        runs = seeds if method == "flow" else 1  # only the flow has randomness
        scores = np.array([
            [getattr(evaluate_method(encoder, t, pooling, method, fit, seed, progress, fitted), aggregation)
             for t in tasks]
            for seed in range(runs)
        ])
        scores = np.column_stack([scores, scores.mean(1)])  # the Avg. column, per seed
        means[method] = scores.mean(0)
        stds[method] = scores.std(0, ddof=1) if runs > 1 else np.zeros(scores.shape[1])
    cols = tasks + ["Avg."]
    return Table(pd.DataFrame(means, index=cols).T, pd.DataFrame(stds, index=cols).T, seeds)


def word_overlap_row(tasks: Sequence[str] = TASKS, aggregation: str = "wmean") -> pd.DataFrame:
    """The no-model control: Jaccard word overlap (:func:`bertflow_mini.sts.word_overlap`) per task, + ``Avg.``."""
    from .sts import score_similarities, word_overlap

    row = {}
    for task in (canonical_task(t) for t in tasks):
        pairs = load_sts(task, "test")
        row[task] = getattr(score_similarities(pairs, word_overlap(pairs.sent1, pairs.sent2)), aggregation)
    row["Avg."] = float(np.mean(list(row.values())))
    return pd.DataFrame([row], index=["word overlap (no model)"])


def published_rows(model: str, pooling: Pooling, tasks: Sequence[str] = TASKS) -> pd.DataFrame:
    """The papers' rows for ``model`` and ``pooling`` (empty for models no paper reports), in our columns."""
    table = published_table(model=model)
    if table.empty:
        return table
    table = table[table["pooling"] == (pooling if isinstance(pooling, str) else "")]
    cols = [canonical_task(t) for t in tasks]
    out = table.set_index(table["paper"] + ": " + table["method"] + " (" + table["fit"] + ", " + table["aggregation"] + ")")
    out = out[[c for c in cols if c in COLUMNS]]
    out["Avg."] = out.mean(axis=1)
    return out
