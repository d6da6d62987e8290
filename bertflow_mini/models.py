"""Encoders: load a model by name (local mirror or the hub), pool its hidden states, cache the results.

The chapters only ever call three things from here::

    enc = load_encoder(MODEL)                          # "all-MiniLM-L6-v2", "bert-base-uncased", "glove-6B-50d", a path
    X = encode(enc, sentences, pooling="first-last-avg")   # (n, d) float32, cached on disk
    L = encode_layers(enc, sentences)                  # (n_layers + 1, n, d): the masked mean of every layer

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

import hashlib
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np
import torch
from ._progress import tqdm

from ._io import atomic_path, cache_dir

Pooling = Union[str, Sequence[int]]

#: Short names the book uses, and the hub id each one falls back to when no mirror has it.
HUB_IDS: dict[str, str] = {
    "bert-base-uncased": "bert-base-uncased",
    "bert-large-uncased": "bert-large-uncased",
    "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "bert-base-uncased-tokenizer": "bert-base-uncased",  # the tokenizer only (scratch-bert's vocabulary)
}
#: The offline model the book's committed outputs were produced with.
CONTRAST_MODEL = "all-MiniLM-L6-v2"  # fine-tuned for similarity: the book's contrast
POOLINGS = ("cls", "last-avg", "first-last-avg", "last2avg", "max", "min")
TOKEN_POOLINGS = ("cls", "mean", "max", "min")  # one layer's tokens -> one vector
LAYER_COMBINES = ("avg", "concat")  # several layers' vectors -> one vector
_GRID = re.compile(r"^(?P<tokens>cls|mean|max|min)-last(?P<k>\d+)-(?P<combine>avg|concat)$")
HUB_URL = "https://huggingface.co/{}"


# --------------------------------------------------------------------------------------------
# Resolving a name to something loadable
# --------------------------------------------------------------------------------------------
def short_name(name: str) -> str:
    """``"sentence-transformers/all-MiniLM-L6-v2"`` → ``"all-MiniLM-L6-v2"``; a path → its folder name."""
    return Path(str(name).rstrip("/")).name


def resolve_model(name: str) -> str:
    """Where ``name`` loads from: an existing folder, else ``$BERTFLOW_MODELS/<short name>``, else — for
    ``scratch-bert`` and its checkpoints ``scratch-bert@<percent>`` — the pretrained checkpoint in the
    cache (pretrained on demand, :mod:`bertflow_mini.pretrain`), else a hub id."""
    if Path(name).is_dir():
        return str(Path(name).resolve())
    mirror = os.environ.get("BERTFLOW_MODELS")
    if mirror and (Path(mirror) / short_name(name)).is_dir():
        return str((Path(mirror) / short_name(name)).resolve())
    from . import pretrain, simcse

    if simcse.parse_name(short_name(name)) is not None:  # "<base>+simcse": fine-tuned on demand
        return str(simcse.checkpoint(short_name(name)))
    if pretrain.parse_name(short_name(name)) is not None:
        return str(pretrain.checkpoint(short_name(name)))
    return HUB_IDS.get(short_name(name), name)


def default_model() -> str:
    """The model every chapter and CLI command uses unless told otherwise: ``scratch-bert``.

    The book's own BERT, pretrained offline (:mod:`bertflow_mini.pretrain`). The fine-tuned contrast is
    :data:`CONTRAST_MODEL`; a reader in Colab can make ``bert-base-uncased`` (the paper's model) the
    model of a chapter with one edit of its ``MODEL`` line.
    """
    from .pretrain import NAME

    return NAME


def hub_reachable(host: str = "huggingface.co", port: int = 443, timeout: float = 3.0) -> bool:
    """Can this machine open a connection to the Hugging Face hub? (False offline, quickly.)"""
    import socket

    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _is_glove(name: str) -> bool:
    return short_name(name).lower().startswith("glove")


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
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


def _weights_fingerprint(folder: Path) -> str:
    files = sorted(
        str(p) for p in folder.iterdir() if p.suffix in {".safetensors", ".bin", ".pt"} and p.is_file()
    )
    if not files:
        raise FileNotFoundError(f"no weight files (*.safetensors, *.bin) in {folder}")
    # ctime and inode too: `cp -p` or `rsync -t` can write new weights under the old size and mtime,
    # but no user-level call can set ctime, and a replaced file gets a new inode
    stamps = tuple((s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for s in map(os.stat, files))
    return _hash_files(tuple(files), stamps)


def _offline_error(name: str, source: str, err: Exception) -> OSError:
    mirror = os.environ.get("BERTFLOW_MODELS")
    where = (
        f"$BERTFLOW_MODELS={mirror} has no folder '{short_name(name)}'"
        if mirror
        else "$BERTFLOW_MODELS is not set (point it at a folder holding '<short name>/' in Hugging Face format)"
    )
    return OSError(
        f"could not load model '{name}': {where}, and loading '{source}' from the hub "
        f"({HUB_URL.format(source)}) failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    )


def load_encoder(name: str, device: str | None = None) -> Encoder:
    """Load ``name`` — a short name, a hub id, a local folder, or ``glove-6B-50d`` — ready for :func:`encode`."""
    if _is_glove(name):
        from .data import load_glove  # the GloVe baseline lives with the other data loaders

        glove = load_glove()
        fp = hashlib.sha256(glove.vectors.tobytes()).hexdigest()[:16]
        return Encoder(name=short_name(name), source="glove", fingerprint=fp, glove=glove)

    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    source = resolve_model(name)
    hf_logging.disable_progress_bar()  # a "Loading weights" bar per load would clutter every chapter
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # an MLM checkpoint loaded as an encoder: its head is unused, say nothing
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        with torch.random.fork_rng(devices=[]):  # weights the checkpoint lacks (an MLM checkpoint's
            model = AutoModel.from_pretrained(source)  # pooler) must not move the caller's random state
    except (OSError, ValueError) as err:
        raise _offline_error(name, source, err) from err
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)
    if Path(source).is_dir():
        fingerprint = _weights_fingerprint(Path(source))
    else:  # the hub: the commit the files came from identifies the weights
        fingerprint = str(getattr(model.config, "_commit_hash", None) or source)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model.eval().to(device)
    return Encoder(short_name(name), source, fingerprint, model=model, tokenizer=tokenizer, device=device)


# --------------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolingSpec:
    """What a pooling name means: how tokens are pooled, which layers, and how layers combine."""

    tokens: str  # one of TOKEN_POOLINGS
    layers: tuple[int, ...]  # hidden_states indices, non-negative (0 = embedding output)
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
        raise ValueError(f"pooling {pooling!r}: a model with {L} layers has last1 … last{L}")
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
            raise ValueError(f"layer index {i} out of range for {n_layers} layers (+1 embedding output)")
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


def pool(hidden_states: Sequence[torch.Tensor], mask: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """Turn one batch of ``hidden_states`` (as returned with ``output_hidden_states=True``) into sentence vectors."""
    spec = parse_pooling(pooling, len(hidden_states) - 1)
    per_layer = [_TOKEN_POOL[spec.tokens](hidden_states[i], mask) for i in spec.layers]
    return _combine(per_layer, spec.combine)


# --------------------------------------------------------------------------------------------
# Encoding, batched and cached
# --------------------------------------------------------------------------------------------
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
    if encoder.glove is not None:
        if pooling not in ("avg", "last-avg"):
            raise ValueError(f"GloVe sentence vectors are word averages; pooling {pooling!r} does not apply")
        from .data import glove_embed

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
    if encoder.glove is not None:
        raise ValueError("GloVe has no dropout: its sentence vectors are fixed word averages")
    spec = parse_pooling(pooling, encoder.n_layers)
    if _needs_extremes(spec, encoder.n_layers):
        raise ValueError(f"pooling {pooling!r}: only mean poolings and the last layer's CLS")
    with torch.random.fork_rng(devices=[]):
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
    if encoder.glove is not None:
        raise ValueError("GloVe has no layers")
    return _encode(encoder, sentences, None, max_length, batch_size, cache, progress)
