"""bertflow_mini.data.glove: the reader (plain and gzipped, malformed lines named), the real
mirror file, and the download routes (the checked hub copy, Stanford's zip)."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bertflow_mini.data import DataNotFoundError, downloads, load_glove
from bertflow_mini.data import glove as G
from bertflow_mini.encoders.glove import glove_embed
from data.conftest import MIRROR


def test_real_glove_file(real_glove):
    assert (
        real_glove.vectors.shape == (103_264, 50)
        and real_glove.vectors.dtype == np.float32
    )
    assert len(real_glove.index) == len(real_glove.words)  # no repeated words
    with gzip.open(
        MIRROR / "glove" / "glove.6B.50d.subset.txt.gz", "rt", encoding="utf-8"
    ) as f:
        first = f.readline().split()
    assert real_glove.words[0] == first[0] == "the"
    np.testing.assert_array_equal(
        real_glove["the"], np.array(first[1:], dtype=np.float32)
    )


GLOVE_TEXT = "the 1 0 0 0\ncat 0 2 0 0\nsat 0 0 3 -1\n. 0.5 0.5 0.5 0.5\nn't 0 0 0 4\ndo -1 -1 0 0\n"


def test_glove_text_and_gzip_load_identically(tmp_path):
    (tmp_path / "g.txt").write_text(GLOVE_TEXT, encoding="utf-8")
    with gzip.open(tmp_path / "g.txt.gz", "wt", encoding="utf-8") as f:
        f.write(GLOVE_TEXT)
    a, b = (
        load_glove(tmp_path / "g.txt", dim=4),
        load_glove(tmp_path / "g.txt.gz", dim=4),
    )
    assert a.words == b.words == ["the", "cat", "sat", ".", "n't", "do"]
    np.testing.assert_array_equal(a.vectors, b.vectors)
    assert (
        a.vectors.dtype == np.float32
        and a["sat"].tolist() == [0, 0, 3, -1]
        and "dog" not in a
    )
    assert load_glove(tmp_path / "g.txt", dim=4, max_words=2).words == ["the", "cat"]
    with pytest.raises(KeyError, match="dog"):
        a["dog"]


@pytest.mark.parametrize(
    "line,message",
    [
        ("sat 0 0 3\n", "g.txt:3: expected a word and 4 numbers, got 4"),
        ("sat 0 0 x 1\n", "g.txt:3: 'x' is not a number"),
        ("sat 0 0 nan 1\n", "g.txt:3: vector contains NaN"),
    ],
)
def test_malformed_glove_line_names_file_and_line(tmp_path, line, message):
    lines = GLOVE_TEXT.splitlines(keepends=True)
    (tmp_path / "g.txt").write_text(
        "".join(lines[:2] + [line] + lines[3:]), encoding="utf-8"
    )
    with pytest.raises(ValueError, match=message):
        load_glove(tmp_path / "g.txt", dim=4)


def test_glove_wrong_dim_says_so(tmp_path):
    (tmp_path / "g.txt").write_text(GLOVE_TEXT, encoding="utf-8")
    with pytest.raises(
        ValueError, match="g.txt:1: expected a word and 50 numbers, got 5 fields.*dim="
    ):
        load_glove(tmp_path / "g.txt")


def test_glove_embed_is_the_mean_of_known_words(tmp_path):
    (tmp_path / "g.txt").write_text(GLOVE_TEXT, encoding="utf-8")
    g = load_glove(tmp_path / "g.txt", dim=4)
    out = glove_embed(["The cat sat.", "Don't!", "zebra unicorn", "CAT"], g)
    assert out.shape == (4, 4) and out.dtype == np.float32
    # 4 known tokens
    np.testing.assert_allclose(out[0], (g["the"] + g["cat"] + g["sat"] + g["."]) / 4)
    np.testing.assert_allclose(out[1], (g["do"] + g["n't"]) / 2)  # "!" is unknown
    np.testing.assert_array_equal(out[2], np.zeros(4))  # nothing known: zero
    np.testing.assert_array_equal(out[3], g["cat"])
    with pytest.raises(ValueError, match="not a single string"):
        glove_embed("The cat sat.", g)


def test_glove_download_extracts_only_the_dim_member_and_checks_it(
    tmp_path, offline, monkeypatch
):
    text = "".join(f"w{i} " + " ".join(["0.5"] * 50) + "\n" for i in range(3))
    with zipfile.ZipFile(tmp_path / "glove.6B.zip", "w") as zf:
        zf.writestr("glove.6B.50d.txt", text)
        zf.writestr("glove.6B.100d.txt", "w0 " + " ".join(["1"] * 100) + "\n")
    monkeypatch.setitem(downloads.URLS, "GloVe", (tmp_path / "glove.6B.zip").as_uri())
    with pytest.raises(
        DataNotFoundError, match="is not the official glove.6B.50d.txt .3 rows"
    ):
        load_glove()  # the real check: 400,000 rows and the official first rows
    assert not (offline / "glove" / "glove.6B.50d.txt").exists()
    head = hashlib.sha256(
        "".join(text.splitlines(keepends=True)[:2]).encode()
    ).hexdigest()
    monkeypatch.setattr(G, "GLOVE_50D_ROWS", 3)  # the same check, scaled to this file
    monkeypatch.setattr(G, "GLOVE_50D_HEAD", (2, head))
    g = load_glove()
    assert g.words == ["w0", "w1", "w2"] and np.all(g.vectors == 0.5)
    assert [p.name for p in (offline / "glove").iterdir()] == ["glove.6B.50d.txt"]
    monkeypatch.setitem(downloads.URLS, "GloVe", "http://127.0.0.1:9/gone.zip")
    assert len(load_glove()) == 3  # found in the cache now
    with pytest.raises(
        DataNotFoundError,
        match="BERTFLOW_DATA.*glove.6B.100d.txt.*http://127.0.0.1:9/gone.zip",
    ):
        load_glove(dim=100)


def test_glove_head_checksum_is_the_official_files_first_rows():
    """The mirror's subset file begins with the official file's first 100,000 lines (shared/README)."""
    from conftest import need

    path = MIRROR / "glove" / "glove.6B.50d.subset.txt.gz"
    need(path)
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as f:
        for line in itertools.islice(f, G.GLOVE_50D_HEAD[0]):
            digest.update(line)
    assert digest.hexdigest() == G.GLOVE_50D_HEAD[1]


@pytest.fixture
def glove_hub(tmp_path, monkeypatch, offline):
    """A fake hub serving ``glove_hub(text)`` as the 50-d file, with the checks scaled to it: the
    expected row count and the checksum of its first 3 lines are those of GLOVE_TEXT."""
    head = hashlib.sha256(
        "".join(GLOVE_TEXT.splitlines(keepends=True)[:3]).encode()
    ).hexdigest()
    monkeypatch.setattr(G, "GLOVE_50D_ROWS", GLOVE_TEXT.count("\n"))
    monkeypatch.setattr(G, "GLOVE_50D_HEAD", (3, head))
    monkeypatch.setattr(downloads, "hub_reachable", lambda *a, **k: True)
    served = []

    def serve(text):
        def fake(repo, file, revision, local_dir):
            assert (repo, revision, file) == G.GLOVE_HUB
            served.append(file)
            (Path(local_dir) / file).write_text(text, encoding="utf-8")
            return str(Path(local_dir) / file)

        import huggingface_hub

        monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
        return served

    return serve


def test_glove_hub_copy_of_50d_is_cached_once(glove_hub, offline, monkeypatch):
    served = glove_hub(GLOVE_TEXT)
    path = G.find_glove(50)
    assert (
        path == offline / "glove" / "glove.6B.50d.txt"
        and path.read_text() == GLOVE_TEXT
    )
    # the second call: the cache
    assert G.find_glove(50) == path and served == ["glove.6B.50d.txt"]
    # no staging left behind
    assert [p.name for p in path.parent.iterdir()] == ["glove.6B.50d.txt"]


def test_glove_hub_copy_that_differs_is_refused_and_names_it(glove_hub, offline):
    # one number of the first rows changed
    glove_hub(GLOVE_TEXT.replace("cat 0 2", "cat 0 9"))
    with pytest.raises(DataNotFoundError) as err:
        G.find_glove(50)
    message = str(err.value)
    for part in (
        "https://huggingface.co/JeremiahZ/glove",
        "is not the official glove.6B.50d.txt",
        "http://127.0.0.1:9/blocked/GloVe",
        "BERTFLOW_DATA",
    ):
        assert part in message, part
    assert not (offline / "glove" / "glove.6B.50d.txt").exists()
