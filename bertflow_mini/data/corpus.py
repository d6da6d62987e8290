"""The unlabelled text the book's own BERT is pretrained on.

Two sources, both plain English sentences and never a label:

* **WordNet 3.0 glosses** — every synset's definitions and quoted example sentences (``wndb(5WN)``
  format: ``offset lex_filenum ss_type w_cnt word … | gloss``; the gloss is ``;``-separated parts,
  examples in double quotes). About 1.5 M words that are *not* the evaluation data.
* **The STS/SICK sentences** — every sentence of STS12–16, STS-B and SICK, without their scores.
  Training on the evaluation sentences (unlabelled) is the transductive assumption the paper's flow
  (``target`` fit) already makes; ``corpus="wordnet"`` leaves them out.

A fixed 2% of the distinct sentences is held out, chosen by a hash of the sentence (so it does not
depend on order or on which other sentences are present).
"""
from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from bertflow_mini.data.datasets import TASKS
from bertflow_mini.data.datasets import data_root

WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
CORPORA = ("wordnet+sts", "wordnet", "sts")


@dataclass(frozen=True)
class Gloss:
    """One part of a WordNet gloss: a definition or a (quoted) example sentence."""

    text: str
    is_example: bool


def _open_text(folder: Path, name: str):
    """``name`` or ``name.gz`` inside ``folder`` (the mirror gzips, the official archive does not)."""
    for path in (folder / f"{name}.gz", folder / name):
        if path.is_file():
            return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")
    raise FileNotFoundError(f"{folder / name}(.gz) does not exist")


def split_gloss(gloss: str) -> list[Gloss]:
    """The parts of a gloss, split at every ``;`` as ``wndb(5WN)`` describes it; quoted parts are examples.

    (The rare example that itself contains a ``;`` — about 120 of 48,247 — comes out in two parts.)
    """
    out = []
    for part in (p.strip() for p in gloss.split(";")):
        text = part.strip('"').strip()
        if text:
            out.append(Gloss(text, is_example=part.startswith('"')))
    return out


def _synset_glosses(path_name: str, f) -> Iterator[Gloss]:
    for number, line in enumerate(f, start=1):
        if line.startswith("  "):  # the licence header
            continue
        if " | " not in line:
            raise ValueError(f"{path_name}:{number}: a synset line without ' | ' before its gloss")
        yield from split_gloss(line.split(" | ", 1)[1].rstrip("\n").strip())


def wordnet_glosses(root: str | Path | None = None) -> list[Gloss]:
    """Every gloss part of WordNet 3.0's four data files, in file order (duplicates kept)."""
    folder = data_root(root, need="wordnet") / "wordnet"
    out: list[Gloss] = []
    for name in WORDNET_FILES:
        with _open_text(folder, name) as f:
            out.extend(_synset_glosses(str(folder / name), f))
    return out


def sts_sentences() -> list[str]:
    """Every distinct sentence of STS12–16, STS-B and SICK (all splits), without the scores."""
    from bertflow_mini.data.datasets import task_sentences

    seen: dict[str, None] = {}
    for task in TASKS:
        seen.update(dict.fromkeys(task_sentences(task, capped=False)))  # a quick run's cap never trains a model
    return list(seen)


def corpus_sentences(corpus: str = "wordnet+sts", root: str | Path | None = None) -> list[str]:
    """The distinct sentences of ``corpus`` (see :data:`CORPORA`), in a fixed order."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")
    sentences: dict[str, None] = {}
    if "wordnet" in corpus:
        sentences.update(dict.fromkeys(g.text for g in wordnet_glosses(root)))
    if "sts" in corpus:
        sentences.update(dict.fromkeys(sts_sentences()))
    return list(sentences)


def is_held_out(sentence: str, fraction: float = 0.02) -> bool:
    """Whether ``sentence`` belongs to the held-out ``fraction`` (decided by its SHA-256, not by chance)."""
    h = int.from_bytes(hashlib.sha256(sentence.encode("utf-8")).digest()[:8], "big")
    return h < fraction * 2**64


def split_held_out(sentences: list[str], fraction: float = 0.02) -> tuple[list[str], list[str]]:
    """(training sentences, held-out sentences), each in the order given."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction must be in [0, 1), got {fraction}")
    held = [is_held_out(s, fraction) for s in sentences]
    return [s for s, h in zip(sentences, held) if not h], [s for s, h in zip(sentences, held) if h]


def unigram_entropy(counts: np.ndarray) -> float:
    """Entropy (nats) of the unigram distribution given by ``counts``: the loss of a model that
    ignores the context and predicts each token by its corpus frequency."""
    p = np.asarray(counts, dtype=np.float64)
    if p.ndim != 1 or (p < 0).any() or p.sum() <= 0 or not np.isfinite(p).all():
        raise ValueError("counts must be a 1-D array of non-negative, finite numbers with a positive sum")
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())
