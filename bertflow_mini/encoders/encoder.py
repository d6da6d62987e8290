"""Encoders: a loaded model, and its sentence vectors — batched, pooled and cached on disk.

The chapters call three things (through :mod:`bertflow_mini.encoders`)::

    enc = load_encoder(MODEL)                              # by name: bertflow_mini.encoders.names
    X = encode(enc, sentences, pooling="first-last-avg")   # (n, d) float32, cached on disk
    L = encode_layers(enc, sentences)                      # (n_layers + 1, n, d): every layer's mean

A transformer and GloVe stand behind the same :class:`Encoder`: :func:`encode` works for both, and
what only a transformer can do (layers, dropout, tokens) asks :meth:`Encoder.require_transformer`.
Poolings are defined in :mod:`bertflow_mini.encoders.pooling`, the disk cache in
:mod:`bertflow_mini.encoders.cache`, loading in :mod:`bertflow_mini.encoders.loading`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import torch

from bertflow_mini._device import cuda_devices
from bertflow_mini._progress import tqdm
from bertflow_mini.encoders.cache import (
    EXTREMES,
    MEANS,
    embedding_file,
    load_cached,
    save_cached,
    tokenizer_fingerprint,
)
from bertflow_mini.encoders.pooling import (
    EXTREMES_POOLS,
    Pooling,
    combined,
    from_summary,
    masked_mean,
    needs_extremes,
    parse_pooling,
)

if TYPE_CHECKING:
    from transformers import BatchEncoding, PreTrainedModel, PreTrainedTokenizerBase

    from bertflow_mini.data.glove import GloVe


@dataclass
class Encoder:
    """A loaded sentence encoder: a transformer with its tokenizer, or averaged GloVe vectors."""

    name: str  # the short name, e.g. "all-MiniLM-L6-v2"
    source: str  # the folder or hub id it was loaded from
    # identifies the weights: a hash of the weight files, or the hub revision
    fingerprint: str
    model: PreTrainedModel | None = None  # None for GloVe
    tokenizer: PreTrainedTokenizerBase | None = None  # None for GloVe
    glove: GloVe | None = None  # the GloVe baseline's word vectors
    device: str = "cpu"
    n_layers: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.model is not None:
            self.n_layers = int(self.model.config.num_hidden_layers)

    @cached_property
    def tokenizer_fingerprint(self) -> str:
        """What identifies the tokenizer (part of every embedding cache key; empty for GloVe)."""
        return "" if self.tokenizer is None else tokenizer_fingerprint(self.tokenizer)

    @property
    def is_transformer(self) -> bool:
        """A transformer (layers, tokens, dropout), not averaged GloVe vectors."""
        return self.glove is None

    def require_transformer(self, what: str) -> None:
        """Raise a ``ValueError`` naming ``what`` when this encoder is GloVe."""
        if not self.is_transformer:
            raise ValueError(
                f"{what} needs a transformer encoder; {self.name} averages GloVe word vectors"
            )

    @property
    def dim(self) -> int:
        if self.glove is not None:
            return int(self.glove.vectors.shape[1])
        assert self.model is not None
        return int(self.model.config.hidden_size)


def _check_sentences(sentences: Sequence[str]) -> list[str]:
    if isinstance(sentences, str):
        raise ValueError("sentences must be a sequence of strings, not one string")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("sentences is empty")
    bad = [i for i, s in enumerate(sentences) if not isinstance(s, str)]
    if bad:
        raise ValueError(
            f"sentences[{bad[0]}] is {type(sentences[bad[0]]).__name__}, not str"
        )
    return sentences


def tokenized(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    max_length: int,
    device: str | torch.device,
) -> BatchEncoding:
    """``sentences`` as one padded batch of token ids (truncated to ``max_length``) on ``device``:
    the tokenizer's ``BatchEncoding``, ready for ``model(**batch)``."""
    batch: BatchEncoding = tokenizer(
        list(sentences),
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    ).to(device)
    return batch


def ordered_batches(
    encoder: Encoder, sentences: Sequence[str], max_length: int, batch_size: int
) -> Iterator[tuple[int, BatchEncoding, tuple[torch.Tensor, ...]]]:
    """``(start, batch, hidden_states)`` for ``sentences[start : start + batch_size]``, in order:
    ``batch`` is the tokenizer's output on the encoder's device, ``hidden_states`` every layer's
    output. Gradients follow the caller's mode (the callers run under ``torch.no_grad``)."""
    assert encoder.model is not None and encoder.tokenizer is not None
    for start in range(0, len(sentences), batch_size):
        batch = tokenized(
            encoder.tokenizer,
            sentences[start : start + batch_size],
            max_length,
            encoder.device,
        )
        yield (
            start,
            batch,
            encoder.model(**batch, output_hidden_states=True).hidden_states,
        )


