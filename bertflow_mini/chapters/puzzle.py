"""Chapter 0, made executable: how far apart do the cosines of related and unrelated pairs lie?

The puzzle of the book is that raw BERT vectors give *every* pair of sentences a high cosine. This
module turns that into numbers on the STS Benchmark:

* :func:`random_pairs` — pairs of distinct sentences drawn at random ("two arbitrary sentences");
* :func:`separation_row` — the chapter's first table, one row per encoder (or per no-model control):
  the mean similarity of each kind of pair, the AUC
  (:func:`bertflow_mini.evaluation.entailment.auc`) of paraphrases against unrelated pairs, and
  the STS-B Spearman;
* :func:`pooling_grid_table` — STS-B Spearman for every *distinct* pooling of
  :func:`bertflow_mini.encoders.pooling.pooling_grid` (one layer averaged = one layer concatenated);
* :func:`centred_scores` and :func:`mean_share` — what subtracting the mean vector does;
* :func:`most_frequent_tokens` and :func:`mean_pool_dropping` — the mean pooling re-measured with the
  most frequent tokens left out, to test "sentences crowd because they share frequent words";
* :func:`cosine_by_stage` — where a random network's high cosines come from: the mean cosine of
  sentence pairs at each stage of BERT's input, with the position or token-type embeddings zeroed.

Defined for Chapter 0 (``book/00-the-puzzle.ipynb``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini.data import STSPairs
from bertflow_mini.encoders.encoder import Encoder, encode, ordered_batches
from bertflow_mini.encoders.pooling import LAYER_COMBINES, TOKEN_POOLINGS, parse_pooling
from bertflow_mini.evaluation.entailment import auc
from bertflow_mini.evaluation.sts import score_pairs, spearman
from bertflow_mini.evaluation.vectors import cosine_scores

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def random_pairs(n_items: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` index pairs ``(i, j)`` drawn uniformly from ``range(n_items)`` with ``i != j`` always."""
    if n_items < 2 or n < 1:
        raise ValueError(f"need n_items >= 2 and n >= 1, got {n_items} and {n}")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n_items, n)
    j = (
        i + rng.integers(1, n_items, n)
    ) % n_items  # an offset in 1 … n_items-1: never i itself
    return i, j


