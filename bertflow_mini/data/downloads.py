"""Getting files from outside: the official archives (downloaded with pooch, unpacked, checked
file by file against :data:`bertflow_mini.data.checksums.FILES`, moved into place in one step) and
single files of the Hugging Face hub's copies.

Nothing here touches the network at import time: every download happens inside a function call.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import socket
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bertflow_mini._io import atomic_dir, atomic_path, cache_dir
from bertflow_mini.data.checksums import FILES

#: The official archives (STS and SICK: as SentEval's ``get_transfer_data.bash`` lists them), and
#: for WordNet NLTK's data package (maintained, served from GitHub) before Princeton's archive.
#: No archive's own SHA-256 could be computed here (``../shared`` holds the files unpacked, not the
#: archives): every file the loaders use is checked after unpacking instead (:func:`check_files`).
URLS: dict[str, str] = {
    "STS12": "http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip",
    "STS13": "http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip",
    "STS14": "http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip",
    "STS15": "http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip",
    "STS16": "http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip",
    "STSB": "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz",
    "SICK-train": "http://alt.qcri.org/semeval2014/task1/data/uploads/sick_train.zip",
    "SICK-trial": "http://alt.qcri.org/semeval2014/task1/data/uploads/sick_trial.zip",
    "SICK-test": "http://alt.qcri.org/semeval2014/task1/data/uploads/sick_test_annotated.zip",
    "GloVe": "https://nlp.stanford.edu/data/glove.6B.zip",
    "WordNet-NLTK": "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/wordnet.zip",
    "WordNet": "https://wordnetcode.princeton.edu/3.0/WordNet-3.0.tar.gz",
    "QNLI": "https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip",  # GLUE's official archive
}

#: The hub, the one address every model and dataset link is built from: ``HUB_URL.format(id)``.
HUB_URL = "https://huggingface.co/{}"


def hub_file_url(repo: str, revision: str, file: str) -> str:
    """The address of one file of a hub dataset at ``revision``."""
    return HUB_URL.format(f"datasets/{repo}/resolve/{revision}/{file}")


#: After a failed probe, :func:`hub_reachable` answers "no" without probing for this many seconds:
#: a chapter asks it many times, and each probe of an unreachable hub waits its whole timeout.
PROBE_BACKOFF_S = 30.0
#: (host, port) reached once in this process, and (host, port) → when the last probe failed
_REACHED: set[tuple[str, int]] = set()
_FAILED_AT: dict[tuple[str, int], float] = {}


def in_colab() -> bool:
    """Is this a Google Colab runtime (``google.colab`` importable)? Colab always has a network."""
    if "google.colab" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("google.colab") is not None
    # no `google` package at all, or a stand-in without a spec
    except (ImportError, ValueError):
        return False


def hub_reachable(
    host: str = "huggingface.co", port: int = 443, timeout: float = 3.0
) -> bool:
    """Can this machine open a connection to the hub? Yes at once in Colab. A success is remembered
    for the process; a failure only for :data:`PROBE_BACKOFF_S` seconds, after which the next call
    probes again, so that one network hiccup cannot switch a chapter offline for good."""
    if in_colab():
        return True
    key = (host, port)
    if key in _REACHED:
        return True
    failed = _FAILED_AT.get(key)
    if failed is not None and time.monotonic() - failed < PROBE_BACKOFF_S:
        return False
    try:
        socket.create_connection(key, timeout=timeout).close()
    except OSError:
        _FAILED_AT[key] = time.monotonic()
        return False
    _REACHED.add(key)
    _FAILED_AT.pop(key, None)
    return True


def forget_hub_probes() -> None:
    """Forget every probe's answer: the next :func:`hub_reachable` call probes again."""
    _REACHED.clear()
    _FAILED_AT.clear()


def hub_download(repo: str, revision: str, file: str) -> Path:
    """One file of a hub dataset, through ``huggingface_hub``'s cache under ``cache_dir("data")/hub``
    (no network when it is there already)."""
    from huggingface_hub import hf_hub_download  # transformers' own dependency

    target = cache_dir("data") / "hub"
    kwargs = dict(repo_type="dataset", revision=revision, cache_dir=target)
    # already downloaded: no network at all
    try:
        return Path(hf_hub_download(repo, file, local_files_only=True, **kwargs))  # type: ignore[call-overload]
    # huggingface_hub's LocalEntryNotFoundError, every version since 0.19
    except FileNotFoundError:
        pass
    if not hub_reachable():
        url = hub_file_url(repo, revision, file)
        raise OSError(f"the hub is unreachable, so {url} could not be downloaded")
    return Path(hf_hub_download(repo, file, **kwargs))  # type: ignore[call-overload]