def hidden_state_batches(
    encoder: Encoder,
    sentences: list[str],
    max_length: int,
    batch_size: int,
    progress: bool = False,
) -> Iterator[tuple[np.ndarray, BatchEncoding, tuple[torch.Tensor, ...]]]:
    """``(rows, batch, hidden_states)`` for ``sentences`` in batches of similar length, longest
    first (little padding), without gradients: ``rows`` index ``sentences``, ``batch`` is the
    tokenizer's output on the encoder's device, ``hidden_states`` every layer's output."""
    tok = encoder.tokenizer
    assert tok is not None and encoder.model is not None
    ids = tok(sentences, truncation=True, max_length=max_length)["input_ids"]
    order = np.argsort([-len(x) for x in ids], kind="stable")
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    desc = f"encoding ({encoder.name})"
    with torch.inference_mode():
        for rows in tqdm(batches, desc=desc, disable=not progress, unit="batch"):
            batch = tokenized(
                tok, [sentences[i] for i in rows], max_length, encoder.device
            )
            yield (
                rows,
                batch,
                encoder.model(**batch, output_hidden_states=True).hidden_states,
            )


def _forward(
    encoder: Encoder,
    sentences: list[str],
    max_length: int,
    batch_size: int,
    progress: bool,
    summarise: Callable[[tuple[torch.Tensor, ...], torch.Tensor], torch.Tensor],
    shape: tuple[int, ...],
) -> np.ndarray:
    """One forward pass over ``sentences`` (:func:`hidden_state_batches`); ``summarise(hidden_states,
    mask)`` turns each batch into an array of shape ``shape[:-2] + (batch, dim)`` stored along
    axis -2."""
    out = np.empty(shape, dtype=np.float32)
    batches = hidden_state_batches(encoder, sentences, max_length, batch_size, progress)
    for rows, batch, hs in batches:
        summary = summarise(hs, batch["attention_mask"])
        out[..., rows, :] = summary.float().cpu().numpy()
    return out


def _run_model(
    encoder: Encoder,
    sentences: list[str],
    max_length: int,
    batch_size: int,
    progress: bool,
) -> np.ndarray:
    """One forward pass over ``sentences`` in length-sorted batches, keeping what every pooling needs:
    the masked mean of each of the ``n_layers + 1`` hidden states, and the last layer's [CLS] vector.
    Returns shape ``(n_layers + 2, len(sentences), dim)``; index ``n_layers + 1`` is CLS."""

    def summarise(hs: tuple[torch.Tensor, ...], mask: torch.Tensor) -> torch.Tensor:
        return torch.stack([masked_mean(h, mask) for h in hs] + [hs[-1][:, 0]])

    shape = (encoder.n_layers + 2, len(sentences), encoder.dim)
    return _forward(
        encoder, sentences, max_length, batch_size, progress, summarise, shape
    )


def _run_model_extremes(
    encoder: Encoder,
    sentences: list[str],
    max_length: int,
    batch_size: int,
    progress: bool,
) -> np.ndarray:
    """One forward pass keeping every layer's [CLS] vector and masked max and min over tokens:
    shape ``(3, n_layers + 1, len(sentences), dim)``, the first axis in the order cls, max, min."""

    def summarise(hs: tuple[torch.Tensor, ...], mask: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            [torch.stack([f(h, mask) for h in hs]) for f in EXTREMES_POOLS.values()]
        )

    shape = (len(EXTREMES_POOLS), encoder.n_layers + 1, len(sentences), encoder.dim)
    return _forward(
        encoder, sentences, max_length, batch_size, progress, summarise, shape
    )


def _layer_summary(
    encoder: Encoder,
    unique: list[str],
    max_length: int,
    batch_size: int,
    cache: bool,
    progress: bool,
    content: str = MEANS,
    dropout_seed: int | None = None,
) -> np.ndarray:
    """:func:`_run_model`'s output for ``unique`` (or :func:`_run_model_extremes`'s, when ``content``
    is :data:`EXTREMES`), from the disk cache when it holds it.

    One forward pass yields every pooling of its kind, so one cache entry serves them all: it is keyed
    by (model, weights and tokenizer fingerprints, package version, content, ``max_length``, the
    sentences) and the pooling is applied
    on load. The means (the papers' poolings) and the extremes (max, min, per-layer CLS) are separate
    entries, so the grid's extra pass is paid only by those who ask for it.

    ``dropout_seed``: run the means' pass with dropout on, masks drawn from that seed (the global RNG
    is left as it was); the entry's key then holds everything that decides the masks as well: the
    seed, ``batch_size``, the dropout rates and the device type (a GPU draws other masks).
    """
    shape: tuple[int, ...]
    if content == MEANS:
        shape, run = (encoder.n_layers + 2, len(unique), encoder.dim), _run_model
    else:
        shape, run = (
            (len(EXTREMES_POOLS), encoder.n_layers + 1, len(unique), encoder.dim),
            _run_model_extremes,
        )
    if dropout_seed is not None:
        assert encoder.model is not None
        rates = sorted(
            {m.p for m in encoder.model.modules() if isinstance(m, torch.nn.Dropout)}
        )
        content += (
            f"+dropout-seed{dropout_seed}-batch{batch_size}-p{rates}"
            f"-{torch.device(encoder.device).type}"
        )
    path = embedding_file(
        encoder.name,
        encoder.fingerprint,
        encoder.tokenizer_fingerprint,
        unique,
        max_length,
        content,
    )
    summary = load_cached(path, shape) if cache else None
    if summary is None:
        if dropout_seed is None:
            summary = run(encoder, unique, max_length, batch_size, progress)
        else:
            # dropout draws on the model's device
            with torch.random.fork_rng(devices=cuda_devices(encoder.device)):
                torch.manual_seed(dropout_seed)
                assert encoder.model is not None
                encoder.model.train()
                try:
                    summary = run(encoder, unique, max_length, batch_size, progress)
                finally:
                    encoder.model.eval()  # type: ignore[no-untyped-call]  # unannotated in transformers
        if cache:
            save_cached(path, summary)
    return summary


