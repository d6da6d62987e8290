"""Where a model's files are on this machine, before anything is trained: an explicit folder, or
the local mirror (``$BERTFLOW_MODELS/<short name>``). :mod:`bertflow_mini.encoders.names` looks
here first (a folder wins over the grammar of :mod:`.spec`), and so do the random-init controls
(a base's config) and the pretraining code (its tokenizer)."""

from __future__ import annotations

import os
from pathlib import Path

from bertflow_mini.encoders.spec import hub_alias, looks_like_path, short_name

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
