"""Loading an :class:`~bertflow_mini.encoders.encoder.Encoder` from where its files are: a
transformer from a folder or hub id (:func:`load_from`), or the GloVe baseline
(:func:`load_glove_encoder`). Where a name's files are on this machine before anything is built is
:func:`local_folder` (an explicit folder, or the mirror); which folder a name built here means is
:mod:`bertflow_mini.encoders.names`' job.

The package's one path to Hugging Face files: every network (:func:`load_network`), tokenizer
(:func:`load_tokenizer`) and config (:func:`load_config`) is read here, with the same offline
handling and the same check of a checkpoint's weights against the class they load into."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from bertflow_mini._device import default_device
from bertflow_mini.data.downloads import HUB_URL, hub_reachable
from bertflow_mini.encoders.cache import weights_fingerprint
from bertflow_mini.encoders.encoder import Encoder
from bertflow_mini.encoders.spec import hub_alias, looks_like_path, short_name

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase


def load_glove_encoder(name: str = "glove-6B-50d") -> Encoder:
    """The GloVe baseline as an :class:`Encoder` (its fingerprint hashes the vectors)."""
    from bertflow_mini.data import load_glove

    glove = load_glove()
    fp = hashlib.sha256(glove.vectors.tobytes()).hexdigest()[:16]
    return Encoder(name=short_name(name), source="glove", fingerprint=fp, glove=glove)


#: Parts of a checkpoint the book never uses, and a loaded class may not have: the masked-LM and
#: next-sentence heads of a ``BertForMaskedLM`` / ``BertForPreTraining`` checkpoint (MultiBERTs on the
#: hub hold both), and the pooler (the book pools hidden states itself).
UNUSED_PARTS = re.compile(r"^(cls\.(predictions|seq_relationship)\.|(bert\.)?pooler\.)")
#: Parts a class may have and a checkpoint lack, drawn at random when loaded: the pooler alone (an
#: MLM checkpoint has none). A missing masked-LM head is not among them: its logits would be noise.
DRAWN_PARTS = re.compile(r"^(bert\.)?pooler\.")


def only_unused_parts(info: dict[str, Any]) -> bool:
    """Does a load's ``info`` (``from_pretrained(..., output_loading_info=True)``) differ from a
    perfect match only by :data:`UNUSED_PARTS` left in the checkpoint and :data:`DRAWN_PARTS`
    drawn for the model?"""
    return (
        all(UNUSED_PARTS.match(k) for k in info.get("unexpected_keys", ()))
        and all(DRAWN_PARTS.match(k) for k in info.get("missing_keys", ()))
        and not info.get("mismatched_keys")
        and not info.get("error_msgs")
    )


class _Held(logging.Filter):
    """Keeps every record a logger makes, and lets none through (they are let out later)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False


@contextmanager
def _load_report_checked() -> Iterator[dict[str, Any]]:
    """Around one ``from_pretrained(..., output_loading_info=True)`` whose info the caller puts in
    the yielded dict under ``"info"``: transformers' report of the weights that the checkpoint and
    the class do not share ("Some weights … were not used", a LOAD REPORT) is dropped when
    :func:`only_unused_parts` says they are expected; every other message of the loader, and the
    report of any other weight, goes out as it would have."""
    logger = logging.getLogger("transformers.modeling_utils")
    held = _Held()
    logger.addFilter(held)
    outcome: dict[str, Any] = {}
    try:
        yield outcome
    finally:
        logger.removeFilter(held)
        info = outcome.get("info") or {}
        keys = (
            [*info["unexpected_keys"], *info["missing_keys"]]
            if info and only_unused_parts(info)
            else []
        )
        for record in held.records:
            # the report names the keys (its table, or transformers 4's list)
            if not any(k in record.getMessage() for k in keys):
                logger.handle(record)


#: The local mirror: a folder holding ``<short name>/`` folders in Hugging Face's format.
MODELS_ENV = "BERTFLOW_MODELS"


def local_folder(name: str) -> Path | None:
    """``name`` itself when it is a folder, else ``$BERTFLOW_MODELS/<short name>`` when that exists."""
    if Path(name).expanduser().is_dir():
        return Path(name).expanduser().resolve()
    if looks_like_path(name):
        raise FileNotFoundError(
            f"model {name!r}: no such folder ({Path(name).expanduser().resolve()})"
        )
    mirror = os.environ.get(MODELS_ENV)
    if mirror and (Path(mirror) / short_name(name)).is_dir():
        return (Path(mirror) / short_name(name)).resolve()
    return None


def folder_or_hub(name: str) -> str:
    """A local folder for ``name`` when there is one, else its hub id: nothing is trained here."""
    folder = local_folder(name)
    return str(folder) if folder is not None else hub_alias(name)


def hub_options(source: str) -> dict[str, bool]:
    """Keyword arguments for ``from_pretrained(source)``: when ``source`` is a hub id and the hub cannot
    be reached, only Hugging Face's own local cache is tried (an immediate error, not a minute of
    retries, when that has nothing)."""
    if Path(source).is_dir() or hub_reachable():
        return {}
    return {"local_files_only": True}


