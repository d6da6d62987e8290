"""Where the data is: one layout, three places, and one error that says where we looked.

Every loader finds its files the same way (:func:`data_root`):

1. an explicit ``root`` argument,
2. ``$BERTFLOW_DATA`` when it holds the needed sub-folder (CI and this repo: ``../shared/data``),
3. the user cache ``cache_dir("data")``,
4. a download into that cache (:func:`bertflow_mini.data.downloads.install`), checked file by file.

(The hub's copies are tried by the loaders themselves, before step 4.) The layout is the same
everywhere: ``sts/STS12`` … ``sts/STS16``, ``sts/STSBenchmark``, ``sick/``, ``glove/``, ``wordnet/``
and ``glue/QNLI``, each holding the files exactly as the official archives ship them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from bertflow_mini._io import cache_dir
from bertflow_mini.data import downloads
from bertflow_mini.data.checksums import QNLI_ROWS
from bertflow_mini.data.downloads import Route, Source
from bertflow_mini.data.pairs import STS_SUBSETS
from bertflow_mini.data.wordnet import WORDNET_FILES, verify_wordnet

ENV_VAR = "BERTFLOW_DATA"

#: SICK's three SemEval files: our split → file name (the one table both SICK loaders read).
SICK_FILES = {
    "train": "SICK_train.txt",
    "trial": "SICK_trial.txt",
    "test": "SICK_test_annotated.txt",
}
#: QNLI's labelled splits → GLUE's file name (test.tsv has no labels).
QNLI_FILES = {"train": "train.tsv", "dev": "dev.tsv"}
STSB_FILES = ("sts-train.csv", "sts-dev.csv", "sts-test.csv")

#: Why a hub copy was not used, per target (shown when the official archive fails too).
HUB_FAILURES: dict[str, str] = {}


class DataNotFoundError(FileNotFoundError):
    """The data is in none of the places we look, and fetching it failed (the message says why)."""


def sts_files(task: str) -> tuple[str, ...]:
    """The input and gold file of every SentEval subset of STS12–16."""
    prefix = "STS2016" if task == "STS16" else "STS"
    subsets = STS_SUBSETS[task]
    return tuple(
        f"{prefix}.{kind}.{s}.txt" for s in subsets for kind in ("input", "gs")
    )


def _check_qnli(folder: Path) -> None:
    """QNLI has no copy in ``../shared`` to hash: check each file's row count (GLUE's)."""
    for name, rows in QNLI_ROWS.items():
        n = len(numbered_lines(folder / name, "QNLI")) - 1  # the header
        if n != rows:
            raise ValueError(f"{name} has {n} rows, GLUE's has {rows}")


_STS_INNER = {
    "STS12": "test-gold",
    "STS13": "test-gs",
    "STS14": "sts-en-test-gs-2014",
    "STS15": "test_evaluation_task2a",
    "STS16": "sts2016-english-with-gs-v1.0",
}

SOURCES: dict[str, Source] = {
    **{
        t: Source(f"sts/{t}", sts_files(t), (Route((t,), inner),))
        for t, inner in _STS_INNER.items()
    },
    "STSB": Source("sts/STSBenchmark", STSB_FILES, (Route(("STSB",), "stsbenchmark"),)),
    "SICK-R": Source(
        "sick",
        tuple(SICK_FILES.values()),
        (Route(("SICK-train", "SICK-trial", "SICK-test")),),
    ),
    # The pretraining corpus (bertflow_mini.data.corpus): NLTK's data package first, Princeton's
    # archive second; the mirror gzips the four files, both archives ship them plain. Checked by
    # content, not bytes: the distributions differ in bytes.
    "WordNet": Source(
        "wordnet",
        WORDNET_FILES,
        (Route(("WordNet-NLTK",), "wordnet"), Route(("WordNet",), "WordNet-3.0/dict")),
        verify_wordnet,
    ),
    "QNLI": Source(
        "glue/QNLI",
        tuple(QNLI_FILES.values()),
        (Route(("QNLI",), "QNLI"),),
        _check_qnli,
    ),
}


def _sources_for(need: str) -> list[Source]:
    prefix = need.rstrip("/") + "/"
    found = [
        s for s in SOURCES.values() if s.target == need or s.target.startswith(prefix)
    ]
    if not found:
        known = sorted({s.target for s in SOURCES.values()} | {"sts"})
        raise ValueError(
            f"need={need!r} is not part of the data layout; expected one of {known}"
        )
    return found


def _has(base: Path, sources: Sequence[Source]) -> bool:
    return all((base / s.target).exists() for s in sources)


def advice(sources: Sequence[Source]) -> str:
    """What to do when files are missing: the env var to set, the URLs, and why a hub copy was not
    used (when one was tried)."""
    urls = ", ".join(url for s in sources for url in s.urls())
    env = os.environ.get(ENV_VAR)
    now = f"${ENV_VAR} is {env}" if env else f"${ENV_VAR} is unset"
    notes = "".join(
        f" {HUB_FAILURES[s.target]}" for s in sources if s.target in HUB_FAILURES
    )
    return (
        f"Point ${ENV_VAR} at a folder with the layout of ../shared/data ({now}), "
        f"or download {urls} by hand." + notes
    )


def official_present(key: str) -> bool:
    """Are the official files of ``SOURCES[key]`` in ``$BERTFLOW_DATA`` or the cache?"""
    sources = _sources_for(SOURCES[key].target)
    env = os.environ.get(ENV_VAR)
    return bool(env and _has(Path(env).expanduser(), sources)) or _has(
        cache_dir("data"), sources
    )


def data_root(root: str | Path | None = None, *, need: str = "sts") -> Path:
    """The folder holding ``need`` (``"sts"``, ``"sts/STS12"``, ``"sick"``, ``"wordnet"``, …).

    Looks in ``root``, then ``$BERTFLOW_DATA``, then the user cache; downloads into the cache as a
    last resort. Returns the root folder itself, so the data is at ``data_root(...) / need``.
    """
    sources = _sources_for(need)
    if root is not None:
        root = Path(root).expanduser()
        if not _has(root, sources):
            layout = ", ".join(s.target for s in sources)
            raise DataNotFoundError(
                f"{root / need} does not exist (root={str(root)!r} was given explicitly; it must "
                f"use the layout of ../shared/data: {layout}). " + advice(sources)
            )
        return root
    env = os.environ.get(ENV_VAR)
    if env and _has(Path(env).expanduser(), sources):
        return Path(env).expanduser()
    cache = cache_dir("data")
    for source in sources:
        if not (cache / source.target).exists():
            fetch_or_explain(source, cache)
    return cache


def fetch_or_explain(source: Source, cache: Path) -> Path:
    """Download ``source`` into ``cache``, or raise the one error that says where we looked, which
    URLs failed and why."""
    try:
        return downloads.install(source, cache)
    except (
        Exception
    ) as err:  # network, corrupt archive, wrong files: all end in the same advice
        if (
            cache / source.target
        ).exists():  # another process finished the same download first
            return cache / source.target
        env = os.environ.get(ENV_VAR)
        looked = f"${ENV_VAR}/{source.target}" + (
            f" = {Path(env) / source.target}" if env else f" (${ENV_VAR} is unset)"
        )
        raise DataNotFoundError(
            f"{source.target} not found. Looked in {looked} and in the cache "
            f"{cache / source.target}; downloading {', '.join(source.urls())} failed: "
            f"{type(err).__name__}: {err}. " + advice([source])
        ) from err


def numbered_lines(path: Path, key: str) -> list[tuple[int, str]]:
    """(1-based line number, line without its newline) of one file of ``SOURCES[key]``; CRLF files
    read the same as LF files. A missing file or bytes that are not UTF-8 raise an error naming
    them."""
    if not path.is_file():
        raise DataNotFoundError(
            f"{path} does not exist, although its folder {path.parent} does: the folder is "
            f"incomplete. " + advice([SOURCES[key]])
        )
    raw = path.read_bytes()
    try:
        # every official file is valid UTF-8 (checked on the mirror)
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(
            f"{path}:{line}: not valid UTF-8 ({err.reason} at byte {err.start}); "
            f"the file is damaged or not one of the official files"
        ) from None
    # as text mode reads them
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return list(enumerate(lines, start=1))
