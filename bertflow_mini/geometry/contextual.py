"""Contextual token vectors, layer by layer: what Ethayarajh (2019) measured anisotropy on.

Ethayarajh's "anisotropy" of a layer is the mean cosine between the representations of randomly
drawn *tokens* (words in their contexts), not of sentence vectors. :func:`token_states` returns, for
every layer of a transformer encoder, the vector of every real token of a set of sentences
([CLS], [SEP] and padding left out), so :func:`bertflow_mini.geometry.isotropy.mean_random_cosine` can be
applied to tokens exactly as to sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from bertflow_mini.encoders.encoder import Encoder, ordered_batches
from bertflow_mini.evaluation import lexical

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


@torch.no_grad()
def token_states(
    encoder: Encoder,
    sentences: Sequence[str],
    max_length: int = 128,
    batch_size: int = 64,
) -> np.ndarray:
    """Array ``(n_layers + 1, n_tokens, d)``: index 0 is the embedding output, then one per layer;
    rows are the sentences' word-piece tokens in order, special tokens and padding excluded."""
    if encoder.model is None:
        raise ValueError(
            f"{encoder.name} has no contextual tokens (a static word-vector model)"
        )
    if isinstance(sentences, str) or len(sentences) == 0:
        raise ValueError("sentences must be a non-empty list of strings")
    encoder.model.eval()  # type: ignore[no-untyped-call]  # unannotated in transformers
    assert encoder.tokenizer is not None
    special = torch.tensor(sorted(set(encoder.tokenizer.all_special_ids)))
    chunks = []
    for _, batch, hidden in ordered_batches(
        encoder, list(sentences), max_length, batch_size
    ):
        keep = batch["attention_mask"].bool() & ~torch.isin(
            batch["input_ids"], special.to(encoder.device)
        )
        chunks.append(torch.stack([h[keep] for h in hidden]).float().cpu())
    return torch.cat(chunks, dim=1).numpy()


def sentence_token_ids(
    tokenizer: PreTrainedTokenizerBase, sentences: Sequence[str], max_length: int = 128
) -> list[np.ndarray]:
    """The word-piece ids of each sentence as the encoder sees it, special tokens left out."""
    if isinstance(sentences, str) or len(sentences) == 0:
        raise ValueError("sentences must be a non-empty list of strings")
    return [
        np.asarray(i, dtype=np.int64)
        for i in lexical.token_ids(sentences, tokenizer, max_length)
    ]


def occurrence_offset(
    E: np.ndarray, token_ids: Sequence[np.ndarray]
) -> tuple[np.ndarray, float]:
    """The common offset of ``E``'s rows *as the sentences use them*: the mean row over every token
    occurrence in ``token_ids`` (a frequent token counts once per use, a token never used not at
    all), and its share of the energy, ``‖μ‖² / mean ‖w‖²`` over the same occurrences.

    The plain mean over the vocabulary's rows weighs each token type once, so thousands of rare
    types dominate it; a sentence average weighs each token by its uses, like this mean."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or not np.isfinite(E).all():
        raise ValueError(f"E must be a finite 2-D matrix, got shape {E.shape}")
    ids = (
        np.concatenate([np.asarray(i, dtype=np.int64) for i in token_ids])
        if len(token_ids)
        else np.empty(0, dtype=np.int64)
    )
    if len(ids) == 0:
        raise ValueError("token_ids holds no token")
    if ids.min() < 0 or ids.max() >= len(E):
        raise ValueError(
            f"token ids must lie in [0, {len(E)}), got {ids.min()}…{ids.max()}"
        )
    uses = np.bincount(ids, minlength=len(E)).astype(np.float64)
    mu = uses @ E / uses.sum()
    energy = uses @ (E * E).sum(axis=1) / uses.sum()
    return mu, float(mu @ mu / energy)


def top_direction_frequency(X: np.ndarray, counts: np.ndarray) -> float:
    """How much the top principal direction of the rows of ``X`` is a frequency axis: |Spearman ρ|
    between each row's coordinate on that direction (of the centred rows) and its ``counts``
    (e.g. the corpus count of the token each row is; ties and zeros allowed). 1: the direction ranks
    the rows exactly by frequency; near 0: unrelated. The sign of a principal direction is
    arbitrary, hence the absolute value."""
    from scipy.stats import spearmanr

    X = np.asarray(X, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if X.ndim != 2 or len(X) < 3 or not np.isfinite(X).all():
        raise ValueError(
            f"X must be a finite 2-D matrix of >= 3 rows, got shape {X.shape}"
        )
    if counts.shape != (len(X),) or not np.isfinite(counts).all():
        raise ValueError(f"counts must hold one finite number per row ({len(X)})")
    centred = X - X.mean(axis=0)
    top = centred @ np.linalg.svd(centred, full_matrices=False)[2][0]
    return float(abs(spearmanr(top, counts).statistic))
