"""Loading an :class:`~bertflow_mini.encoders.encoder.Encoder` from where its files are: a
transformer from a folder or hub id (:func:`load_from`), or the GloVe baseline
(:func:`load_glove_encoder`). Which folder a *name* means is :mod:`bertflow_mini.encoders.names`'
job."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from bertflow_mini._device import default_device
from bertflow_mini.encoders.cache import weights_fingerprint
from bertflow_mini.encoders.encoder import Encoder
from bertflow_mini.encoders.sources import hub_options, offline_error, short_name


def load_glove_encoder(name: str = "glove-6B-50d") -> Encoder:
    """The GloVe baseline as an :class:`Encoder` (its fingerprint hashes the vectors)."""
    from bertflow_mini.data import load_glove

    glove = load_glove()
    fp = hashlib.sha256(glove.vectors.tobytes()).hexdigest()[:16]
    return Encoder(name=short_name(name), source="glove", fingerprint=fp, glove=glove)


@contextmanager
def _from_hub_or_folder(source: str, name: str) -> Iterator[dict[str, bool]]:
    """Around ``from_pretrained(source, **options)`` calls: no progress bars or head warnings, hub
    options for offline machines, and an error naming the mirror and the hub URL on failure."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a "Loading weights" bar per load would clutter chapters
    verbosity = hf_logging.get_verbosity()
    # an MLM checkpoint loaded as an encoder: its head is unused, say nothing
    hf_logging.set_verbosity_error()
    try:
        yield hub_options(source)
    except (OSError, ValueError) as err:
        raise offline_error(name, source, err) from err
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)


def load_network(source: str, model_class=None, name: str | None = None):
    """The network at ``source`` (a folder or hub id) as ``model_class`` (default ``AutoModel``),
    in eval mode on the CPU. Weights the checkpoint lacks (an MLM checkpoint's pooler) are drawn
    without moving the caller's random state."""
    from transformers import AutoModel

    model_class = model_class or AutoModel
    with _from_hub_or_folder(source, name or source) as options:
        with torch.random.fork_rng(devices=[]):
            return model_class.from_pretrained(source, **options).eval()


def load_tokenizer(source: str, name: str | None = None):
    """The tokenizer at ``source`` (a folder or hub id), with :func:`load_network`'s offline handling."""
    from transformers import AutoTokenizer

    with _from_hub_or_folder(source, name or source) as options:
        return AutoTokenizer.from_pretrained(source, **options)


def load_from(
    source: str, name: str | None = None, device: str | None = None
) -> Encoder:
    """Load the transformer at ``source`` (a folder or a hub id, as resolved by
    :func:`bertflow_mini.encoders.names.resolve_model`) onto ``device`` (default: a GPU if there
    is one)."""
    name = name or source
    tokenizer = load_tokenizer(source, name)
    model = load_network(source, name=name)
    if Path(source).is_dir():
        fingerprint = weights_fingerprint(Path(source))
    else:  # the hub: the commit the files came from identifies the weights
        fingerprint = str(getattr(model.config, "_commit_hash", None) or source)
    device = device or default_device()
    model.eval().to(device)
    return Encoder(
        short_name(name),
        source,
        fingerprint,
        model=model,
        tokenizer=tokenizer,
        device=device,
    )
