"""The paper's STS table, end to end: encode each dataset once, fit each post-processor, score.

For every dataset the steps are the paper's:

1. encode every sentence of the dataset once (BERT frozen; the embedding cache makes reruns free);
2. fit the post-processor — a flow, whitening, or all-but-the-top — on the *fitting set*, without
   labels (:data:`FIT_CHOICES`): ``target`` = the dataset's own sentences (train + dev + test, as
   Li et al. and Su et al. did), ``train`` = training sentences only, ``other`` = training
   sentences of the *other* datasets, none of the target's (the role NLI sentences play in the paper);
3. transform the test pairs and score cosine against the gold scores (:mod:`bertflow_mini.evaluation.sts`).

An :class:`Evaluation` holds one encoder's work for a whole table: each dataset is parsed, hashed
and looked up in the embedding cache once, and each post-processor is fitted once per fitting set.
A new post-processor is one entry in
:data:`~bertflow_mini.evaluation.methods.POSTPROCESSORS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from bertflow_mini.data import TASKS, STSPairs, load_sts
from bertflow_mini.data.pairs import canonical_task, splits
from bertflow_mini.data.sts import distinct_sentences, task_sentences
from bertflow_mini.encoders.encoder import Encoder, encode
from bertflow_mini.encoders.pooling import Pooling
from bertflow_mini.evaluation.methods import (
    METHODS,
    STOCHASTIC,
    PostProcessor,
    make_postprocessor,
    parse_method,
    split_method,
)
from bertflow_mini.evaluation.published import COLUMNS, published_table
from bertflow_mini.evaluation.sts import (
    Embedded,
    STSResult,
    Table,
    cosine_after,
    results_table,
    score_similarities,
    sts_table,
    with_average,
)

__all__ = [
    "Embedded",
    "Evaluation",
    "Table",
    "evaluate_method",
    "fitting_sentences",
    "reproduce",
    "rows_table",
]


FIT_CHOICES = ("target", "train", "other")
#: The datasets with a training split: ``fit="train"`` falls back on them, ``fit="other"`` uses them.
TRAIN_SETS = ("STSB", "SICK-R")
# STS12-16: a test split only
TEST_ONLY = tuple(t for t in TASKS if t not in TRAIN_SETS)


# --------------------------------------------------------------------------------------------
# Sentences: what is encoded, and what each post-processor is fitted on
# --------------------------------------------------------------------------------------------
SentenceSource = Callable[[str, Sequence[str] | None], list[str]]


def _fitting_sets(
    task: str, fit: str, sentences: SentenceSource
) -> list[tuple[str, list[str]]]:
    task = canonical_task(task)
    if fit not in FIT_CHOICES:
        raise ValueError(f"fit must be one of {FIT_CHOICES}, got {fit!r}")
    if fit == "target":
        return [(task, sentences(task, None))]
    if fit == "train" and "train" in splits(task):
        return [(task, sentences(task, ["train"]))]
    sources = [t for t in TRAIN_SETS if fit == "train" or t != task]
    if fit == "train":
        return [(t, sentences(t, ["train"])) for t in sources]
    # "other": never a sentence of the target, nor of STS12-16, which STS-B was compiled from
    # (so the five years share one fitting set, fitted once)
    banned = {s for t in (task, *TEST_ONLY) for s in sentences(t, None)}
    return [
        (t, [s for s in sentences(t, ["train"]) if s not in banned]) for t in sources
    ]


def fitting_sentences(task: str, fit: str = "target") -> list[tuple[str, list[str]]]:
    """The unlabelled sentences a post-processor for ``task`` is fitted on, grouped by source dataset.

    ``target``: the dataset's own sentences, all splits. ``train``: its training split; STS12–16 have
    none, so they use the STS-B and SICK training sentences (:data:`TRAIN_SETS`). ``other``: the
    training sentences of the datasets in :data:`TRAIN_SETS` other than ``task``, less every
    sentence of ``task`` and of STS12–16 (STS-B was compiled from them, so it shares sentences).
    """
    return _fitting_sets(task, fit, lambda t, which: task_sentences(t, which))


def embed_task(
    encoder: Encoder,
    task: str,
    pooling: Pooling = "first-last-avg",
    progress: bool = True,
) -> Embedded:
    """Every sentence of every split of ``task``, encoded once (one cache entry per model and dataset)."""
    sentences = task_sentences(task)
    return Embedded(sentences, encode(encoder, sentences, pooling, progress=progress))


# --------------------------------------------------------------------------------------------
# One encoder's evaluation: parse, hash and fit once
# --------------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """Scores of one encoder under any pooling, method and fitting set, computed at most once each.

    ``Evaluation(enc).score("STSB", "first-last-avg", "flow", fit="target", seed=0)`` — and the
    cosines behind it, :meth:`similarities`, for paired comparisons (:mod:`bertflow_mini.evaluation.bootstrap`).
    """

    encoder: Encoder
    progress: bool = True
    # passed to encode: the paper's max_length, and the batch size (speed only)
    max_length: int = 64
    batch_size: int = 64
    _splits: dict[tuple[str, str], STSPairs] = field(default_factory=dict, repr=False)
    _embedded: dict[tuple[str, str], Embedded] = field(default_factory=dict, repr=False)
    # fitted post-processors, and the SimCSE twins' evaluations (keys ("simcse", seed))
    _fitted: dict[tuple[object, ...], PostProcessor | Evaluation | None] = field(
        default_factory=dict, repr=False
    )

    def load(self, task: str, split: str) -> STSPairs:
        """One split of ``task``, parsed once."""
        key = (canonical_task(task), split)
        if key not in self._splits:
            self._splits[key] = load_sts(*key)
        return self._splits[key]

    def sentences(self, task: str, which: Sequence[str] | None = None) -> list[str]:
        """:func:`task_sentences` from splits parsed once."""
        return distinct_sentences(
            self.load(task, split) for split in which or splits(task)
        )

    def pairs(self, task: str) -> STSPairs:
        """The test pairs of ``task``."""
        return self.load(task, "test")

    def embedded(self, task: str, pooling: Pooling) -> Embedded:
        """Every sentence of ``task`` (all splits) under ``pooling``."""
        key = (canonical_task(task), repr(pooling))
        if key not in self._embedded:
            sents = self.sentences(task)
            vectors = encode(
                self.encoder,
                sents,
                pooling,
                max_length=self.max_length,
                batch_size=self.batch_size,
                progress=self.progress,
            )
            self._embedded[key] = Embedded(sents, vectors)
        return self._embedded[key]

    def postprocessor(
        self,
        task: str,
        pooling: Pooling,
        method: str,
        fit: str = "target",
        seed: int = 0,
    ) -> PostProcessor | None:
        """``method`` fitted on ``task``'s fitting set (shared by tasks with the same set)."""
        if parse_method(method)[0] not in STOCHASTIC:
            seed = 0
        sources = _fitting_sets(task, fit, self.sentences)
        key = (method, seed, repr(pooling), fit, tuple(s for s, _ in sources))
        if key not in self._fitted:
            post = make_postprocessor(method, seed, self.progress)
            if post is not None:
                parts = [self.embedded(src, pooling)(sents) for src, sents in sources]
                post.fit(np.concatenate(parts))
            self._fitted[key] = post
        return cast("PostProcessor | None", self._fitted[key])

    def simcse(self, seed: int = 0) -> Evaluation:
        """The evaluation of this encoder fine-tuned by SimCSE with training seed ``seed``
        (:mod:`bertflow_mini.encoders.simcse`), made once per seed."""
        from bertflow_mini.encoders.names import simcse_encoder

        key = ("simcse", seed)
        if key not in self._fitted:
            self._fitted[key] = Evaluation(
                simcse_encoder(self.encoder, seed),
                self.progress,
                self.max_length,
                self.batch_size,
            )
        return cast(Evaluation, self._fitted[key])

    def similarities(
        self,
        task: str,
        pooling: Pooling,
        method: str = "none",
        fit: str = "target",
        seed: int = 0,
    ) -> np.ndarray:
        """Cosine of each test pair of ``task`` after ``method`` (``simcse[+<method>]``: the encoder
        fine-tuned by SimCSE, :mod:`bertflow_mini.encoders.simcse`, then ``<method>``)."""
        tuned, method = split_method(method)
        if tuned:  # SimCSE changes the encoder, not the space: its own Evaluation
            return self.simcse().similarities(task, pooling, method, fit, seed)
        pairs, emb = self.pairs(task), self.embedded(task, pooling)
        post = self.postprocessor(task, pooling, method, fit, seed)
        return cosine_after(emb(pairs.sent1), emb(pairs.sent2), post)

    def score(
        self,
        task: str,
        pooling: Pooling,
        method: str = "none",
        fit: str = "target",
        seed: int = 0,
    ) -> STSResult:
        """Spearman × 100 of :meth:`similarities` against the gold scores (both aggregations)."""
        sims = self.similarities(task, pooling, method, fit, seed)
        return score_similarities(self.pairs(task), sims)


