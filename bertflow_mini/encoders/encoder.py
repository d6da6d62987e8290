"""Encoders: a loaded model, and its sentence vectors — batched, pooled and cached on disk.

The chapters call three things (through :mod:`bertflow_mini.encoders`)::

    enc = load_encoder(MODEL)                              # by name: bertflow_mini.encoders.names
    X = encode(enc, sentences, pooling="first-last-avg")   # (n, d) float32, cached on disk
    L = encode_layers(enc, sentences)                      # (n_layers + 1, n, d): every layer's mean

A transformer and GloVe stand behind the same :class:`Encoder`: :func:`encode` works for both, and
what only a transformer can do (layers, dropout, tokens) asks :meth:`Encoder.require_transformer`.
Poolings are defined in :mod:`bertflow_mini.encoders.pooling`.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from bertflow_mini._io import atomic_path, cache_dir
from bertflow_mini._progress import tqdm
from bertflow_mini.encoders.pooling import (
    Pooling,
    PoolingSpec,
    _TOKEN_POOL,
    masked_max,
    masked_mean,
    masked_min,
    parse_pooling,
)
from bertflow_mini.encoders.sources import hub_options, offline_error, short_name


def cuda_devices(device: str | torch.device) -> list[int]:
    """The CUDA devices whose random state a seeded block running on ``device`` draws from, for
    ``torch.random.fork_rng(devices=…)``: none on the CPU, else the device's index (so the caller's
    GPU random state is restored afterwards, as the CPU's is)."""
    device = torch.device(device)
    if device.type != "cuda":
        return []
    return [device.index if device.index is not None else torch.cuda.current_device()]


def default_device() -> str:
    """``"cuda"`` when a GPU is visible to torch, else ``"cpu"``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Encoder:
    """A loaded sentence encoder: a transformer with its tokenizer, or averaged GloVe vectors."""

    name: str  # the short name, e.g. "all-MiniLM-L6-v2"
    source: str  # the folder or hub id it was loaded from
    fingerprint: str  # identifies the weights: a hash of the weight files, or the hub revision
    model: Any = None  # transformers.PreTrainedModel (None for GloVe)
    tokenizer: Any = None
    glove: Any = None  # bertflow_mini.data.GloVe for the GloVe baseline
    device: str = "cpu"
    n_layers: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.model is not None:
            self.n_layers = int(self.model.config.num_hidden_layers)

    @property
    def is_transformer(self) -> bool:
        """A transformer (layers, tokens, dropout), not averaged GloVe vectors."""
        return self.glove is None

    def require_transformer(self, what: str) -> None:
        """Raise a ``ValueError`` naming ``what`` when this encoder is GloVe."""
        if not self.is_transformer:
            raise ValueError(f"{what} needs a transformer encoder; {self.name} averages GloVe word vectors")

    @property
    def dim(self) -> int:
        if self.glove is not None:
            return int(self.glove.vectors.shape[1])
        return int(self.model.config.hidden_size)


@lru_cache(maxsize=8)
def _hash_files(paths: tuple[str, ...], stamps: tuple[tuple[int, ...], ...]) -> str:
    """SHA-256 over weight files; ``stamps`` only makes the memo notice a change (see below)."""
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def weights_fingerprint(folder: Path) -> str:
    files = sorted(
        str(p) for p in folder.iterdir() if p.suffix in {".safetensors", ".bin", ".pt"} and p.is_file()
    )
    if not files:
        raise FileNotFoundError(f"no weight files (*.safetensors, *.bin) in {folder}")
    # ctime and inode too: `cp -p` or `rsync -t` can write new weights under the old size and mtime,
    # but no user-level call can set ctime, and a replaced file gets a new inode
    stamps = tuple((s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for s in map(os.stat, files))
    return _hash_files(tuple(files), stamps)


def load_glove_encoder(name: str = "glove-6B-50d") -> Encoder:
    """The GloVe baseline as an :class:`Encoder` (its fingerprint hashes the vectors)."""
    from bertflow_mini.data import load_glove

    glove = load_glove()
    fp = hashlib.sha256(glove.vectors.tobytes()).hexdigest()[:16]
    return Encoder(name=short_name(name), source="glove", fingerprint=fp, glove=glove)


def load_from(source: str, name: str | None = None, device: str | None = None) -> Encoder:
    """Load the transformer at ``source`` (a folder or a hub id, as resolved by
    :func:`bertflow_mini.encoders.names.resolve_model`) onto ``device`` (default: a GPU if there is one)."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    name = name or source
    hf_logging.disable_progress_bar()  # a "Loading weights" bar per load would clutter every chapter
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # an MLM checkpoint loaded as an encoder: its head is unused, say nothing
    try:
        options = hub_options(source)
        tokenizer = AutoTokenizer.from_pretrained(source, **options)
        with torch.random.fork_rng(devices=[]):  # weights the checkpoint lacks (an MLM checkpoint's
            model = AutoModel.from_pretrained(source, **options)  # pooler) must not move the caller's random state
    except (OSError, ValueError) as err:
        raise offline_error(name, source, err) from err
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)
    if Path(source).is_dir():
        fingerprint = weights_fingerprint(Path(source))
    else:  # the hub: the commit the files came from identifies the weights
        fingerprint = str(getattr(model.config, "_commit_hash", None) or source)
    device = device or default_device()
    model.eval().to(device)
    return Encoder(short_name(name), source, fingerprint, model=model, tokenizer=tokenizer, device=device)