def _encode(
    encoder: Encoder,
    sentences: Sequence[str],
    pooling: Pooling | None,
    max_length: int,
    batch_size: int,
    cache: bool,
    progress: bool,
) -> np.ndarray:
    sentences = _check_sentences(sentences)
    unique, inverse = np.unique(np.array(sentences, dtype=object), return_inverse=True)
    unique = unique.tolist()  # each distinct sentence is encoded once
    if not encoder.is_transformer:
        if pooling not in ("avg", "last-avg"):
            raise ValueError(
                f"GloVe sentence vectors are word averages; pooling {pooling!r} does not apply"
            )
        from bertflow_mini.encoders.glove import glove_embed

        assert encoder.glove is not None
        return glove_embed(unique, encoder.glove).astype(np.float32)[inverse]
    L = encoder.n_layers
    # validate before any work
    spec = None if pooling is None else parse_pooling(pooling, L)
    if spec is not None and needs_extremes(spec, L):
        extremes = _layer_summary(
            encoder, unique, max_length, batch_size, cache, progress, EXTREMES
        )
        per_layer = extremes[list(EXTREMES_POOLS).index(spec.tokens)][list(spec.layers)]
        return combined(per_layer, spec.combine)[inverse]
    summary = _layer_summary(encoder, unique, max_length, batch_size, cache, progress)
    if spec is None:
        return np.ascontiguousarray(summary[: L + 1][:, inverse])
    return from_summary(summary, spec, L)[inverse]


def encode(
    encoder: Encoder,
    sentences: Sequence[str],
    pooling: Pooling = "first-last-avg",
    *,
    max_length: int = 64,
    batch_size: int = 64,
    cache: bool = True,
    progress: bool = True,
) -> np.ndarray:
    """Sentence embeddings, shape ``(len(sentences), dim)``, float32.

    Distinct sentences are encoded once, in batches sorted by length, without gradients, on the
    encoder's device. The disk cache (``$BERTFLOW_CACHE/embeddings``, else ``~/.cache/bertflow_mini``)
    is keyed by (model, weights and tokenizer fingerprints, package version, ``max_length``, the
    sentences) and holds every layer's
    mean and CLS, so asking for another pooling of the same sentences costs no forward pass.
    ``max_length=64`` is the paper's.
    """
    return _encode(encoder, sentences, pooling, max_length, batch_size, cache, progress)


def encode_with_dropout(
    encoder: Encoder,
    sentences: Sequence[str],
    pooling: Pooling = "first-last-avg",
    *,
    seed: int = 0,
    max_length: int = 64,
    batch_size: int = 64,
    cache: bool = True,
    progress: bool = True,
) -> np.ndarray:
    """Sentence embeddings computed with the encoder's dropout **on**, as BERT-flow's official code
    computes the vectors it fits the flow on: every occurrence of a sentence (duplicates included)
    gets its own dropout mask. Deterministic for a given ``seed`` (the global RNG is left as it was).
    Mean poolings and the last layer's CLS only.

    Cached like :func:`encode`, but keyed by everything that decides the masks as well: the whole
    list in order (duplicates included), ``seed``, ``batch_size``, the dropout rates and the device
    type (a GPU draws other masks than the CPU)."""
    sentences = _check_sentences(sentences)
    encoder.require_transformer(
        "dropout (GloVe's sentence vectors are fixed word averages)"
    )
    spec = parse_pooling(pooling, encoder.n_layers)
    if needs_extremes(spec, encoder.n_layers):
        raise ValueError(
            f"pooling {pooling!r}: only mean poolings and the last layer's CLS"
        )
    summary = _layer_summary(
        encoder, sentences, max_length, batch_size, cache, progress, dropout_seed=seed
    )
    return from_summary(summary, spec, encoder.n_layers)


def encode_layers(
    encoder: Encoder,
    sentences: Sequence[str],
    *,
    max_length: int = 64,
    batch_size: int = 64,
    cache: bool = True,
    progress: bool = True,
) -> np.ndarray:
    """Masked-mean sentence vectors of every layer: shape ``(n_layers + 1, len(sentences), dim)``.

    Index 0 is the embedding output, index ``i`` the output of transformer layer ``i``.
    """
    encoder.require_transformer("per-layer vectors (GloVe has no layers)")
    return _encode(encoder, sentences, None, max_length, batch_size, cache, progress)
