"""The paper's unsupervised question-answering test, and an offline analogue.

Li et al. (2020, section 4.2, Table 4) turn QNLI (Wang et al. 2019, GLUE; questions and sentences
from SQuAD, each pair labelled ``entailment`` when the sentence answers the question) into an
unsupervised test: score each pair by the cosine of the two sentence embeddings, and report the
area under the ROC curve (AUC) of that score for the labels, on the dev set. AUC is the probability
that a random positive pair scores above a random negative one: 0.5 is chance, whatever the scale.

QNLI is not part of the local mirror (:func:`bertflow_mini.data.load_qnli` finds or downloads it,
in Colab). The offline analogue needs no new data: SICK's own ``entailment_judgment`` column
(:func:`bertflow_mini.data.load_sick_entailment`), ``ENTAILMENT`` against ``NEUTRAL`` and
``CONTRADICTION``, scored the same way. This module holds the scoring only.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from bertflow_mini.data.entailment import LabelledPairs
from bertflow_mini.evaluation.published import QNLI_TABLE4

if TYPE_CHECKING:
    from bertflow_mini.evaluation.methods import PostProcessor
    from bertflow_mini.evaluation.sts import Embedder

#: Li et al. (2020) Table 4 (QNLI dev AUC × 100): kept in :mod:`bertflow_mini.evaluation.published`
#: with the papers' other figures and its exact citation.
PUBLISHED_QNLI: dict[str, float] = QNLI_TABLE4


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve, from 0 to 1 (0.5 = chance): the probability that a random positive
    scores above a random negative, ties counting one half (Mann–Whitney U / (n₊ n₋)). Multiply by
    100 to print it on the papers' scale."""
    from scipy.stats import mannwhitneyu

    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(
            f"scores and labels must be 1-D of equal length, got {scores.shape}, {labels.shape}"
        )
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinity")
    pos, neg = scores[labels == 1], scores[labels == 0]
    if len(pos) == 0 or len(neg) == 0 or len(pos) + len(neg) != len(labels):
        raise ValueError("labels must be 0/1 with at least one of each")
    return float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))


def cosine_auc(
    pairs: LabelledPairs,
    embed: Embedder,
    post: PostProcessor | None = None,
    fit_on: list[str] | None = None,
) -> float:
    """AUC × 100 (Li et al.'s Table 4 scale) of the cosine between the two sentences of each pair;
    ``embed`` maps sentences to ``(n, d)``; ``post`` (unfitted post-processor, or None) is fitted on
    ``fit_on`` (default: every sentence of ``pairs``, the paper's "target" fit) and applied to both
    sides first."""
    from bertflow_mini.evaluation.sts import cosine_after

    a, b = embed(pairs.first), embed(pairs.second)
    fit_vectors = None
    if post is not None:
        fit_vectors = embed(fit_on if fit_on is not None else pairs.sentences())
    return 100 * auc(cosine_after(a, b, post, fit_vectors), pairs.labels)


def resampled_aucs(
    scores: Mapping[Hashable, np.ndarray],
    labels: np.ndarray,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[Hashable, np.ndarray]:
    """AUC × 100 of each of ``scores`` (one score per pair) on ``n_resamples`` bootstrap draws of the
    pairs, the same draws for every key (the draws of
    :func:`~bertflow_mini.evaluation.bootstrap.resample_indices`, one subset): the difference of two
    keys' arrays is a paired bootstrap of their AUC difference. A draw that holds pairs of one label
    only has no AUC: NaN there (it happens on small sets, such as a 20-pair trial run), for every
    key alike."""
    from bertflow_mini.evaluation.bootstrap import resample_indices

    labels = np.asarray(labels)
    (draws,) = resample_indices(
        np.zeros(len(labels)), n_resamples, np.random.default_rng(seed)
    )
    positives = labels[draws].sum(1)
    kept = (positives > 0) & (positives < draws.shape[1])  # both labels in the draw
    out = {}
    for key, s in scores.items():
        out[key] = np.full(len(draws), np.nan)
        out[key][kept] = [100 * auc(np.asarray(s)[d], labels[d]) for d in draws[kept]]
    return out
