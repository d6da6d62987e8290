"""Poolings: how a transformer's hidden states become one vector per sentence.

**The layer-indexing pitfall.** With ``output_hidden_states=True`` a Hugging Face BERT returns
``n_layers + 1`` tensors: ``hidden_states[0]`` is the *embedding output* (token + position + segment
embeddings after LayerNorm) and ``hidden_states[1]`` is the output of the *first transformer layer*.
BERT-flow's "last2avg" numbers were produced by code that averaged ``hidden_states[1]`` and
``hidden_states[-1]`` — the first and the last transformer layers, not the last two. Here the names
say what they compute:

=================  =========================================  =======================================
pooling            hidden states averaged (then masked mean)   note
=================  =========================================  =======================================
``cls``            ``[-1]``, token 0 only                       BERT's [CLS] vector, no pooler
``last-avg``       ``[-1]``                                     "last-layer average"
``first-last-avg`` ``[1]`` and ``[-1]``                         what BERT-flow's "last2avg" really was
``last2avg``       ``[-2]`` and ``[-1]``                        the last two layers, as the name says
``(i, j, ...)``    ``[i]``, ``[j]``, ...                        explicit ``hidden_states`` indices
``max``, ``min``   ``[-1]``, element-wise max / min             sentence-transformers' max pooling
=================  =========================================  =======================================

The general form ``"<tokens>-last<k>-<combine>"`` spans the whole grid: ``<tokens>`` is how one
layer's token vectors become one vector (``cls``, ``mean``, ``max``, ``min``), ``k`` how many of the
last transformer layers are used, and ``<combine>`` whether their pooled vectors are averaged
(``avg``, width ``d``) or concatenated (``concat``, width ``k·d``, lower layer first). Tokens are
pooled layer by layer, then combined: ``"max-last2-avg"`` is the mean of two per-layer maxima.
``"mean-last1-avg"`` is ``last-avg`` and ``"mean-last2-avg"`` is ``last2avg``.

Padding never enters a pooling: every mean, max and min is over the attention mask ([CLS] and
[SEP] included, as in BERT-flow's code and sentence-transformers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

Pooling = str | Sequence[int]
POOLINGS = ("cls", "last-avg", "first-last-avg", "last2avg", "max", "min")
TOKEN_POOLINGS = ("cls", "mean", "max", "min")  # one layer's tokens -> one vector
LAYER_COMBINES = ("avg", "concat")  # several layers' vectors -> one vector
_GRID = re.compile(
    r"^(?P<tokens>cls|mean|max|min)-last(?P<k>\d+)-(?P<combine>avg|concat)$"
)


@dataclass(frozen=True)
class PoolingSpec:
    """What a pooling name means: how tokens are pooled, which layers, and how layers combine."""

    tokens: str  # one of TOKEN_POOLINGS
    layers: tuple[
        int, ...
    ]  # hidden_states indices, non-negative (0 = embedding output)
    combine: str = "avg"  # one of LAYER_COMBINES


def _named_pooling(pooling: str, n_layers: int) -> PoolingSpec | None:
    L = n_layers
    named = {
        "cls": PoolingSpec("cls", (L,)),
        "last-avg": PoolingSpec("mean", (L,)),
        "first-last-avg": PoolingSpec("mean", (1, L)),
        "last2avg": PoolingSpec("mean", (L - 1, L)),
        "max": PoolingSpec("max", (L,)),
        "min": PoolingSpec("min", (L,)),
    }
    if pooling in named:
        return named[pooling]
    m = _GRID.match(pooling)
    if m is None:
        return None
    k = int(m["k"])
    if not 1 <= k <= L:
        raise ValueError(
            f"pooling {pooling!r}: a model with {L} layers has last1 … last{L}"
        )
    return PoolingSpec(m["tokens"], tuple(range(L - k + 1, L + 1)), m["combine"])


def parse_pooling(pooling: Pooling, n_layers: int) -> PoolingSpec:
    """The :class:`PoolingSpec` of a pooling name or of a tuple of ``hidden_states`` indices (a
    tuple means: masked mean of each, averaged). Unknown names and bad indices are a ``ValueError``."""
    if isinstance(pooling, str):
        spec = _named_pooling(pooling, n_layers)
        if spec is None:
            raise ValueError(
                f"unknown pooling {pooling!r}; use one of {POOLINGS}, "
                "'<cls|mean|max|min>-last<k>-<avg|concat>' or a tuple of layer indices"
            )
        return spec
    layers = tuple(int(i) for i in pooling)
    if not layers:
        raise ValueError("pooling needs at least one layer index")
    for i in layers:
        if not -(n_layers + 1) <= i <= n_layers:
            raise ValueError(
                f"layer index {i} out of range for {n_layers} layers (+1 embedding output)"
            )
    return PoolingSpec("mean", tuple(i % (n_layers + 1) for i in layers))


def pooling_grid(n_layers: int) -> list[str]:
    """Every ``"<tokens>-last<k>-<combine>"`` name for a model of ``n_layers`` layers."""
    return [
        f"{t}-last{k}-{c}"
        for t in TOKEN_POOLINGS
        for c in LAYER_COMBINES
        for k in range(1, n_layers + 1)
    ]


def pooling_layers(pooling: Pooling, n_layers: int) -> tuple[int, ...]:
    """The ``hidden_states`` indices (0 = embedding output) that ``pooling`` reads, made non-negative."""
    return parse_pooling(pooling, n_layers).layers


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the sequence of ``hidden`` (b, t, d), counting only positions where ``mask`` (b, t) is 1."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)


def masked_max(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise max over the positions where ``mask`` (b, t) is 1 of ``hidden`` (b, t, d)."""
    fill = torch.finfo(hidden.dtype).min
    return hidden.masked_fill(mask.unsqueeze(-1) == 0, fill).amax(1)


