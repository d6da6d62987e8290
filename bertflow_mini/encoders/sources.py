"""Where a model's files are, before anything is trained: an explicit folder, the local mirror
(``$BERTFLOW_MODELS/<short name>``) or the Hugging Face hub. :mod:`bertflow_mini.encoders.names`
builds on this (the cache of models made here); the pretraining code loading its tokenizer uses
it directly."""

from __future__ import annotations

import os
from pathlib import Path

from bertflow_mini.data.downloads import HUB_URL, hub_reachable

#: Short names the book uses, and the hub id each one falls back to when no mirror has it.
HUB_IDS: dict[str, str] = {
    "bert-base-uncased": "bert-base-uncased",
    "bert-large-uncased": "bert-large-uncased",
    "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "bert-base-uncased-tokenizer": "bert-base-uncased",  # the tokenizer only (scratch-bert's vocabulary)
}
MODELS_ENV = "BERTFLOW_MODELS"


def short_name(name: str) -> str:
    """``"sentence-transformers/all-MiniLM-L6-v2"`` → ``"all-MiniLM-L6-v2"``; a path → its folder name."""
    return Path(str(name).rstrip("/")).name


def is_glove(name: str) -> bool:
    """``glove-6B-50d`` and friends: the static word-vector baseline, not a network."""
    return short_name(name).lower().startswith("glove")


def looks_like_path(name: str) -> bool:
    """A name meant as a folder on disk (``/x``, ``./x``, ``../x``, ``~/x``), not a hub id (``org/x``)."""
    return str(name).startswith(("/", "./", "../", "~")) or str(name) in (".", "..")


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


def hub_id(name: str) -> str:
    """The hub id a short name falls back to (itself when the book has no alias for it)."""
    return HUB_IDS.get(short_name(name), name)


def folder_or_hub(name: str) -> str:
    """A local folder for ``name`` when there is one, else its hub id: nothing is trained here."""
    folder = local_folder(name)
    return str(folder) if folder is not None else hub_id(name)


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
