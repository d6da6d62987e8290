"""The book's released weights: the runs the chapters read, fetched instead of trained.

``make release`` packs each run folder of the cache the book's outputs were made with —
``scratch-bert``'s pretraining (its checkpoints at 0, 25, 50 and 100 %) and chapter 7's SimCSE
runs — into ``<folder name>.tar``, and writes this package's manifest (``release.json``): the
repository, the tag, and each archive's SHA-256. The repository URL is the book's one configured
value (``_config.yml``'s ``repository.url``); the release lives at
``<repository>/releases/download/<tag>/``, or wherever ``$BERTFLOW_RELEASE`` points (a mirror, a
local server).

:func:`fetch` is a build step, never a lookup: :func:`bertflow_mini.encoders.names.build` calls it
before training, and trains only when the release does not hold the run or cannot be reached.
"""

from __future__ import annotations

import json
import os
import tarfile
from importlib.resources import files
from pathlib import Path
from typing import Any

from bertflow_mini._io import atomic_dir, cache_dir

MANIFEST = "release.json"
#: A base URL that serves the release's files instead of the repository's release page.
RELEASE_ENV = "BERTFLOW_RELEASE"
#: Seconds a download may wait for the server before the run is trained instead.
TIMEOUT_S = 30


def manifest() -> dict[str, Any]:
    """The package's release manifest: ``repository``, ``tag`` and ``files`` (name → SHA-256)."""
    info: dict[str, Any] = json.loads(
        files("bertflow_mini.encoders").joinpath(MANIFEST).read_text()
    )
    return info


def release_url(info: dict[str, Any] | None = None) -> str:
    """Where the release's files are served, ending in "/": ``$BERTFLOW_RELEASE``, else the
    repository's release page for the manifest's tag."""
    info = info or manifest()
    base = os.environ.get(RELEASE_ENV) or (
        f"{info['repository'].rstrip('/')}/releases/download/{info['tag']}"
    )
    return base.rstrip("/") + "/"


def archive_name(folder: Path) -> str:
    """The release's file for the run folder ``folder``: its name and ``.tar``."""
    return f"{folder.name}.tar"


def fetch(folder: Path, *, progress: bool = True) -> bool:
    """Put the released run ``folder`` (a cache folder that does not exist yet) in place: download
    its archive, check its SHA-256, unpack it atomically. False, saying why, when the release has
    no such run or cannot be reached; a download whose checksum differs is an error."""
    import pooch

    folder = Path(folder)
    name = archive_name(folder)
    known = manifest()["files"].get(name)
    if known is None:
        return False
    url = release_url() + name
    print(
        f"{folder.name.rsplit('-', 1)[0]}: fetching the book's released weights ({url}) …",
        flush=True,
    )
    try:
        archive = pooch.retrieve(
            url,
            known_hash=f"sha256:{known}",
            fname=name,
            path=cache_dir("release"),
            downloader=pooch.HTTPDownloader(timeout=TIMEOUT_S, progressbar=progress),
        )
    except OSError as error:  # requests' ConnectionError and HTTPError are OSErrors
        print(f"  not reachable ({type(error).__name__}): {error}", flush=True)
        return False
    with atomic_dir(folder) as staging, tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    os.remove(archive)
    return True
