"""What identifies a model's weights, and the disk cache of sentence vectors keyed by it.

A folder's weights are identified by a SHA-256 of its weight files (memoised on their size, times
and inode, so a changed file is noticed), a tokenizer by a SHA-256 of its full serialisation; an
embedding cache entry by the model, those two fingerprints, the package's version, what the entry
holds, ``max_length`` and the sentences. Entries are written atomically and checked
on load: a missing, truncated or garbled one is recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bertflow_mini._io import atomic_path, cache_dir
from bertflow_mini._version import __version__

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

#: What each cache entry holds (part of its key): the means every pooling of the papers needs, and
#: the per-layer CLS / max / min vectors only the wider grid of poolings asks for.
MEANS, EXTREMES = "layer-means+cls", "layer-cls+max+min"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


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
    """A short SHA-256 of the weight files in ``folder`` (computed once per unchanged set of files)."""
    files = sorted(
        str(p) for p in folder.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()
    )
    if not files:
        raise FileNotFoundError(f"no weight files (*.safetensors, *.bin) in {folder}")
    # ctime and inode too: `cp -p` or `rsync -t` can write new weights under the old size and
    # mtime, but no user-level call can set ctime, and a replaced file gets a new inode
    stamps = tuple(
        (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for s in map(os.stat, files)
    )
    return _hash_files(tuple(files), stamps)


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """A short SHA-256 of everything that decides how ``tokenizer`` splits a sentence: a fast
    tokenizer's whole serialisation (normaliser, pre-tokeniser, model, vocabulary, special tokens);
    for a slow one, its class, vocabulary and settings."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        text = backend.to_str()
    else:
        settings = {
            k: v for k, v in tokenizer.init_kwargs.items() if k != "name_or_path"
        }
        text = json.dumps(
            [type(tokenizer).__name__, sorted(tokenizer.get_vocab().items()), settings],
            sort_keys=True,
            default=str,
        )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def embedding_file(
    name: str,
    fingerprint: str,
    tokenizer: str,
    unique: list[str],
    max_length: int,
    content: str = MEANS,
) -> Path:
    """The cache file of ``content`` for the distinct sentences ``unique`` under model ``name``
    (weights ``fingerprint``, tokenizer fingerprint ``tokenizer``), for this package version."""
    digest = hashlib.sha256("\x1e".join(unique).encode("utf-8")).hexdigest()
    key = json.dumps(
        [
            name,
            fingerprint,
            tokenizer,
            __version__,
            content,
            max_length,
            digest,
            len(unique),
        ]
    )
    return (
        cache_dir("embeddings")
        / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npy"
    )


def load_cached(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """A cached array, or None when it is missing or not to be trusted (it is then recomputed)."""
    if not path.exists():
        return None
    try:
        arr: np.ndarray = np.load(path, allow_pickle=False, mmap_mode="r")
        ok = arr.shape == shape and bool(np.isfinite(arr).all())
    except (OSError, ValueError, EOFError) as err:  # truncated or garbled file
        warnings.warn(f"ignoring corrupt embedding cache {path}: {err}", stacklevel=2)
        return None
    if not ok:
        warnings.warn(
            f"ignoring embedding cache {path}: shape {arr.shape} (want {shape}) "
            "or values do not fit",
            stacklevel=2,
        )
        return None
    return arr


def save_cached(path: Path, array: np.ndarray) -> None:
    """Write ``array`` to ``path`` atomically (readers see the old entry or the whole new one)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.save(f, array)
