"""Loading an :class:`~bertflow_mini.encoders.encoder.Encoder` from where its files are: a
transformer from a folder or hub id (:func:`load_from`), or the GloVe baseline
(:func:`load_glove_encoder`). Which folder a *name* means is :mod:`bertflow_mini.encoders.names`'
job."""

from __future__ import annotations

import hashlib
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


def load_from(
    source: str, name: str | None = None, device: str | None = None
) -> Encoder:
    """Load the transformer at ``source`` (a folder or a hub id, as resolved by
    :func:`bertflow_mini.encoders.names.resolve_model`) onto ``device`` (default: a GPU if there
    is one)."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    name = name or source
    hf_logging.disable_progress_bar()  # a "Loading weights" bar per load would clutter chapters
    verbosity = hf_logging.get_verbosity()
    # an MLM checkpoint loaded as an encoder: its head is unused, say nothing
    hf_logging.set_verbosity_error()
    try:
        options = hub_options(source)
        tokenizer = AutoTokenizer.from_pretrained(source, **options)
        # weights the checkpoint lacks (an MLM checkpoint's pooler) must not move the caller's
        # random state
        with torch.random.fork_rng(devices=[]):
            model = AutoModel.from_pretrained(source, **options)
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
    return Encoder(
        short_name(name),
        source,
        fingerprint,
        model=model,
        tokenizer=tokenizer,
        device=device,
    )