def evaluate_method(
    encoder: Encoder,
    task: str,
    pooling: Pooling,
    method: str,
    fit: str = "target",
    seed: int = 0,
    progress: bool = True,
    evaluation: Evaluation | None = None,
) -> STSResult:
    """Spearman on ``task``'s test pairs after fitting ``method`` on its fitting sentences.

    Pass one ``evaluation`` to many calls to parse, encode and fit each thing once.
    """
    if evaluation is None:
        evaluation = Evaluation(encoder, progress)
    return evaluation.score(task, pooling, method, fit, seed)


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------
#: A table row: (pooling, method, fitting set).
Row = tuple[Pooling, str, str]


def rows_table(
    evaluation: Evaluation,
    rows: dict[str, Row],
    tasks: Sequence[str] = TASKS,
    seeds: int = 1,
    aggregation: str = "wmean",
) -> Table:
    """One row per ``label: (pooling, method, fit)``, a column per dataset and ``Avg.``.

    Stochastic methods (:data:`STOCHASTIC`) run ``seeds`` times (mean ± sd, ``ddof=1``)."""
    if seeds < 1:
        raise ValueError("seeds must be at least 1")
    if aggregation not in ("wmean", "all"):
        raise ValueError(f"aggregation must be 'wmean' or 'all', got {aggregation!r}")
    tasks = [canonical_task(t) for t in tasks]
    scores = {}
    for label, (pooling, method, fit) in rows.items():
        runs = seeds if parse_method(split_method(method)[1])[0] in STOCHASTIC else 1
        scores[label] = [
            [
                getattr(evaluation.score(t, pooling, method, fit, seed), aggregation)
                for t in tasks
            ]
            for seed in range(runs)
        ]
    return sts_table(scores, tasks, seeds)


