"""Holes, measured: are convex combinations of sentence embeddings in emptier places than real ones?

Li et al. (2020, section 2.2) argue that rare words leave the embedding space sparse, with "holes"
that carry no meaning; that a mean-pooled sentence vector, a convex combination of token vectors,
can land in one; and that a standard Gaussian has no holes. None of this is measured in the paper.
This module measures it on sentence embeddings:

1. split the sentences into a *reference* set and a *query* set (:func:`query_reference_split`, or
   :func:`pair_split`, which keeps the two sentences of a pair on one side);
2. form convex combinations of query embeddings — midpoints, or random mixtures with Dirichlet
   weights (:func:`mixture_plan`, :func:`mix`);
3. for every real query vector and every mixture, the mean ℓ2 distance to its ``k`` nearest
   reference vectors (:func:`knn_distance`). The parents of a mixture are query vectors, never
   reference vectors, so a mixture cannot find its own parents.

The **hole ratio** is the median k-NN distance of the mixtures over that of the real vectors: above 1,
mixtures sit in emptier neighbourhoods than real sentences do. It is scale-free, so it compares
spaces (raw, whitened, the flow's latent) directly. A Gaussian with the data's mean and covariance
(:func:`gaussian_twin`) has no holes by construction: its ratio is the yardstick.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from bertflow_mini._checks import check_matrix
from bertflow_mini.evaluation.bootstrap import percentile_interval
from bertflow_mini.evaluation.vectors import knn_distance

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from bertflow_mini.encoders.encoder import Encoder
    from bertflow_mini.evaluation.reproduce import Evaluation


def query_reference_split(
    n: int, reference: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(query indices, reference indices): a random split of ``range(n)``, each part sorted."""
    if n < 4 or not 0 < reference < 1:
        raise ValueError(
            f"need n >= 4 and 0 < reference < 1, got n={n}, reference={reference}"
        )
    perm = np.random.default_rng(seed).permutation(n)
    cut = round(n * reference)
    return np.sort(perm[cut:]), np.sort(perm[:cut])