def _check_sentences(sentences: Sequence[str]) -> list[str]:
    if isinstance(sentences, str):
        raise ValueError("sentences must be a sequence of strings, not one string")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("sentences is empty")
    bad = [i for i, s in enumerate(sentences) if not isinstance(s, str)]
    if bad:
        raise ValueError(f"sentences[{bad[0]}] is {type(sentences[bad[0]]).__name__}, not str")
    return sentences


#: What each cache entry holds (part of its key): the means every pooling of the papers needs, and
#: the per-layer CLS / max / min vectors only the wider grid of poolings asks for.
MEANS, EXTREMES = "layer-means+cls", "layer-cls+max+min"


def _cache_file(encoder: Encoder, unique: list[str], max_length: int, content: str = MEANS) -> Path:
    digest = hashlib.sha256("\x1e".join(unique).encode("utf-8")).hexdigest()
    key = json.dumps([encoder.name, encoder.fingerprint, content, max_length, digest, len(unique)])
    name = f"{encoder.name}-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npy"
    return cache_dir("embeddings") / name


def _load_cached(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """A cached array, or None when it is missing or not to be trusted (it is then recomputed)."""
    if not path.exists():
        return None
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
        ok = arr.shape == shape and bool(np.isfinite(arr).all())
    except Exception as err:  # truncated or garbled file
        warnings.warn(f"ignoring corrupt embedding cache {path}: {err}")
        return None
    if not ok:
        warnings.warn(f"ignoring embedding cache {path}: shape {arr.shape} (want {shape}) or values do not fit")
        return None
    return arr


def _forward(encoder: Encoder, sentences: list[str], max_length: int, batch_size: int, progress: bool,
             summarise, shape: tuple[int, ...]) -> np.ndarray:
    """One forward pass over ``sentences`` in length-sorted batches; ``summarise(hidden_states, mask)``
    turns each batch into an array of shape ``shape[:-2] + (batch, dim)`` stored along axis -2."""
    tok = encoder.tokenizer
    lengths = [len(x) for x in tok(sentences, truncation=True, max_length=max_length)["input_ids"]]
    order = np.argsort([-n for n in lengths], kind="stable")  # longest first: padding waste is minimal
    out = np.empty(shape, dtype=np.float32)
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    with torch.inference_mode():
        for idx in tqdm(batches, desc=f"encoding ({encoder.name})", disable=not progress, unit="batch"):
            batch = tok([sentences[i] for i in idx], padding=True, truncation=True,
                        max_length=max_length, return_tensors="pt").to(encoder.device)
            hs = encoder.model(**batch, output_hidden_states=True).hidden_states
            out[..., idx, :] = summarise(hs, batch["attention_mask"]).float().cpu().numpy()
    return out


def _run_model(encoder: Encoder, sentences: list[str], max_length: int, batch_size: int, progress: bool) -> np.ndarray:
    """One forward pass over ``sentences`` in length-sorted batches, keeping what every pooling needs:
    the masked mean of each of the ``n_layers + 1`` hidden states, and the last layer's [CLS] vector.
    Returns shape ``(n_layers + 2, len(sentences), dim)``; index ``n_layers + 1`` is CLS."""
    def summarise(hs, mask):
        return torch.stack([masked_mean(h, mask) for h in hs] + [hs[-1][:, 0]])

    shape = (encoder.n_layers + 2, len(sentences), encoder.dim)
    return _forward(encoder, sentences, max_length, batch_size, progress, summarise, shape)


def _run_model_extremes(
    encoder: Encoder, sentences: list[str], max_length: int, batch_size: int, progress: bool
) -> np.ndarray:
    """One forward pass keeping every layer's [CLS] vector and masked max and min over tokens:
    shape ``(3, n_layers + 1, len(sentences), dim)``, the first axis in the order cls, max, min."""
    def summarise(hs, mask):
        return torch.stack([torch.stack([f(h, mask) for h in hs]) for f in _EXTREMES.values()])

    shape = (len(_EXTREMES), encoder.n_layers + 1, len(sentences), encoder.dim)
    return _forward(encoder, sentences, max_length, batch_size, progress, summarise, shape)


_EXTREMES = {"cls": _TOKEN_POOL["cls"], "max": masked_max, "min": masked_min}


def _layer_summary(
    encoder: Encoder, unique: list[str], max_length: int, batch_size: int, cache: bool, progress: bool,
    content: str = MEANS,
) -> np.ndarray:
    """:func:`_run_model`'s output for ``unique`` (or :func:`_run_model_extremes`'s, when ``content``
    is :data:`EXTREMES`), from the disk cache when it holds it.

    One forward pass yields every pooling of its kind, so one cache entry serves them all: it is keyed
    by (model, weights fingerprint, content, ``max_length``, the sentences) and the pooling is applied
    on load. The means (the papers' poolings) and the extremes (max, min, per-layer CLS) are separate
    entries, so the grid's extra pass is paid only by those who ask for it.
    """
    path = _cache_file(encoder, unique, max_length, content)
    if content == MEANS:
        shape, run = (encoder.n_layers + 2, len(unique), encoder.dim), _run_model
    else:
        shape, run = (len(_EXTREMES), encoder.n_layers + 1, len(unique), encoder.dim), _run_model_extremes
    summary = _load_cached(path, shape) if cache else None
    if summary is None:
        summary = run(encoder, unique, max_length, batch_size, progress)
        if cache:
            with atomic_path(path) as tmp:
                with open(tmp, "wb") as f:
                    np.save(f, summary)
    return summary


def _encode(
    encoder: Encoder, sentences: Sequence[str], pooling: Pooling | None, max_length: int,
    batch_size: int, cache: bool, progress: bool,
) -> np.ndarray:
    sentences = _check_sentences(sentences)
    unique, inverse = np.unique(np.array(sentences, dtype=object), return_inverse=True)
    unique = unique.tolist()  # each distinct sentence is encoded once
    if not encoder.is_transformer:
        if pooling not in ("avg", "last-avg"):
            raise ValueError(f"GloVe sentence vectors are word averages; pooling {pooling!r} does not apply")
        from bertflow_mini.encoders.glove import glove_embed

        return glove_embed(unique, encoder.glove).astype(np.float32)[inverse]
    L = encoder.n_layers
    spec = None if pooling is None else parse_pooling(pooling, L)  # validate before any work
    if spec is not None and _needs_extremes(spec, L):
        extremes = _layer_summary(encoder, unique, max_length, batch_size, cache, progress, EXTREMES)
        per_layer = extremes[list(_EXTREMES).index(spec.tokens)][list(spec.layers)]
        return _pooled(per_layer, spec.combine)[inverse]
    summary = _layer_summary(encoder, unique, max_length, batch_size, cache, progress)
    if spec is None:
        return np.ascontiguousarray(summary[: L + 1][:, inverse])
    return _from_summary(summary, spec, L)[inverse]


def _from_summary(summary: np.ndarray, spec: PoolingSpec, n_layers: int) -> np.ndarray:
    """A mean or last-layer-CLS pooling read off :func:`_run_model`'s output."""
    if spec.tokens == "cls":  # the last layer's CLS: kept with the means, no extra pass
        return np.ascontiguousarray(summary[n_layers + 1])
    return _pooled(summary[list(spec.layers)], spec.combine)


def _needs_extremes(spec: PoolingSpec, n_layers: int) -> bool:
    """Max, min, and CLS of any layer but the last are not in the means' cache entry."""
    return spec.tokens in ("max", "min") or (spec.tokens == "cls" and spec.layers != (n_layers,))


def _pooled(per_layer: np.ndarray, combine: str) -> np.ndarray:
    """``(k, n, d)`` per-layer vectors → ``(n, d)`` (``avg``) or ``(n, k·d)`` (``concat``), float32."""
    if combine == "avg":
        return per_layer.mean(0, dtype=np.float32)
    return np.concatenate(list(per_layer), axis=1).astype(np.float32, copy=False)


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
    is keyed by (model, weights fingerprint, ``max_length``, the sentences) and holds every layer's
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
    progress: bool = True,
) -> np.ndarray:
    """Sentence embeddings computed with the encoder's dropout **on**, as BERT-flow's official code
    computes the vectors it fits the flow on: every occurrence of a sentence (duplicates included)
    gets its own dropout mask. Deterministic for a given ``seed`` (the global RNG is left as it was);
    never cached. Mean poolings and the last layer's CLS only."""
    sentences = _check_sentences(sentences)
    encoder.require_transformer("dropout (GloVe's sentence vectors are fixed word averages)")
    spec = parse_pooling(pooling, encoder.n_layers)
    if _needs_extremes(spec, encoder.n_layers):
        raise ValueError(f"pooling {pooling!r}: only mean poolings and the last layer's CLS")
    with torch.random.fork_rng(devices=cuda_devices(encoder.device)):  # dropout draws on the model's device
        torch.manual_seed(seed)
        encoder.model.train()
        try:
            summary = _run_model(encoder, sentences, max_length, batch_size, progress)
        finally:
            encoder.model.eval()
    return _from_summary(summary, spec, encoder.n_layers)


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
