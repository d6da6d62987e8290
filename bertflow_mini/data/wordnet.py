"""WordNet 3.0's four data files (``wndb(5WN)``): reading their synset lines, and checking that a
copy holds WordNet 3.0's content.

Each synset line is ``offset lex_filenum ss_type w_cnt word lex_id … | gloss``; the licence at the
top of each file is on lines that start with two spaces. A downloaded copy is checked by what the
book reads from it, not by its bytes: per synset, in file order, its part of speech, its words and
its gloss, hashed in blocks of :data:`BLOCK` synsets and compared with the digests of
:data:`~bertflow_mini.data.checksums.WORDNET_BLOCKS`. Byte offsets and pointers are left out:
Debian's ``wordnet-base`` corrects one adjective gloss and adds one verb pointer, which shifts the
byte offsets of later adjective and verb synsets and of every pointer to them, and the book reads
neither. So a copy whose licence text, line endings or trailing spaces differ passes, and
a truncated, damaged or different (WordNet 3.1) copy fails with the file and synsets that differ.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple, TextIO

from bertflow_mini.data.checksums import (
    WORDNET_BLOCKS,
    WORDNET_SYNSETS,
    WORDNET_VARIANTS,
)

WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
#: Synsets per hashed block: a failed check names the block's synsets and lines.
BLOCK = 8192


def open_text(folder: Path, name: str) -> TextIO:
    """``name`` or ``name.gz`` inside ``folder`` (the mirror gzips, the official archives do not),
    as text with any line ending."""
    for path in (folder / f"{name}.gz", folder / name):
        if path.is_file():
            return (
                gzip.open(path, "rt", encoding="utf-8")
                if path.suffix == ".gz"
                else open(path, encoding="utf-8")
            )
    raise FileNotFoundError(f"{folder / name}(.gz) does not exist")


def synset_lines(folder: Path, name: str) -> Iterator[tuple[int, str, str]]:
    """(line number, the fields before the gloss, the gloss) of every synset line of ``name``."""
    with open_text(folder, name) as f:
        for number, line in enumerate(f, start=1):
            if line.startswith("  "):  # the licence header
                continue
            if " | " not in line:
                raise ValueError(
                    f"{folder / name}:{number}: a synset line without ' | ' before its gloss"
                )
            fields, gloss = line.split(" | ", 1)
            yield number, fields, gloss.strip()


def synset_words(where: str, fields: list[str]) -> list[str]:
    """The words of a synset line's ``fields`` as written (``motor_vehicle``, ``galore(ip)``),
    checked against the hexadecimal word count; ``where`` (file:line) names the line in an error."""
    try:
        count = int(fields[3], 16)
    except (IndexError, ValueError):
        raise ValueError(
            f"{where}: no hexadecimal word count in the fourth field"
        ) from None
    words, lex_ids = fields[4 : 4 + 2 * count : 2], fields[5 : 5 + 2 * count : 2]
    valid = [i for i in lex_ids if len(i) == 1 and i in "0123456789abcdef"]
    if count == 0 or len(valid) != count:
        raise ValueError(
            f"{where}: the line announces {count} words but has {len(valid)} (word, lex_id) pairs"
        )
    return words


class Block(NamedTuple):
    """:data:`BLOCK` synsets of a data file (fewer in its last block): the SHA-256 (first 16 hex
    digits) of their part of speech, words and gloss, their first and last line, how many."""

    digest: str
    first_line: int
    last_line: int
    synsets: int


def content_blocks(folder: Path, name: str) -> list[Block]:
    """The :class:`Block` s of ``name``, in file order."""
    blocks: list[Block] = []
    digest = hashlib.sha256()
    first = size = 0
    for number, fields, gloss in synset_lines(folder, name):
        split = fields.split()
        words = synset_words(f"{folder / name}:{number}", split)
        if size == 0:
            digest, first = hashlib.sha256(), number
        digest.update(f"{split[2]} {' '.join(words)} | {gloss}\n".encode())
        size += 1
        if size == BLOCK:
            blocks.append(Block(digest.hexdigest()[:16], first, number, size))
            size = 0
    if size:
        blocks.append(Block(digest.hexdigest()[:16], first, number, size))
    return blocks


def verify_wordnet(folder: Path) -> None:
    """Raise ValueError unless ``folder`` holds WordNet 3.0's four data files (plain or gzipped),
    each with WordNet 3.0's synsets: their number, and the words and gloss of each (as Princeton's
    archive, NLTK's data package or Debian's ``wordnet-base`` has them; see the module's
    docstring). The message names the file and the synsets and lines that differ."""
    for name in WORDNET_FILES:
        if not ((folder / name).is_file() or (folder / f"{name}.gz").is_file()):
            raise ValueError(f"the download lacks {name}")
        blocks = content_blocks(folder, name)
        count = sum(b.synsets for b in blocks)
        if count != WORDNET_SYNSETS[name]:
            raise ValueError(
                f"{name} has {count:,} synsets, WordNet 3.0's has {WORDNET_SYNSETS[name]:,} "
                "(a truncated or different copy)"
            )
        for k, block in enumerate(blocks):
            known = {WORDNET_BLOCKS[name][k]} | {
                v[name][k] for v in WORDNET_VARIANTS.values() if k in v.get(name, {})
            }
            if block.digest not in known:
                start = k * BLOCK + 1
                raise ValueError(
                    f"{name}: the words or glosses of synsets {start:,}-"
                    f"{start + block.synsets - 1:,} (lines {block.first_line:,}-"
                    f"{block.last_line:,}) differ from WordNet 3.0's (a damaged or altered copy)"
                )
