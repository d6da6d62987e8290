"""The unlabelled text the book's own BERT is pretrained on.

Two sources, both plain English and never a label:

* **WordNet 3.0** (``wndb(5WN)`` format: ``offset lex_filenum ss_type w_cnt word lex_id … | gloss``;
  the gloss is ``;``-separated parts, examples in double quotes), about 1.5 M words that are *not* the
  evaluation data, in one of two shapes:

  - ``wordnet``: every gloss part (definition or example) is a sequence of its own, and the synset's
    words are dropped — so two synonyms never share a sequence;
  - ``dictionary``: one sequence per synset, as a dictionary prints it — ``car, auto, automobile,
    machine, motorcar: a motor vehicle with four wheels; usually propelled by …; he needs a car to get
    to work``. It keeps every word of ``wordnet`` and adds the headwords, so MLM sees synonyms side by
    side. (The 0.7 % of entries longer than :data:`ENTRY_WORDS` words are split between gloss parts,
    each piece under the same headwords, so the 64-token window drops nothing.)
* **The STS/SICK sentences** — every sentence of STS12–16, STS-B and SICK, without their scores.
  Training on the evaluation sentences (unlabelled) is the transductive assumption the paper's flow
  (``target`` fit) already makes; ``corpus="wordnet"`` leaves them out.

A fixed 2% of the distinct sentences is held out, chosen by a hash of the sentence (so it does not
depend on order or on which other sentences are present).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertflow_mini.data.layout import data_root
from bertflow_mini.data.pairs import TASKS
from bertflow_mini.data.wordnet import WORDNET_FILES, synset_lines, synset_words

CORPORA = ("wordnet+sts", "wordnet", "sts", "dictionary+sts", "dictionary")
#: A dictionary entry longer than this (in whitespace words) is split between gloss parts; at about
#: 1.46 wordpieces per word, 40 words fit a 64-token window with its [CLS] and [SEP].
ENTRY_WORDS = 40


@dataclass(frozen=True)
class Gloss:
    """One part of a WordNet gloss: a definition or a (quoted) example sentence."""

    text: str
    is_example: bool


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


def headwords(path_name: str, number: int, fields: list[str]) -> list[str]:
    """The words of a synset line's fields (``offset lex_filenum ss_type w_cnt word lex_id …``),
    as printed: ``motor_vehicle`` → ``motor vehicle``, the adjective markers ``(a)``, ``(p)``, ``(ip)``
    removed."""
    words = synset_words(f"{path_name}:{number}", fields)
    return [re.sub(r"\((a|p|ip)\)$", "", w).replace("_", " ") for w in words]


def dictionary_entry(
    words: list[str], parts: list[Gloss], max_words: int = ENTRY_WORDS
) -> list[str]:
    """A synset as a dictionary prints it: ``w1, w2: part; part; …`` (one string, or several under the
    same headwords when it is longer than ``max_words``: split between parts, never inside one)."""
    head = ", ".join(words) + ": "
    pieces: list[list[str]] = [[]]
    size = len(head.split())
    for part in parts:
        n = len(part.text.split())
        if pieces[-1] and size + n > max_words:
            pieces.append([])
            size = len(head.split())
        pieces[-1].append(part.text)
        size += n
    return [head + "; ".join(p) for p in pieces]


def _synsets(root: str | Path | None) -> Iterator[tuple[str, int, str, str]]:
    """(file, line number, the fields before the gloss, the gloss) of every synset line, in file order."""
    folder = data_root(root, need="wordnet") / "wordnet"
    for name in WORDNET_FILES:
        for number, fields, gloss in synset_lines(folder, name):
            yield str(folder / name), number, fields, gloss


def dictionary_entries(
    root: str | Path | None = None, max_words: int = ENTRY_WORDS
) -> list[str]:
    """Every synset of WordNet 3.0 as a dictionary entry (:func:`dictionary_entry`), in file order."""
    out: list[str] = []
    for path_name, number, fields, gloss in _synsets(root):
        out.extend(
            dictionary_entry(
                headwords(path_name, number, fields.split()),
                split_gloss(gloss),
                max_words,
            )
        )
    return out


def wordnet_glosses(root: str | Path | None = None) -> list[Gloss]:
    """Every gloss part of WordNet 3.0's four data files, in file order (duplicates kept)."""
    out: list[Gloss] = []
    for _, _, _, gloss in _synsets(root):
        out.extend(split_gloss(gloss))
    return out


def sts_sentences() -> list[str]:
    """Every distinct sentence of STS12–16, STS-B and SICK (all splits), without the scores."""
    from bertflow_mini.data.sts import task_sentences

    seen: dict[str, None] = {}
    for task in TASKS:
        # a quick run's cap never trains a model
        seen.update(dict.fromkeys(task_sentences(task, capped=False)))
    return list(seen)


def corpus_sentences(
    corpus: str = "wordnet+sts", root: str | Path | None = None
) -> list[str]:
    """The distinct sentences of ``corpus`` (see :data:`CORPORA`), in a fixed order."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")
    sentences: dict[str, None] = {}
    source = corpus.split("+")[0]
    if source == "wordnet":
        sentences.update(dict.fromkeys(g.text for g in wordnet_glosses(root)))
    elif source == "dictionary":
        sentences.update(dict.fromkeys(dictionary_entries(root)))
    if corpus.endswith("sts"):
        sentences.update(dict.fromkeys(sts_sentences()))
    return list(sentences)


def is_held_out(sentence: str, fraction: float = 0.02) -> bool:
    """Whether ``sentence`` belongs to the held-out ``fraction`` (decided by its SHA-256, not by chance)."""
    h = int.from_bytes(hashlib.sha256(sentence.encode("utf-8")).digest()[:8], "big")
    return h < fraction * 2**64


def split_held_out(
    sentences: list[str], fraction: float = 0.02
) -> tuple[list[str], list[str]]:
    """(training sentences, held-out sentences), each in the order given."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction must be in [0, 1), got {fraction}")
    held = [is_held_out(s, fraction) for s in sentences]
    return [s for s, h in zip(sentences, held) if not h], [
        s for s, h in zip(sentences, held) if h
    ]


def unigram_entropy(counts: np.ndarray) -> float:
    """Entropy (nats) of the unigram distribution given by ``counts``: the loss of a model that
    ignores the context and predicts each token by its corpus frequency."""
    p = np.asarray(counts, dtype=np.float64)
    if p.ndim != 1 or (p < 0).any() or p.sum() <= 0 or not np.isfinite(p).all():
        raise ValueError(
            "counts must be a 1-D array of non-negative, finite numbers with a positive sum"
        )
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())