def pair_split(
    sentences: Sequence[str],
    first: Sequence[str],
    second: Sequence[str],
    reference: float = 0.5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(query indices, reference indices) into ``sentences``, split so that the two sentences of
    every pair (``first[i]``, ``second[i]``) fall on the same side: a query's paraphrase partner is
    never among the reference vectors it is measured against. Sentences linked through pairs form
    groups (connected components); whole groups are drawn in random order into the reference part
    until it holds about ``reference`` of the sentences. A pair's sentence missing from
    ``sentences`` is a ValueError."""
    n = len(sentences)
    if n < 4 or not 0 < reference < 1 or len(first) != len(second):
        raise ValueError(
            f"need >= 4 sentences, 0 < reference < 1 and as many first as second "
            f"sentences, got {n}, reference={reference}, {len(first)} vs {len(second)}"
        )
    index = {s: i for i, s in enumerate(sentences)}
    missing = [s for s in (*first, *second) if s not in index]
    if missing:
        raise ValueError(f"{len(missing)} paired sentences are not in `sentences`")
    root = list(range(n))

    def find(i: int) -> int:
        # union-find with path halving
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for a, b in zip(first, second):
        root[find(index[a])] = find(index[b])
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    order = np.random.default_rng(seed).permutation(len(groups))
    members = list(groups.values())
    ref: list[int] = []
    target = round(n * reference)
    for g in order:
        if len(ref) >= target:
            break
        ref.extend(members[g])
    in_ref = np.zeros(n, dtype=bool)
    in_ref[ref] = True
    if in_ref.all():
        raise ValueError(
            "the pairs link every sentence into one group: no split exists"
        )
    return np.flatnonzero(~in_ref), np.flatnonzero(in_ref)


@dataclass
class MixturePlan:
    """Which rows each mixture combines (``parents``, (m, p)) and with what weights (rows sum to 1)."""

    parents: np.ndarray
    weights: np.ndarray


def mixture_plan(
    n: int, m: int, parents: int = 2, kind: str = "midpoint", seed: int = 0
) -> MixturePlan:
    """``m`` convex combinations of ``parents`` distinct rows out of ``n``: equal weights
    (``"midpoint"``) or Dirichlet(1, …, 1) weights (``"random"``, uniform on the simplex)."""
    if not 2 <= parents <= n or m < 1:
        raise ValueError(
            f"need 2 <= parents <= n and m >= 1, got parents={parents}, n={n}, m={m}"
        )
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.choice(n, parents, replace=False) for _ in range(m)])
    if kind == "midpoint":
        weights = np.full((m, parents), 1.0 / parents)
    elif kind == "random":
        weights = rng.dirichlet(np.ones(parents), size=m)
    else:
        raise ValueError(f"kind must be 'midpoint' or 'random', got {kind!r}")
    return MixturePlan(idx, weights)


def mix(X: np.ndarray, plan: MixturePlan) -> np.ndarray:
    """The mixtures of ``plan`` built from the rows of ``X``: ``Σ_j w_ij X[parents_ij]``."""
    x = check_matrix(X, "X").astype(np.float64)
    if plan.parents.max() >= len(x):
        raise ValueError(
            f"the plan uses row {plan.parents.max()} but X has {len(x)} rows"
        )
    result: np.ndarray = np.einsum("mp,mpd->md", plan.weights, x[plan.parents])
    return result


def hole_ratio(
    real: np.ndarray, mixed: np.ndarray, reference: np.ndarray, k: int = 10
) -> float:
    """Median k-NN distance (to ``reference``) of the ``mixed`` rows over that of the ``real`` rows."""
    return float(
        np.median(knn_distance(mixed, reference, k))
        / np.median(knn_distance(real, reference, k))
    )


def task_pair_split(
    evaluation: Evaluation, task: str, reference: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pair_split` of every sentence of ``task`` (all splits, in the order of
    ``evaluation.embedded(task, …).sentences``) by the pairs of all its splits; ``evaluation`` is
    an :class:`~bertflow_mini.evaluation.reproduce.Evaluation`."""
    from bertflow_mini.data.pairs import splits

    parts = [evaluation.load(task, split) for split in splits(task)]
    first = [s for part in parts for s in part.sent1]
    second = [s for part in parts for s in part.sent2]
    return pair_split(evaluation.sentences(task), first, second, reference, seed)


def excess_interval(
    distances: dict[str, np.ndarray],
    twin: dict[str, np.ndarray],
    kind: str = "mixed inside",
    draws: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """The hole ratio of one space minus that of its Gaussian twin, with a bootstrap percentile
    interval: (difference, low, high). Both come from :func:`hole_distances` with the same plan and
    query rows, so one draw resamples the real rows and the mixtures with the same indices in both
    spaces (paired). The interval covers the choice of queries and mixtures, not of the reference
    set or of the twin's sample."""
    if not 0 < level < 1 or draws < 1:
        raise ValueError(f"need 0 < level < 1 and draws >= 1, got {level}, {draws}")
    sizes = {len(d["real"]) for d in (distances, twin)}
    sizes_mixed = {len(d[kind]) for d in (distances, twin)}
    if len(sizes) != 1 or len(sizes_mixed) != 1:
        raise ValueError("the two spaces must share the query rows and the mixtures")
    n, m = sizes.pop(), sizes_mixed.pop()

    def ratio(d: dict[str, np.ndarray], i: np.ndarray, j: np.ndarray) -> np.ndarray:
        # medians along the last axis: one ratio per draw
        result: np.ndarray = np.median(d[kind][j], axis=-1) / np.median(
            d["real"][i], axis=-1
        )
        return result

    everything = (np.arange(n), np.arange(m))
    observed = float(ratio(distances, *everything) - ratio(twin, *everything))
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, n, (draws, n)), rng.integers(0, m, (draws, m))
    interval = percentile_interval(
        observed, ratio(distances, i, j) - ratio(twin, i, j), level
    )
    return interval.observed, interval.low, interval.high


def gaussian_twin(X: np.ndarray, seed: int = 0) -> np.ndarray:
    """As many samples as ``X`` has rows from the Gaussian with ``X``'s mean and covariance."""
    x = check_matrix(X, "X", min_rows=2).astype(np.float64)
    rng = np.random.default_rng(seed)
    return rng.multivariate_normal(
        x.mean(0), np.cov(x, rowvar=False), size=len(x), method="eigh"
    )


Transform = Callable[[np.ndarray], np.ndarray]


def hole_distances(
    X: np.ndarray,
    transform: Transform | None,
    plan: MixturePlan,
    query: np.ndarray,
    reference: np.ndarray,
    k: int = 10,
) -> dict[str, np.ndarray]:
    """k-NN distances (to the mapped reference rows) in the space ``transform`` maps to (None: X's own)
    of the real query rows, of mixtures formed in X's space then mapped (``mixed before``) and of
    mixtures formed in the mapped space (``mixed inside``). For an affine map the two mixtures are
    the same points: an affine map sends convex combinations to the same convex combinations.
    Without a map the two are one computation, done once."""
    f = transform or (lambda v: v)
    real, ref = f(X[query]), f(X[reference])
    inside = knn_distance(mix(real, plan), ref, k)
    before = (
        inside if transform is None else knn_distance(f(mix(X[query], plan)), ref, k)
    )
    return {
        "real": knn_distance(real, ref, k),
        "mixed before": before,
        "mixed inside": inside,
    }


def hole_table(distances: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    """One row per space (the keys of ``distances``, as :func:`hole_distances` returns them): the
    hole ratio (median k-NN distance of the mixtures / that of the real rows) both ways."""
    rows = {}
    for space, d in distances.items():
        real = np.median(d["real"])
        rows[space] = {
            f"hole ratio, {kind}": float(np.median(d[kind]) / real)
            for kind in ("mixed before", "mixed inside")
        }
    return pd.DataFrame(rows).T


def token_counts(encoder: Encoder, sentences: Sequence[str]) -> np.ndarray:
    """Per token id, how often the model saw it in pretraining: the checkpoint's corpus counts
    (:func:`~bertflow_mini.encoders.checkpoints.checkpoint_token_counts`) when it carries them,
    else the counts over ``sentences``."""
    from bertflow_mini.encoders.checkpoints import checkpoint_token_counts

    try:
        return checkpoint_token_counts(str(encoder.source))
    except FileNotFoundError:
        assert encoder.tokenizer is not None
        ids = encoder.tokenizer(list(sentences))["input_ids"]
        return np.bincount(
            np.concatenate([np.asarray(i) for i in ids]),
            minlength=len(encoder.tokenizer),
        )


def content_ids(
    tokenizer: PreTrainedTokenizerBase, sentences: Sequence[str]
) -> list[np.ndarray]:
    """The token ids of each sentence without [CLS]/[SEP] (the tokens whose frequency we ask about)."""
    special = set(tokenizer.all_special_ids)
    return [
        np.array([t for t in ids if t not in special])
        for ids in tokenizer(list(sentences))["input_ids"]
    ]


def sentence_rarity(ids: Sequence[Sequence[int]], counts: np.ndarray) -> np.ndarray:
    """Per sentence, the mean ``−log10`` relative frequency of its tokens (higher = rarer words);
    ``counts`` are corpus counts per token id. Unseen tokens count as seen once."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if counts.ndim != 1 or total <= 0:
        raise ValueError("counts must be a 1-D array with a positive sum")
    out = np.empty(len(ids))
    for i, seq in enumerate(ids):
        arr = np.asarray(seq, dtype=np.int64)
        if len(arr) == 0:
            raise ValueError(f"sentence {i} has no tokens")
        out[i] = float(np.mean(-np.log10(np.maximum(counts[arr], 1.0) / total)))
    return out