def masked_min(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise min over the positions where ``mask`` (b, t) is 1 of ``hidden`` (b, t, d)."""
    return -masked_max(-hidden, mask)


_TOKEN_POOL = {
    "cls": lambda h, mask: h[:, 0],
    "mean": masked_mean,
    "max": masked_max,
    "min": masked_min,
}


def _combine(vectors: Sequence[torch.Tensor], combine: str) -> torch.Tensor:
    """Average (``avg``) or concatenate (``concat``, along the last axis) per-layer vectors."""
    if combine == "avg":
        return torch.stack(list(vectors)).mean(0)
    return torch.cat(list(vectors), dim=-1)


def pool(
    hidden_states: Sequence[torch.Tensor], mask: torch.Tensor, pooling: Pooling
) -> torch.Tensor:
    """Turn one batch of ``hidden_states`` (as returned with ``output_hidden_states=True``) into sentence vectors."""
    spec = parse_pooling(pooling, len(hidden_states) - 1)
    per_layer = [_TOKEN_POOL[spec.tokens](hidden_states[i], mask) for i in spec.layers]
    return _combine(per_layer, spec.combine)


# ------------------------------------------------------------------------------------------------
# Poolings read off the encoder's cached summaries (bertflow_mini.encoders.encoder): one forward
# pass keeps every layer's mean and the last CLS, a second (asked for only when needed) every
# layer's CLS, max and min
# ------------------------------------------------------------------------------------------------
#: The token poolings of the extremes' pass, in the order of its first axis.
EXTREMES_POOLS = {"cls": _TOKEN_POOL["cls"], "max": masked_max, "min": masked_min}


def from_summary(summary: np.ndarray, spec: PoolingSpec, n_layers: int) -> np.ndarray:
    """A mean or last-layer-CLS pooling read off the encoder's cached summary (every layer's
    mean, then the last layer's CLS)."""
    if spec.tokens == "cls":  # the last layer's CLS: kept with the means, no extra pass
        return np.ascontiguousarray(summary[n_layers + 1])
    return combined(summary[list(spec.layers)], spec.combine)


def needs_extremes(spec: PoolingSpec, n_layers: int) -> bool:
    """Max, min, and CLS of any layer but the last are not in the means' cache entry."""
    return spec.tokens in ("max", "min") or (
        spec.tokens == "cls" and spec.layers != (n_layers,)
    )


def combined(per_layer: np.ndarray, combine: str) -> np.ndarray:
    """``(k, n, d)`` per-layer vectors → ``(n, d)`` (``avg``) or ``(n, k·d)`` (``concat``), float32."""
    if combine == "avg":
        mean: np.ndarray = per_layer.mean(0, dtype=np.float32)
        return mean
    return np.concatenate(list(per_layer), axis=1).astype(np.float32, copy=False)