def _sample(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0 or not np.isfinite(x).all():
        raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers")
    return x


def separation_row(
    random_sims: np.ndarray,
    pair_sims: np.ndarray,
    gold: np.ndarray,
    related: float = 4.0,
    unrelated: float = 1.0,
) -> dict[str, float]:
    """One row of Chapter 0's first table for one way of scoring sentence pairs.

    ``random_sims``: similarities of random sentence pairs; ``pair_sims``: of the test pairs, in the
    order of ``gold``. Paraphrases are pairs with gold ``>= related``, unrelated ones ``<= unrelated``.
    """
    pair_sims, gold = _sample(pair_sims, "pair_sims"), _sample(gold, "gold")
    if pair_sims.shape != gold.shape:
        raise ValueError(
            f"pair_sims {pair_sims.shape} and gold {gold.shape} differ in length"
        )
    para, unrel = pair_sims[gold >= related], pair_sims[gold <= unrelated]
    rand = _sample(random_sims, "random_sims")
    return {
        "sim random": float(rand.mean()),
        "sim unrelated": float(unrel.mean()),
        "sim paraphrase": float(para.mean()),
        "AUC para > unrel.": auc(
            np.concatenate([para, unrel]),
            np.r_[np.ones(len(para)), np.zeros(len(unrel))],
        ),
        "STS-B ρ×100": spearman(pair_sims, gold),
    }


def centred_scores(a: np.ndarray, b: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Cosine of each row pair after subtracting ``mean`` from both: ``cos(a - μ, b - μ)``."""
    a = check_matrix(a, "a")
    mean = np.asarray(mean, dtype=np.float64)
    if mean.shape != (a.shape[1],):
        raise ValueError(f"mean must have shape ({a.shape[1]},), got {mean.shape}")
    return cosine_scores(a - mean, check_matrix(b, "b", dim=a.shape[1]) - mean)


def mean_share(X: np.ndarray) -> float:
    """``‖mean(X)‖² / mean(‖x‖²)``: the share of the average squared norm carried by the mean vector.

    For ``x = μ + e`` with independent mean-zero ``e`` in high dimension, this is about the mean cosine
    of two random rows (Chapter 0, Exercise 1).
    """
    X = check_matrix(X, "X").astype(np.float64)
    return float(np.sum(X.mean(0) ** 2) / np.mean(np.sum(X**2, axis=1)))


def _grid_label(pooling: str, n_layers: int) -> tuple[str, str]:
    spec = parse_pooling(pooling, n_layers)
    k = len(spec.layers)
    return spec.tokens, f"last {k}" if k == 1 else f"last {k} {spec.combine}"


def pooling_grid_table(
    encoder: Encoder, pairs: STSPairs, poolings: Sequence[str], progress: bool = False
) -> pd.DataFrame:
    """Spearman × 100 of ``pairs`` for each distinct pooling: rows = token pooling (cls, mean, max,
    min), columns = ``"last 1"`` (one layer: averaging and concatenating give the same vector, so it
    is scored once), ``"last k avg"``, ``"last k concat"``. One forward pass per cache entry serves
    all."""
    sentences = pairs.sentences()
    row = {s: i for i, s in enumerate(sentences)}
    left, right = [row[s] for s in pairs.sent1], [row[s] for s in pairs.sent2]
    cells = {}
    for pooling in poolings:
        label = _grid_label(pooling, encoder.n_layers)
        if label in cells:  # "last 1 avg" and "last 1 concat": the same vector
            continue
        X = encode(encoder, sentences, pooling, progress=progress)
        cells[label] = score_pairs(pairs, X[left], X[right]).all
    table = pd.Series(cells).unstack()
    ks = sorted({int(c.split()[1]) for c in table.columns})
    columns = ["last 1"] + [
        f"last {k} {c}" for c in LAYER_COMBINES for k in ks if k > 1
    ]
    rows = [t for t in TOKEN_POOLINGS if t in table.index]
    return table.loc[rows, [c for c in columns if c in table.columns]]


# ------------------------------------------------------------------- frequent tokens left out
def most_frequent_tokens(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    k: int,
    max_length: int = 64,
) -> np.ndarray:
    """The ids of the ``k`` tokens that occur most often in ``sentences`` as ``tokenizer`` splits them
    ([CLS] and [SEP] included: they are in every sentence), most frequent first; ties go to the
    smaller id."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    ids = tokenizer(list(sentences), truncation=True, max_length=max_length)[
        "input_ids"
    ]
    counts = Counter(i for seq in ids for i in seq)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return np.array([i for i, _ in ranked[:k]], dtype=np.int64)


@torch.no_grad()
def mean_pool_dropping(
    encoder: Encoder,
    sentences: Sequence[str],
    drop: Sequence[Sequence[int]],
    layers: Sequence[int] | None = None,
    max_length: int = 64,
    batch_size: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean pooling with some tokens left out: for each id list in ``drop``, the masked mean over the
    tokens *not* in it, of the ``hidden_states`` ``layers`` (default: the last layer; several are
    averaged). The network still reads the whole sentence; only the pooling skips the tokens.

    Returns ``(vectors, n_empty)``: ``vectors`` of shape ``(len(drop), len(sentences), dim)``, and per
    drop list the number of sentences with no token left, which keep their full mean instead.
    An empty drop list gives the plain mean pooling (``last-avg`` for the default layer).
    """
    encoder.require_transformer("token-level pooling")
    if (
        isinstance(sentences, str)
        or not sentences
        or not all(isinstance(x, str) for x in sentences)
    ):
        raise ValueError("sentences must be a non-empty sequence of strings")
    sentences = list(sentences)
    L = encoder.n_layers
    layers = [L] if layers is None else [int(i) % (L + 1) for i in layers]
    drop_sets = [torch.as_tensor(np.asarray(list(d), dtype=np.int64)) for d in drop]
    out = np.empty((len(drop_sets), len(sentences), encoder.dim), dtype=np.float32)
    n_empty = np.zeros(len(drop_sets), dtype=np.int64)
    for start, batch, hs in ordered_batches(encoder, sentences, max_length, batch_size):
        hidden = torch.stack([hs[i] for i in layers]).mean(0).float()  # (b, t, d)
        mask = batch["attention_mask"].bool()
        for n, ids in enumerate(drop_sets):
            keep = mask & ~torch.isin(
                batch["input_ids"], ids.to(batch["input_ids"].device)
            )
            empty = ~keep.any(dim=1)
            keep[empty] = mask[empty]  # nothing left: the sentence keeps its full mean
            n_empty[n] += int(empty.sum())
            m = keep.unsqueeze(-1).float()
            pooled = (hidden * m).sum(1) / m.sum(1)
            out[n, start : start + len(pooled)] = pooled.detach().cpu().numpy()
    return out, n_empty


# ------------------------------------------------------------- where a random network's cosine comes from
#: The stages :func:`cosine_by_stage` measures, in the order BERT computes them.
STAGES = ("word vectors", "+ position + token type", "after LayerNorm", "last layer")
#: The additive parts of BERT's input embedding that :func:`cosine_by_stage` can zero.
EMBEDDING_PARTS = ("position", "token type")


def _mean_cosine(X: np.ndarray, left: Sequence[int], right: Sequence[int]) -> float:
    return float(cosine_scores(X[list(left)], X[list(right)]).mean())


@torch.no_grad()
def cosine_by_stage(
    encoder: Encoder,
    left: Sequence[str],
    right: Sequence[str],
    zero: Sequence[str] = (),
    max_length: int = 64,
    batch_size: int = 64,
) -> dict[str, float]:
    """The mean cosine of the sentence pairs ``(left[k], right[k])``, each sentence mean-pooled over
    its tokens ([CLS] and [SEP] included, as ``last-avg``), at each of :data:`STAGES`: the word
    vectors alone (the embedding lookup), their sum with the position and token-type embeddings,
    that sum after the embedding LayerNorm (the model's layer 0), and the last layer.

    ``zero`` names parts of :data:`EMBEDDING_PARTS` set to zero for the measurement; the weights are
    restored afterwards, even on an error. Needs a BERT-style input embedding
    (``model.embeddings`` with word, position and token-type tables and a LayerNorm).
    """
    encoder.require_transformer("cosine_by_stage")
    for name, side in (("left", left), ("right", right)):
        if (
            isinstance(side, str)
            or not side
            or not all(isinstance(x, str) for x in side)
        ):
            raise ValueError(f"{name} must be a non-empty sequence of strings")
    if len(left) != len(right):
        raise ValueError(
            f"left and right differ in length: {len(left)} and {len(right)}"
        )
    unknown = set(zero) - set(EMBEDDING_PARTS)
    if unknown:
        raise ValueError(
            f"zero: unknown parts {sorted(unknown)}; known: {list(EMBEDDING_PARTS)}"
        )
    emb = getattr(encoder.model, "embeddings", None)
    tables: dict[str, Any] = {
        "word": getattr(emb, "word_embeddings", None),
        "position": getattr(emb, "position_embeddings", None),
        "token type": getattr(emb, "token_type_embeddings", None),
    }
    if any(t is None for t in tables.values()):
        raise ValueError(
            f"{encoder.name}: no BERT-style input embedding (word/position/token type)"
        )
    sentences = list(dict.fromkeys([*left, *right]))
    row = {s: n for n, s in enumerate(sentences)}
    pooled = {stage: np.empty((len(sentences), encoder.dim)) for stage in STAGES}
    saved = {part: tables[part].weight.detach().clone() for part in dict.fromkeys(zero)}
    try:
        for part in saved:
            tables[part].weight.zero_()
        for start, batch, hs in ordered_batches(
            encoder, sentences, max_length, batch_size
        ):
            ids = batch["input_ids"]
            types = batch.get("token_type_ids", torch.zeros_like(ids))
            positions = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
            words = tables["word"](ids)
            summed = words + tables["position"](positions) + tables["token type"](types)
            m = batch["attention_mask"].unsqueeze(-1).float()
            for stage, h in zip(STAGES, (words, summed, hs[0], hs[-1])):
                mean = (h.float() * m).sum(1) / m.sum(1)
                pooled[stage][start : start + len(mean)] = mean.cpu().numpy()
    finally:
        for part, weight in saved.items():
            tables[part].weight.copy_(weight)
    a, b = [row[s] for s in left], [row[s] for s in right]
    return {stage: _mean_cosine(X, a, b) for stage, X in pooled.items()}