# --------------------------------------------------------------------------------------------
# One folder (or file) of the data layout, and the ways to get it
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One way to get a target: these archives (keys of :data:`URLS`), unpacked together; the
    folder or file ``inner`` inside them becomes the target."""

    urls: tuple[str, ...]
    inner: str = ""
    members: tuple[str, ...] | None = (
        None  # extract only these members (None: everything)
    )


@dataclass(frozen=True)
class Source:
    """A folder (or file) of the layout, e.g. ``sts/STS12``: the files it must hold, the routes
    tried in order, and the check a download must pass (default: :func:`check_files`)."""

    target: str
    files: tuple[str, ...]
    routes: tuple[Route, ...]
    check: Callable[[Path], None] | None = None

    def urls(self) -> list[str]:
        """Every archive's URL, in the order the routes try them."""
        return [URLS[key] for route in self.routes for key in route.urls]


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def check_files(folder: Path, source: Source) -> None:
    """Raise ValueError unless every file of ``source`` is in ``folder`` with the SHA-256 that
    :data:`~bertflow_mini.data.checksums.FILES` records for it."""
    for name in source.files:
        path, key = folder / name, f"{source.target}/{name}"
        if not path.is_file():
            raise ValueError(f"the download lacks {name}")
        if sha256(path) != FILES[key]:
            raise ValueError(
                f"{name} is not the official file (its SHA-256 differs from {key}'s)"
            )


# --------------------------------------------------------------------------------------------
# Download, unpack, check, move into place
# --------------------------------------------------------------------------------------------


def _copy_local(
    url: str, output_file: str, pooch: object = None, check_only: bool = False
) -> bool | None:
    """pooch's downloader for ``file://`` URLs (a local copy of an archive): copy it."""
    source = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
    if check_only:
        return source.is_file()
    shutil.copyfile(source, output_file)
    return None


def download(url: str, into: Path, known_hash: str | None = None) -> Path:
    """Fetch ``url`` into the folder ``into`` with pooch (which checks ``known_hash`` when given)."""
    import pooch

    name = Path(urllib.parse.urlparse(url).path).name or "archive"
    if url.startswith("file:"):
        downloader = _copy_local
    else:
        # pooch draws its own tqdm bar once the server answers: a failed connection prints none
        downloader = pooch.HTTPDownloader(progressbar=True, timeout=60)
    logger = pooch.get_logger()
    level = logger.level
    # not pooch's advice to pin a hash: the files are checked instead
    logger.setLevel("WARNING")
    try:
        path = pooch.retrieve(
            url, known_hash, fname=name, path=into, downloader=downloader
        )
    finally:
        logger.setLevel(level)
    return Path(path)


def unpack(archive: Path, into: Path, members: tuple[str, ...] | None = None) -> None:
    """Check ``archive`` is whole (zip CRCs / a full tar read), then extract it into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            present = zf.namelist()
            names = present if members is None else list(members)
            missing = sorted(set(names) - set(present))
            if missing:
                raise ValueError(f"{archive.name} has no member(s) {missing}")
            # Extraction checks each member's CRC-32 as it reads it: damage raises BadZipFile;
            # zipfile also strips absolute paths and "..".
            zf.extractall(into, members=names)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive, "r:*") as tf:
            chosen = tf.getmembers()  # reads the whole archive: truncation fails here
            if members is not None:
                chosen = [m for m in chosen if m.name in members]
            # "data": no links or paths out of `into`
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tf.extractall(into, members=chosen, **safe)  # type: ignore[arg-type]
    else:
        raise ValueError(
            f"{archive.name} is neither a zip nor a tar archive (damaged or not an archive)"
        )


def _unpacked(route: Route, staging: Path) -> Path:
    """Download and unpack the archives of ``route`` under ``staging``; the path of ``inner``."""
    unpacked = staging / "unpacked"
    for key in route.urls:
        archive = download(URLS[key], staging)
        unpack(archive, unpacked, route.members)
        archive.unlink()
    content = unpacked / route.inner if route.inner else unpacked
    if not content.exists():
        raise ValueError(f"the downloaded archive(s) lack {route.inner}")
    return content


def install(source: Source, base: Path) -> Path:
    """Get ``source`` into ``base / source.target``: each route in turn until one's download passes
    the check; the target appears complete or not at all. Raises the last route's error."""
    target = base / source.target
    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for route in source.routes:
        try:
            with tempfile.TemporaryDirectory(
                dir=target.parent, prefix=f".{target.name}.", suffix=".partial"
            ) as staging:
                content = _unpacked(route, Path(staging))
                if source.check is not None:
                    source.check(content)
                else:
                    check_files(content, source)
                if content.is_dir():
                    with atomic_dir(target) as out:
                        for child in content.iterdir():
                            child.replace(out / child.name)
                else:
                    with atomic_path(target) as out:
                        content.replace(out)
            return target
        # this route failed (unreachable, a damaged archive, a file that fails its check): the
        # next route, or the error; anything else is a bug and surfaces
        except (
            OSError,
            ValueError,
            EOFError,
            zipfile.BadZipFile,
            tarfile.TarError,
        ) as err:
            errors.append(
                f"{', '.join(URLS[k] for k in route.urls)}: {type(err).__name__}: {err}"
            )
    raise OSError("; ".join(errors))