def reproduce(
    encoder: Encoder,
    pooling: Pooling = "first-last-avg",
    methods: Sequence[str] = METHODS,
    fit: str = "target",
    tasks: Sequence[str] = TASKS,
    seeds: int = 1,
    aggregation: str = "wmean",
    progress: bool = True,
    evaluation: Evaluation | None = None,
) -> Table:
    """The paper-shaped table for one encoder and pooling: a row per method (:func:`rows_table`)."""
    evaluation = evaluation or Evaluation(encoder, progress)
    rows = {method: (pooling, method, fit) for method in methods}
    return rows_table(evaluation, rows, tasks, seeds, aggregation)


def word_overlap_row(
    tasks: Sequence[str] = TASKS, aggregation: str = "wmean"
) -> pd.DataFrame:
    """The no-model control: Jaccard word overlap (:func:`bertflow_mini.evaluation.sts.word_overlap`) per task, + ``Avg.``."""
    from bertflow_mini.evaluation.sts import word_overlap

    results = []
    for task in (canonical_task(t) for t in tasks):
        pairs = load_sts(task, "test")
        results.append(
            score_similarities(pairs, word_overlap(pairs.sent1, pairs.sent2))
        )
    return results_table(results, aggregation, "word overlap (no model)")


def published_rows(
    model: str, pooling: Pooling, tasks: Sequence[str] = TASKS
) -> pd.DataFrame:
    """The papers' rows for ``model`` and ``pooling`` (empty for models no paper reports), in our columns."""
    table = published_table(model=model)
    if table.empty:
        return table
    table = table[table["pooling"] == (pooling if isinstance(pooling, str) else "")]
    cols = [canonical_task(t) for t in tasks]
    label = (
        table["paper"]
        + ": "
        + table["method"]
        + " ("
        + table["fit"]
        + ", "
        + table["aggregation"]
        + ")"
    )
    out = table.set_index(label)
    return with_average(out[[c for c in cols if c in COLUMNS]])
