"""The output layer of a pretrained checkpoint, measured: is it a cone, and where are the unseen tokens?

``scratch-bert`` ties its decoder to its input embeddings, so row ``x`` of the word-embedding matrix is
both the input vector of token ``x`` and the ``w_x`` of the softmax ``p(x|h) ∝ exp(hᵀw_x + b_x)``.
Its checkpoints at 0, 25, 50 and 100 % of pretraining carry the count of every vocabulary token in the
training corpus, so we can split the vocabulary into tokens the softmax was trained to predict and
tokens that were never a target (count 0: the *unseen* tokens of Gao et al.'s Theorem 1).

* :func:`load_output_layer` / :func:`output_layer` — embeddings, output biases, counts, special tokens;
* :func:`top_singular_share` — the share of ``‖E‖²_F`` in the top singular directions (uncentred: a
  cone's common direction counts, unlike in a principal-component share);
* :func:`geometry` / :func:`geometry_table` — the cone measures of one checkpoint / several;
* :func:`count_groups` — norm, bias and within-group mean cosine by corpus count;
* :func:`softmax_inputs` — the vectors ``h`` the softmax reads, for real sentences;
* :func:`negative_direction_share` — how many unseen embeddings are uniformly negative directions.

Defined for Chapter 4 (``book/04-representation-degeneration.ipynb``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd
import scipy.stats
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini.geometry.isotropy import explained_variance_top, mean_random_cosine

#: Corpus-count groups of :func:`count_groups`: [0, 1) is "unseen", [1, 2) "seen once", …
COUNT_EDGES = (0, 1, 2, 10, 100, 1_000, 10_000)


@dataclass
class OutputLayer:
    """A checkpoint's tied output layer and its training corpus' token counts (all indexed by token id)."""

    name: str
    embeddings: np.ndarray  # (V, d): input embeddings = decoder weights w_x
    bias: np.ndarray  # (V,): the decoder's output bias b_x
    counts: np.ndarray  # (V,): how often x occurs in the training corpus
    special: np.ndarray  # (V,) bool: [PAD], [UNK], [CLS], [SEP], [MASK] — left out of every measure
    counts_from: str = "the training corpus"  # or an estimate: see :func:`token_counts`

    @property
    def seen(self) -> np.ndarray:
        """Tokens the corpus contains: targets of the MLM loss."""
        return (self.counts > 0) & ~self.special

    @property
    def unseen(self) -> np.ndarray:
        """Tokens the corpus never contains: never a target, so the softmax only ever pushes them."""
        return (self.counts == 0) & ~self.special


def output_layer(model, counts: np.ndarray, special_ids: Sequence[int], name: str = "") -> OutputLayer:
    """The :class:`OutputLayer` of a ``BertForMaskedLM`` (whose decoder must be tied to its embeddings)."""
    E = model.get_input_embeddings().weight
    if model.get_output_embeddings().weight.data_ptr() != E.data_ptr():
        raise ValueError("the model's decoder is not tied to its input embeddings")
    counts = np.asarray(counts)
    if counts.shape != (E.shape[0],):
        raise ValueError(f"counts must have one entry per token ({E.shape[0]}), got shape {counts.shape}")
    special = np.zeros(len(counts), dtype=bool)
    special[list(special_ids)] = True
    return OutputLayer(name=name, embeddings=E.detach().double().cpu().numpy().copy(),
                       bias=model.cls.predictions.bias.detach().double().cpu().numpy().copy(),
                       counts=counts, special=special)


#: Words in BERT's pretraining corpus (BooksCorpus 800 M + English Wikipedia 2,500 M; Devlin et al. 2019)
BERT_CORPUS_WORDS = 3_300_000_000
ESTIMATED = "wordfreq × 3.3 B words (an estimate: the model's corpus counts are not published)"


def token_counts(name: str, tokenizer=None) -> tuple[np.ndarray, str]:
    """(count per token id, where the counts come from) for checkpoint ``name``.

    Checkpoints pretrained by :mod:`bertflow_mini.encoders.pretrain` carry their corpus' exact counts.
    For any other model the counts are *estimated*: ``wordfreq``'s English frequency of the token
    (``##`` stripped) times :data:`BERT_CORPUS_WORDS`, rounded; ``[unused…]`` tokens, which BERT's
    vocabulary reserves and its corpus never contains, count 0. An estimate, so the chapter says so.
    """
    from bertflow_mini.encoders.checkpoints import checkpoint_token_counts

    try:
        return checkpoint_token_counts(name), "the training corpus"
    except FileNotFoundError:
        pass
    from bertflow_mini.geometry.frequency import word_frequencies

    if tokenizer is None:
        from transformers import AutoTokenizer

        from bertflow_mini.encoders.names import resolve_model

        tokenizer = AutoTokenizer.from_pretrained(resolve_model(name))
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    words = [t.removeprefix("##") for t in tokens]
    counts = np.rint(word_frequencies(words) * BERT_CORPUS_WORDS).astype(np.int64)
    counts[[t.startswith("[unused") for t in tokens]] = 0
    return counts, ESTIMATED


def load_output_layer(name: str) -> OutputLayer:
    """:func:`output_layer` of a checkpoint by name (``"scratch-bert@25"``, a MultiBERTs step, …),
    with its :func:`token_counts` (exact for the book's checkpoints, estimated for others)."""
    from transformers import AutoTokenizer

    from bertflow_mini.encoders.checkpoints import load_mlm
    from bertflow_mini.encoders.names import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(name))
    counts, source = token_counts(name, tokenizer)
    layer = output_layer(load_mlm(name), counts, tokenizer.all_special_ids, name=name)
    layer.counts_from = source
    return layer


def checkpoint_step(name: str) -> int | None:
    """The pretraining step of a checkpoint along :func:`~bertflow_mini.encoders.checkpoints_along_training`:
    the book's recipe for ``scratch-bert@p``, the name for MultiBERTs (``…-step_20k`` → 20,000);
    None where it is not known (a released model, an ``@0`` control counts as 0)."""
    import json
    import re

    from bertflow_mini.encoders import pretrain

    percent = pretrain.parse_name(name)
    if percent is not None:
        recipe = json.loads((pretrain.checkpoint(pretrain.NAME) / "recipe.json").read_text())["recipe"]
        return round(recipe["steps"] * percent / 100)
    found = re.search(r"step_(\d+)k$", name)
    if found:
        return int(found.group(1)) * 1000
    return 0 if name.endswith("@0") else None


def top_singular_share(E: np.ndarray, k: int = 1) -> float:
    """``Σ_{i≤k} σ_i² / Σ_i σ_i²`` for the singular values of ``E`` itself, not centred (k/d if isotropic).

    The ``σ_i²`` are the eigenvalues of the d×d Gram matrix ``EᵀE``: cheaper than an SVD of ``E``.
    """
    x = check_matrix(E, "E", min_rows=2).astype(np.float64)
    if not 1 <= k <= min(x.shape):
        raise ValueError(f"k must be between 1 and {min(x.shape)}, got {k}")
    s2 = np.clip(np.linalg.eigvalsh(x.T @ x)[::-1], 0.0, None)
    return float(s2[:k].sum() / s2.sum())


def geometry(layer: OutputLayer, seed: int = 0) -> dict[str, float]:
    """The cone measures of one checkpoint, over its non-special tokens (Spearman over seen tokens)."""
    E = layer.embeddings
    keep, seen, unseen = ~layer.special, layer.seen, layer.unseen
    norms = np.linalg.norm(E, axis=1)
    return {
        "mean cosine": mean_random_cosine(E[keep], seed=seed),
        "top-1 singular share": top_singular_share(E[keep], 1),
        "top-1 PC variance share": explained_variance_top(E[keep], 1),
        "Spearman(count, norm)": float(scipy.stats.spearmanr(layer.counts[seen], norms[seen]).statistic),
        "norm seen": float(norms[seen].mean()),
        "norm unseen": float(norms[unseen].mean()),
        "bias seen": float(layer.bias[seen].mean()),
        "bias unseen": float(layer.bias[unseen].mean()),
    }


def geometry_table(layers: dict[str, OutputLayer], seed: int = 0) -> pd.DataFrame:
    """One row of :func:`geometry` per named checkpoint."""
    if not layers:
        raise ValueError("geometry_table needs at least one output layer")
    return pd.DataFrame({name: geometry(layer, seed) for name, layer in layers.items()}).T


def _group_label(lo: int, hi: float) -> str:
    if hi == lo + 1:
        return "unseen (0)" if lo == 0 else f"{lo:,}"
    return f"≥ {lo:,}" if np.isinf(hi) else f"{lo:,}–{int(hi) - 1:,}"


def count_groups(layer: OutputLayer, edges: Sequence[int] = COUNT_EDGES, seed: int = 0) -> pd.DataFrame:
    """Per corpus-count group ``[edges[i], edges[i+1])`` (the last open): number of tokens, mean norm,
    mean output bias and the mean cosine between two tokens of the group. Empty groups are left out."""
    edges = [*edges, np.inf]
    if any(b <= a for a, b in pairwise(edges)) or edges[0] < 0:
        raise ValueError(f"edges must be non-negative and increasing, got {edges[:-1]}")
    E, keep, rows = layer.embeddings, ~layer.special, {}
    for lo, hi in pairwise(edges):
        group = keep & (layer.counts >= lo) & (layer.counts < hi)
        if group.sum() < 2:
            continue
        rows[_group_label(lo, hi)] = {
            "tokens": int(group.sum()), "mean norm": float(np.linalg.norm(E[group], axis=1).mean()),
            "mean bias": float(layer.bias[group].mean()),
            "mean cosine within": mean_random_cosine(E[group], seed=seed),
        }
    return pd.DataFrame(rows).T.astype({"tokens": int})


@torch.no_grad()
def softmax_inputs(model, tokenizer, sentences: Sequence[str], max_length: int = 64) -> np.ndarray:
    """The vectors ``h`` the MLM softmax reads (the head's dense → GELU → LayerNorm applied to the last
    layer), one per real token of ``sentences`` ([CLS] and [SEP] included, padding not), as float64."""
    if not sentences:
        raise ValueError("softmax_inputs needs at least one sentence")
    batch = tokenizer(list(sentences), padding=True, truncation=True, max_length=max_length,
                      return_tensors="pt")
    device = next(model.parameters()).device
    batch = {k: v.to(device) for k, v in batch.items()}
    last = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    h = model.cls.predictions.transform(last)
    return h[batch["attention_mask"].bool()].double().cpu().numpy()


def negative_direction_share(W: np.ndarray, H: np.ndarray) -> float:
    """The fraction of rows ``w`` of ``W`` with ``wᵀh < 0`` for every row ``h`` of ``H``: uniformly
    negative directions of ``H`` in Gao et al.'s sense."""
    W, H = check_matrix(W, "W"), check_matrix(H, "H")
    if W.shape[1] != H.shape[1]:
        raise ValueError(f"W {W.shape} and H {H.shape} differ in width")
    return float(((W @ H.T).max(axis=1) < 0).mean())