def offline_error(name: str, source: str, err: Exception) -> OSError:
    """The error for a model that is neither mirrored nor reachable: names the variable, the folder
    looked for and the hub URL tried."""
    mirror = os.environ.get(MODELS_ENV)
    where = (
        f"${MODELS_ENV}={mirror} has no folder '{short_name(name)}'"
        if mirror
        else f"${MODELS_ENV} is not set (point it at a folder holding '<short name>/' in Hugging Face format)"
    )
    first = str(err).splitlines()[0] if str(err) else ""
    return OSError(
        f"could not load model '{name}': {where}, and loading '{source}' from the hub "
        f"({HUB_URL.format(source)}) failed: {type(err).__name__}: {first}"
    )


@contextmanager
def hf_bars_off() -> Iterator[None]:
    """Hugging Face's progress bars off inside the block, then as they were before it."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers


@contextmanager
def _from_hub_or_folder(source: str, name: str) -> Iterator[dict[str, bool]]:
    """Around ``from_pretrained(source, **options)`` calls: no progress bars, hub options for
    offline machines, and an error naming the mirror and the hub URL on failure."""
    # a "Loading weights" bar per load would clutter chapters
    with hf_bars_off():
        try:
            yield hub_options(source)
        except (OSError, ValueError) as err:
            raise offline_error(name, source, err) from err


def load_network(
    source: str,
    model_class: type[PreTrainedModel] | None = None,
    name: str | None = None,
) -> PreTrainedModel:
    """The network at ``source`` (a folder or hub id) as ``model_class`` (default ``AutoModel``),
    in eval mode on the CPU: the one place the package loads weights. Checkpoint parts the book
    never uses (heads, pooler: :data:`UNUSED_PARTS`) load without a warning; a pooler the checkpoint
    lacks is drawn without moving the caller's random state; any other weight that does not match
    is reported by transformers as usual."""
    from transformers import AutoModel

    # Any: transformers annotates from_pretrained as returning the model alone, but with
    # output_loading_info=True it returns (model, info)
    loader: Any = model_class or AutoModel
    with _from_hub_or_folder(source, name or source) as options:
        with _load_report_checked() as outcome, torch.random.fork_rng(devices=[]):
            model, outcome["info"] = loader.from_pretrained(
                source, output_loading_info=True, **options
            )
    evaluated: PreTrainedModel = model.eval()
    return evaluated


def load_tokenizer(source: str, name: str | None = None) -> PreTrainedTokenizerBase:
    """The tokenizer at ``source`` (a folder or hub id), with :func:`load_network`'s offline handling."""
    from transformers import AutoTokenizer

    with _from_hub_or_folder(source, name or source) as options:
        return AutoTokenizer.from_pretrained(source, **options)


def load_config(
    source: str, name: str | None = None, local_only: bool = False
) -> PreTrainedConfig:
    """The config at ``source`` (a folder or hub id), with :func:`load_network`'s offline handling:
    a network's shape without its weights. ``local_only``: from a folder or Hugging Face's local
    cache, never the network (an ``OSError`` when neither has it)."""
    from transformers import AutoConfig

    if local_only and not Path(source).is_dir():
        # the snapshot folder HF's cache holds: a folder load never calls the hub library's
        # network code (which may ask the network even with local_files_only)
        cached = _cached_config(source)
        if cached is None:
            raise OSError(f"{source}: no config in Hugging Face's local cache")
        source = str(Path(cached).parent)  # a folder: hub_options asks no network
    with _from_hub_or_folder(source, name or source) as options:
        config: PreTrainedConfig = AutoConfig.from_pretrained(source, **options)
        return config


def _cached_config(source: str) -> str | None:
    """The path of hub model ``source``'s config in Hugging Face's local cache, or ``None``."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(source, "config.json")
    return found if isinstance(found, str) else None


def hub_commit(source: str) -> str | None:
    """The commit of hub model ``source`` that Hugging Face's local cache holds (the folder
    ``snapshots/<commit>/`` its config lies in), or ``None`` when it holds none: read from local
    files, the network never asked."""
    found = _cached_config(source)
    return Path(found).parent.name if found else None


def local_fingerprint(source: str) -> str | None:
    """The fingerprint :func:`load_from` gives the weights at ``source``, from local files alone (no
    model loaded, the network never asked): a folder's weights, or the commit of a hub model in
    Hugging Face's local cache; ``None`` for a hub model not downloaded yet."""
    if Path(source).is_dir():
        return weights_fingerprint(Path(source))
    return hub_commit(source)


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
    model.eval().to(device)  # type: ignore[no-untyped-call]  # unannotated in transformers
    return Encoder(
        short_name(name),
        source,
        fingerprint,
        model=model,
        tokenizer=tokenizer,
        device=device,
    )
