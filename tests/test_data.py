"""bertflow_mini.data: real counts on the mirror, malformed input, download/unpack without the network, GloVe."""
from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bertflow_mini.data import datasets as data
from bertflow_mini.data.datasets import (
    STS_SUBSETS,
    DataNotFoundError,
    GloVe,
    canonical_task,
    data_root,
    splits,
    tokenize_words,
)
from bertflow_mini.data import TASKS, load_glove, load_sts
from bertflow_mini.encoders.glove import glove_embed

MIRROR = Path(os.environ.get("BERTFLOW_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """No test may reach the internet: every official URL points at a closed local port, the hub
    counts as unreachable, and no test may set the subset cap by accident."""
    for key in data.URLS:
        monkeypatch.setitem(data.URLS, key, f"http://127.0.0.1:9/blocked/{key}")
    monkeypatch.setattr(data, "hub_reachable", lambda *a, **k: False)
    monkeypatch.delenv(data.MAX_PAIRS_ENV, raising=False)


@pytest.fixture
def mirror(monkeypatch) -> Path:
    from conftest import need

    need(MIRROR)
    monkeypatch.setenv("BERTFLOW_DATA", str(MIRROR))
    return MIRROR


@pytest.fixture
def offline(tmp_path, monkeypatch) -> Path:
    """An empty $BERTFLOW_DATA and an empty private cache: only a download can find anything."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "data"


# ----------------------------------------------------------------------------------------------------
# The real mirror
# ----------------------------------------------------------------------------------------------------

COUNTS = [("STS12", "test", 3108), ("STS13", "test", 1500), ("STS14", "test", 3750), ("STS15", "test", 3000),
          ("STS16", "test", 1186), ("STSB", "train", 5749), ("STSB", "dev", 1500), ("STSB", "test", 1379),
          ("SICK-R", "train", 4500), ("SICK-R", "trial", 500), ("SICK-R", "test", 4927)]


@pytest.mark.parametrize("task,split,n", COUNTS)
def test_real_counts_and_ranges(mirror, task, split, n):
    pairs = load_sts(task, split)
    assert (pairs.task, pairs.split, len(pairs)) == (task, split, n)
    assert len(pairs.sent1) == len(pairs.sent2) == len(pairs.subsets) == pairs.scores.shape[0] == n
    assert pairs.scores.dtype == np.float64
    lo = 1.0 if task == "SICK-R" else 0.0
    assert pairs.scores.min() >= lo and pairs.scores.max() <= 5.0 and pairs.scores.std() > 0.5
    assert all(s.strip() and "\t" not in s and "\n" not in s for s in pairs.sent1 + pairs.sent2)
    expected_subsets = set(STS_SUBSETS[task]) if task in STS_SUBSETS else {split}
    assert set(pairs.subsets) == expected_subsets


def test_sts12_scores_equal_the_official_concatenation(mirror):
    """STS12 ships STS.gs.ALL.txt, the five gold files concatenated: an independent check of order and parsing."""
    official = np.loadtxt(mirror / "sts" / "STS12" / "STS.gs.ALL.txt")
    np.testing.assert_array_equal(load_sts("sts2012").scores, official)


def test_stsb_lines_with_source_columns(mirror):
    """Lines with 9 fields keep sentence1/sentence2 in fields 6–7; the source columns are dropped."""
    raw = (mirror / "sts" / "STSBenchmark" / "sts-test.csv").read_text(encoding="utf-8").split("\n")
    i = next(i for i, line in enumerate(raw) if line.count("\t") == 8)
    fields = raw[i].split("\t")
    pairs = load_sts("STS-B", "test")
    assert (pairs.sent1[i], pairs.sent2[i], pairs.scores[i]) == (fields[5], fields[6], float(fields[4]))
    assert any('"' in s for s in pairs.sent1 + pairs.sent2)  # quotes survive: no CSV quoting


def test_sentences_are_unique_in_first_seen_order(mirror):
    pairs = load_sts("STS13")
    expected: list[str] = []
    for a, b in zip(pairs.sent1, pairs.sent2):
        for s in (a, b):
            if s not in expected:
                expected.append(s)
    assert pairs.sentences() == expected
    assert len(expected) < 2 * len(pairs)  # STS13 repeats sentences, so deduplication matters


@pytest.fixture(scope="module")
def real_glove() -> GloVe:
    from conftest import need

    path = MIRROR / "glove" / "glove.6B.50d.subset.txt.gz"
    need(path)
    return load_glove(path)


def test_real_glove_file(real_glove):
    assert real_glove.vectors.shape == (103_264, 50) and real_glove.vectors.dtype == np.float32
    assert len(real_glove.index) == len(real_glove.words)  # no repeated words
    with gzip.open(MIRROR / "glove" / "glove.6B.50d.subset.txt.gz", "rt", encoding="utf-8") as f:
        first = f.readline().split()
    assert real_glove.words[0] == first[0] == "the"
    np.testing.assert_array_equal(real_glove["the"], np.array(first[1:], dtype=np.float32))


def test_word_split_covers_stsb_test_in_the_mirror(mirror, real_glove):
    """The split matches GloVe's vocabulary: ≥ 99.5% of STS-B test tokens known, no sentence left empty."""
    sentences = load_sts("STSB", "test").sentences()
    tokens = [t for s in sentences for t in tokenize_words(s)]
    coverage = np.mean([t in real_glove for t in tokens])
    assert coverage > 0.995, coverage
    assert np.linalg.norm(glove_embed(sentences, real_glove), axis=1).min() > 0


# ----------------------------------------------------------------------------------------------------
# Names and splits
# ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alias,name", [("STS-B", "STSB"), ("stsb", "STSB"), ("STSBenchmark", "STSB"),
                                        ("SICK", "SICK-R"), ("sickr", "SICK-R"), ("SICK-R", "SICK-R"),
                                        ("sts12", "STS12"), ("STS2016", "STS16"), ("sts-14", "STS14")])
def test_canonical_task(alias, name):
    assert canonical_task(alias) == name


def test_unknown_task_and_split():
    with pytest.raises(ValueError, match="unknown task 'STS17'"):
        canonical_task("STS17")
    assert [splits(t) for t in TASKS] == [("train", "dev", "test"), ("train", "trial", "test")] + [("test",)] * 5
    with pytest.raises(ValueError, match="splits"):
        load_sts("STS12", "train")


# ----------------------------------------------------------------------------------------------------
# Parsing small files written here: unscored pairs, malformed lines
# ----------------------------------------------------------------------------------------------------

def write_sts_year(folder: Path, task: str = "STS12", n: int = 3) -> Path:
    """A fake STS year: every subset with ``n`` pairs scored 0.5, 1.5, …"""
    folder.mkdir(parents=True, exist_ok=True)
    prefix = "STS2016" if task == "STS16" else "STS"
    for subset in STS_SUBSETS[task]:
        (folder / f"{prefix}.input.{subset}.txt").write_text(
            "".join(f"{subset} a {i}\t{subset} b {i}\n" for i in range(n)), encoding="utf-8")
        (folder / f"{prefix}.gs.{subset}.txt").write_text("".join(f"{i + 0.5}\n" for i in range(n)), encoding="utf-8")
    return folder


def test_unscored_pairs_are_skipped_and_source_columns_ignored(tmp_path):
    folder = write_sts_year(tmp_path / "sts" / "STS16", "STS16")
    (folder / "STS2016.input.headlines.txt").write_text(
        "h1\th2\tsrc1\tsrc2\nx1\tx2\tsrc1\tsrc2\ny1\ty2\tsrc1\tsrc2\n", encoding="utf-8")
    (folder / "STS2016.gs.headlines.txt").write_text("4\n\n2.5\n", encoding="utf-8")  # pair 2 is unscored
    pairs = load_sts("STS16", root=tmp_path)
    got = [(a, b, s) for a, b, s, sub in zip(pairs.sent1, pairs.sent2, pairs.scores, pairs.subsets) if sub == "headlines"]
    assert got == [("h1", "h2", 4.0), ("y1", "y2", 2.5)]
    assert len(pairs) == 3 * 4 + 2


@pytest.mark.parametrize("file,content,where", [
    ("STS.input.MSRvid.txt", "a\tb\nonly one field\nc\td\n", "STS.input.MSRvid.txt:2"),
    ("STS.gs.MSRpar.txt", "1\nfour\n3\n", "STS.gs.MSRpar.txt:2"),
    ("STS.gs.MSRpar.txt", "1\n2\n7.5\n", "STS.gs.MSRpar.txt:3"),
    ("STS.gs.MSRpar.txt", "1\n2\nnan\n", "STS.gs.MSRpar.txt:3"),
    ("STS.gs.SMTeuroparl.txt", "1\n2\n", "STS.gs.SMTeuroparl.txt:3"),  # 2 gold lines for 3 pairs
])
def test_malformed_sts_line_names_file_and_line(tmp_path, file, content, where):
    folder = write_sts_year(tmp_path / "sts" / "STS12")
    (folder / file).write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=where):
        load_sts("STS12", root=tmp_path)


STSB_LINE = "main-news\theadlines\t2016\t0012\t{score}\tSaid \"hi\" to her\tSaid 'hi'\n"


def test_stsb_plain_tab_split_and_malformed(tmp_path):
    folder = tmp_path / "sts" / "STSBenchmark"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"sts-{split}.csv").write_text(
            STSB_LINE.format(score=4) + STSB_LINE.format(score="1.5").rstrip("\n") + "\tsrc1\tsrc2\n", encoding="utf-8")
    pairs = load_sts("STSB", "dev", root=tmp_path)
    assert pairs.sent1 == ['Said "hi" to her'] * 2 and pairs.sent2 == ["Said 'hi'"] * 2
    assert pairs.scores.tolist() == [4.0, 1.5] and pairs.subsets == ["dev", "dev"]
    (folder / "sts-dev.csv").write_text(STSB_LINE.format(score=4) + "genre\tfile\t2016\t1\t3\tonly one\n")
    with pytest.raises(ValueError, match="sts-dev.csv:2: expected at least 7"):
        load_sts("STSB", "dev", root=tmp_path)


SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"


def write_sick(folder: Path, newline: str = "\n", score: str = "4.5") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    body = SICK_HEADER + f"1\tA dog runs\tA dog is running\t{score}\tENTAILMENT\n2\tA cat\tNo cat\t1\tCONTRADICTION\n"
    for name in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"):
        (folder / name).write_bytes(body.replace("\n", newline).encode("utf-8"))


def test_sick_crlf_reads_like_lf_and_bad_score(tmp_path):
    write_sick(tmp_path / "lf" / "sick")
    write_sick(tmp_path / "crlf" / "sick", newline="\r\n")
    lf, crlf = load_sts("SICK", "test", root=tmp_path / "lf"), load_sts("SICK", "test", root=tmp_path / "crlf")
    assert (lf.sent1, lf.sent2, lf.scores.tolist()) == (crlf.sent1, crlf.sent2, crlf.scores.tolist())
    assert lf.sent2 == ["A dog is running", "No cat"] and lf.scores.tolist() == [4.5, 1.0]
    write_sick(tmp_path / "bad" / "sick", score="high")
    with pytest.raises(ValueError, match="SICK_trial.txt:2: gold score 'high' is not a number"):
        load_sts("SICK", "trial", root=tmp_path / "bad")


def test_explicit_root_without_data_names_the_path_env_var_and_url(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_sts("STS14", root=tmp_path)
    for part in (str(tmp_path / "sts" / "STS14"), "$BERTFLOW_DATA", data.URLS["STS14"]):
        assert part in str(err.value), part


def test_a_file_missing_from_a_found_folder_names_it_the_env_var_and_url(tmp_path, monkeypatch):
    folder = write_sts_year(tmp_path / "sts" / "STS15", "STS15")
    (folder / "STS.gs.belief.txt").unlink()  # e.g. a copy interrupted half-way
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError) as err:
        load_sts("STS15")
    for part in (str(folder / "STS.gs.belief.txt"), f"$BERTFLOW_DATA is {tmp_path}", data.URLS["STS15"]):
        assert part in str(err.value), part


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    write_sick(tmp_path / "sick")
    path = tmp_path / "sick" / "SICK_trial.txt"
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"No cat", b"No caf\xe9")  # Latin-1, not UTF-8, on line 3
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="SICK_trial.txt:3: not valid UTF-8"):
        load_sts("SICK", "trial", root=tmp_path)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("final", [True, False])
def test_lines_split_as_text_mode_reads_them(tmp_path, newline, final):
    """The loaders' line split is Python's text mode (universal newlines), with or without a final newline."""
    path = tmp_path / "f.txt"
    body = newline.join(["a\tb", "", "c"]) + (newline if final else "")
    path.write_bytes(body.encode("utf-8"))
    with open(path, encoding="utf-8") as f:
        oracle = [(i, line.rstrip("\n")) for i, line in enumerate(f, start=1)]
    assert data.numbered_lines(path, "STSB") == oracle == [(1, "a\tb"), (2, ""), (3, "c")]


# ----------------------------------------------------------------------------------------------------
# Resolution and download (file:// URLs to archives built here; never the network)
# ----------------------------------------------------------------------------------------------------

def zip_folder(folder: Path, archive: Path, arcroot: str) -> str:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.iterdir()):
            zf.write(f, f"{arcroot}/{f.name}" if arcroot else f.name)
    return archive.as_uri()


def test_download_sts_zip_unpacks_to_the_mirror_layout(tmp_path, offline, monkeypatch):
    url = zip_folder(write_sts_year(tmp_path / "src", "STS12"), tmp_path / "STS2012-en-test.zip", "test-gold")
    monkeypatch.setitem(data.URLS, "STS12", url)
    pairs = load_sts("STS12")
    assert len(pairs) == 5 * 3 and pairs.scores.tolist()[:3] == [0.5, 1.5, 2.5]
    assert data_root(need="sts/STS12") == offline
    assert (offline / "sts" / "STS12" / "STS.input.MSRpar.txt").is_file()
    assert sorted(p.name for p in (offline / "sts").iterdir()) == ["STS12"]  # no staging folder left behind
    monkeypatch.setitem(data.URLS, "STS12", "http://127.0.0.1:9/gone.zip")
    assert len(load_sts("STS12")) == 15  # the second call reads the cache, no download


def test_download_stsb_tar_and_three_sick_zips(tmp_path, offline, monkeypatch):
    src = tmp_path / "stsb"
    src.mkdir()
    for split in ("train", "dev", "test"):
        (src / f"sts-{split}.csv").write_text(STSB_LINE.format(score=3), encoding="utf-8")
    with tarfile.open(tmp_path / "Stsbenchmark.tar.gz", "w:gz") as tf:
        tf.add(src, arcname="stsbenchmark")
    monkeypatch.setitem(data.URLS, "STSB", (tmp_path / "Stsbenchmark.tar.gz").as_uri())
    assert load_sts("STSB", "test").scores.tolist() == [3.0]
    write_sick(tmp_path / "sick")
    for key, name in [("SICK-train", "SICK_train.txt"), ("SICK-trial", "SICK_trial.txt"),
                      ("SICK-test", "SICK_test_annotated.txt")]:
        with zipfile.ZipFile(tmp_path / f"{key}.zip", "w") as zf:
            zf.write(tmp_path / "sick" / name, name)
        monkeypatch.setitem(data.URLS, key, (tmp_path / f"{key}.zip").as_uri())
    assert len(load_sts("SICK-R", "trial")) == 2
    assert sorted(p.name for p in (offline / "sick").iterdir()) == sorted(
        ["SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"])


def _corrupt(tmp_path: Path, how: str) -> Path:
    good = tmp_path / "good.zip"
    zip_folder(write_sts_year(tmp_path / "src", "STS12"), good, "test-gold")
    bad = tmp_path / f"{how}.zip"
    raw = good.read_bytes()
    if how == "garbage":
        bad.write_bytes(b"<html>503 Service Unavailable</html>")
    elif how == "truncated":                      # an interrupted download
        bad.write_bytes(raw[: len(raw) // 2])
    elif how == "bitflip":                        # damaged data inside a member: the CRC check must notice
        with zipfile.ZipFile(good) as zf:
            info = zf.getinfo("test-gold/STS.input.MSRpar.txt")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 2
        bad.write_bytes(raw[:start] + bytes([raw[start] ^ 0xFF]) + raw[start + 1:])
    elif how == "incomplete":                     # a whole zip, but without one of the expected files
        with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
            for name in src.namelist():
                if "MSRvid" not in name:
                    dst.writestr(name, src.read(name))
    return bad


@pytest.mark.parametrize("how", ["garbage", "truncated", "bitflip", "incomplete"])
def test_bad_archive_raises_and_leaves_no_folder(tmp_path, offline, monkeypatch, how):
    monkeypatch.setitem(data.URLS, "STS12", _corrupt(tmp_path, how).as_uri())
    with pytest.raises(DataNotFoundError, match="downloading file://"):
        load_sts("STS12")
    assert not (offline / "sts" / "STS12").exists()
    assert list((offline / "sts").iterdir()) == []  # no half-filled staging folder either


def test_truncated_tar_raises_and_leaves_no_folder(tmp_path, offline, monkeypatch):
    src = tmp_path / "stsbenchmark"
    src.mkdir()
    for split in ("train", "dev", "test"):  # incompressible text, so that half the .tar.gz misses members
        lines = (STSB_LINE.format(score=3).replace("0012", os.urandom(8).hex()) for _ in range(300))
        (src / f"sts-{split}.csv").write_text("".join(lines), encoding="utf-8")
    buffer = tmp_path / "full.tar.gz"
    with tarfile.open(buffer, "w:gz") as tf:
        tf.add(src, arcname="stsbenchmark")
    raw = buffer.read_bytes()
    (tmp_path / "Stsbenchmark.tar.gz").write_bytes(raw[: len(raw) // 2])
    monkeypatch.setitem(data.URLS, "STSB", (tmp_path / "Stsbenchmark.tar.gz").as_uri())
    with pytest.raises(DataNotFoundError, match="Stsbenchmark.tar.gz"):
        load_sts("STSB", "test")
    assert list((offline / "sts").iterdir()) == []


def test_offline_error_names_env_var_path_and_url(offline):
    with pytest.raises(FileNotFoundError) as err:
        load_sts("STS15")
    message = str(err.value)
    for part in ("BERTFLOW_DATA", str(offline.parent.parent / "empty" / "sts" / "STS15"),
                 str(offline / "sts" / "STS15"), "http://127.0.0.1:9/blocked/STS15", "URLError"):
        assert part in message, part


def test_env_folder_wins_and_one_without_the_subfolder_is_skipped(tmp_path, monkeypatch):
    write_sts_year(tmp_path / "env" / "sts" / "STS13", "STS13")
    write_sts_year(tmp_path / "cache" / "data" / "sts" / "STS13", "STS13", n=2)
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    assert data_root(need="sts/STS13") == tmp_path / "env" and len(load_sts("STS13")) == 9
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "elsewhere"))
    assert data_root(need="sts/STS13") == tmp_path / "cache" / "data" and len(load_sts("STS13")) == 6
    with pytest.raises(ValueError, match="not part of the data layout"):
        data_root(need="squad")


# ----------------------------------------------------------------------------------------------------
# GloVe
# ----------------------------------------------------------------------------------------------------

GLOVE_TEXT = "the 1 0 0 0\ncat 0 2 0 0\nsat 0 0 3 -1\n. 0.5 0.5 0.5 0.5\nn't 0 0 0 4\ndo -1 -1 0 0\n"


def test_glove_text_and_gzip_load_identically(tmp_path):
    (tmp_path / "g.txt").write_text(GLOVE_TEXT, encoding="utf-8")
    with gzip.open(tmp_path / "g.txt.gz", "wt", encoding="utf-8") as f:
        f.write(GLOVE_TEXT)
    a, b = load_glove(tmp_path / "g.txt", dim=4), load_glove(tmp_path / "g.txt.gz", dim=4)
    assert a.words == b.words == ["the", "cat", "sat", ".", "n't", "do"]
    np.testing.assert_array_equal(a.vectors, b.vectors)
    assert a.vectors.dtype == np.float32 and a["sat"].tolist() == [0, 0, 3, -1] and "dog" not in a
    assert load_glove(tmp_path / "g.txt", dim=4, max_words=2).words == ["the", "cat"]
    with pytest.raises(KeyError, match="dog"):
        a["dog"]


@pytest.mark.parametrize("line,message", [("sat 0 0 3\n", "g.txt:3: expected a word and 4 numbers, got 4"),
                                          ("sat 0 0 x 1\n", "g.txt:3: 'x' is not a number"),
                                          ("sat 0 0 nan 1\n", "g.txt:3: vector contains NaN")])
def test_malformed_glove_line_names_file_and_line(tmp_path, line, message):
    lines = GLOVE_TEXT.splitlines(keepends=True)
    (tmp_path / "g.txt").write_text("".join(lines[:2] + [line] + lines[3:]), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_glove(tmp_path / "g.txt", dim=4)


def test_glove_wrong_dim_says_so(tmp_path):
    (tmp_path / "g.txt").write_text(GLOVE_TEXT, encoding="utf-8")
    with pytest.raises(ValueError, match="g.txt:1: expected a word and 50 numbers, got 5 fields.*dim="):
        load_glove(tmp_path / "g.txt")


def test_glove_embed_is_the_mean_of_known_words(tmp_path):
    (tmp_path / "g.txt").write_text(GLOVE_TEXT, encoding="utf-8")
    g = load_glove(tmp_path / "g.txt", dim=4)
    out = glove_embed(["The cat sat.", "Don't!", "zebra unicorn", "CAT"], g)
    assert out.shape == (4, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], (g["the"] + g["cat"] + g["sat"] + g["."]) / 4)  # 4 known tokens
    np.testing.assert_allclose(out[1], (g["do"] + g["n't"]) / 2)                          # "!" is unknown
    np.testing.assert_array_equal(out[2], np.zeros(4))                                   # nothing known: zero
    np.testing.assert_array_equal(out[3], g["cat"])
    with pytest.raises(ValueError, match="not a single string"):
        glove_embed("The cat sat.", g)


@pytest.mark.parametrize("sentence,tokens", [
    ("A man is playing a flute.", ["a", "man", "is", "playing", "a", "flute", "."]),
    ("Don't, it's O'Ree's", ["do", "n't", ",", "it", "'s", "o'ree", "'s"]),
    ("I can’t see $5.", ["i", "ca", "n't", "see", "$", "5", "."]),
    ("rock 'n' roll", ["rock", "'", "n", "'", "roll"]),
])
def test_tokenize_words(sentence, tokens):
    assert tokenize_words(sentence) == tokens


def test_glove_download_extracts_only_the_dim_member(tmp_path, offline, monkeypatch):
    with zipfile.ZipFile(tmp_path / "glove.6B.zip", "w") as zf:
        zf.writestr("glove.6B.50d.txt", "".join(f"w{i} " + " ".join(["0.5"] * 50) + "\n" for i in range(3)))
        zf.writestr("glove.6B.100d.txt", "w0 " + " ".join(["1"] * 100) + "\n")
    monkeypatch.setitem(data.URLS, "GloVe", (tmp_path / "glove.6B.zip").as_uri())
    g = load_glove()
    assert g.words == ["w0", "w1", "w2"] and np.all(g.vectors == 0.5)
    assert [p.name for p in (offline / "glove").iterdir()] == ["glove.6B.50d.txt"]
    monkeypatch.setitem(data.URLS, "GloVe", "http://127.0.0.1:9/gone.zip")
    assert len(load_glove()) == 3  # found in the cache now
    with pytest.raises(DataNotFoundError, match="BERTFLOW_DATA.*glove.6B.100d.txt.*http://127.0.0.1:9/gone.zip"):
        load_glove(dim=100)


# ----------------------------------------------------------------------------------------------------
# The hub's MTEB copies: a fixture in their format (jsonl.gz, one {"sentence1", "sentence2", "score"}
# per line), built from the mirror's official files
# ----------------------------------------------------------------------------------------------------

def official(task: str, split: str = "test"):
    """The official-file loader's pairs, straight from the mirror (never the hub)."""
    return load_sts(task, split, root=MIRROR)


def write_jsonl_gz(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for a, b, score in rows:
            f.write(json.dumps({"sentence1": a, "sentence2": b, "score": score}) + "\n")
    return path


def hub_rows(task: str, split: str = "test", order=None):
    """The rows an MTEB copy holds: STS12–16 one file with the subsets one after another (in
    ``order``, default SentEval's), SICK-R one file of all its splits, STS-B one file per split."""
    if task == "SICK-R":
        parts = [official(task, s) for s in (order or ("train", "trial", "test"))]
        return [row for p in parts for row in zip(p.sent1, p.sent2, p.scores.tolist())]
    pairs = official(task, split)
    rows = list(zip(pairs.sent1, pairs.sent2, pairs.scores.tolist(), pairs.subsets))
    if order is not None:
        rows = [r for name in order for r in rows if r[3] == name]
    return [r[:3] for r in rows]


@pytest.fixture
def serve_hub(tmp_path, monkeypatch):
    """Serve files as the hub would: ``serve_hub(task, file, rows)`` makes ``_hub_download`` return
    them for that task's repository; anything else is 'unreachable'."""
    served: dict[tuple[str, str], Path] = {}

    def fake_download(repo, revision, file):
        assert (repo, revision) in data.HUB_COPIES.values()
        if (repo, file) not in served:
            raise OSError(f"the hub is unreachable ({repo}/{file})")
        return served[(repo, file)]

    def serve(task, file, rows):
        repo = data.HUB_COPIES[task][0]
        served[(repo, file)] = write_jsonl_gz(tmp_path / "hub" / repo / file, rows)
        return served[(repo, file)]

    monkeypatch.setattr(data, "_hub_download", fake_download)
    return serve


HUB_FILE = {"train": "train.jsonl.gz", "dev": "validation.jsonl.gz", "test": "test.jsonl.gz"}


@pytest.mark.parametrize("task,split,n", COUNTS)
def test_hub_copy_gives_the_official_pairs_scores_and_subsets(mirror, serve_hub, task, split, n):
    file = "test.jsonl.gz" if task == "SICK-R" else HUB_FILE[split]
    serve_hub(task, file, hub_rows(task, split))
    got, want = data.load_hub_copy(task, split), official(task, split)
    assert len(got) == len(want) == n  # the real pairs, counted
    assert (got.sent1, got.sent2, got.subsets) == (want.sent1, want.sent2, want.subsets)
    np.testing.assert_array_equal(got.scores, want.scores)


@pytest.mark.parametrize("task,order", [("STS12", STS_SUBSETS["STS12"][::-1]),
                                        ("STS14", sorted(STS_SUBSETS["STS14"])),
                                        ("SICK-R", ("test", "train", "trial"))])
def test_hub_copy_with_blocks_in_another_order_labels_each_pair_by_its_block(mirror, serve_hub, task, order):
    serve_hub(task, "test.jsonl.gz", hub_rows(task, order=order))
    got, want = data.load_hub_copy(task), official(task)
    key = lambda p: sorted(zip(p.subsets, p.sent1, p.sent2, p.scores.tolist()))
    assert key(got) == key(want) and len(got) == len(want)


def test_hub_copy_that_is_not_sentevals_blocks_is_refused_and_the_official_archive_tried(mirror, serve_hub,
                                                                                      offline):
    rows = hub_rows("STS13")
    interleaved = rows[::2] + rows[1::2]  # every pair present, but the subsets no longer contiguous
    path = serve_hub("STS13", "test.jsonl.gz", interleaved)
    with pytest.raises(ValueError, match=f"{path}.*does not hold SentEval's STS13"):
        data.load_hub_copy("STS13")
    with pytest.raises(DataNotFoundError) as err:  # offline: the official archive cannot be had either
        load_sts("STS13")
    message = str(err.value)
    for part in ("BERTFLOW_DATA", str(offline / "sts" / "STS13"), "http://127.0.0.1:9/blocked/STS13",
                 "https://huggingface.co/datasets/mteb/sts13-sts", "does not hold SentEval's STS13"):
        assert part in message, part


def test_load_sts_uses_the_hub_copy_only_without_official_files(mirror, serve_hub, monkeypatch, tmp_path):
    rows = hub_rows("STSB", "dev")
    serve_hub("STSB", "validation.jsonl.gz", [(a.upper(), b, s) for a, b, s in rows])  # tell them apart
    assert load_sts("STSB", "dev").sent1 == official("STSB", "dev").sent1  # the mirror wins
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    assert load_sts("STSB", "dev").sent1 == [a.upper() for a, _, _ in rows]


@pytest.mark.parametrize("line,message", [("not json", "JSONDecodeError"),
                                          ('{"sentence1": "a", "score": 1.0}', "KeyError"),
                                          ('{"sentence1": "a", "sentence2": 3, "score": 1.0}', "must be strings"),
                                          ('{"sentence1": "a", "sentence2": "b", "score": 7.5}', "outside")])
def test_malformed_hub_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "test.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write('{"sentence1": "a", "sentence2": "b", "score": 2.5}\n' + line + "\n")
    with pytest.raises(ValueError, match=f"{path}:2: .*{message}"):
        data.read_hub_jsonl(path, "STSB")


def test_blocks_are_the_official_subsets_sizes_and_score_sums(mirror):
    for task, blocks in data.BLOCKS.items():
        parts = [official(task, s) for s in splits(task)]
        labels = [label for p in parts for label in p.subsets]
        scores = np.concatenate([p.scores for p in parts])
        assert [name for name, _, _ in blocks] == list(dict.fromkeys(labels)), task
        for name, n, total in blocks:
            mine = scores[np.array(labels) == name]
            assert (len(mine), round(float(mine.sum()), 4)) == (n, total), (task, name)


# ----------------------------------------------------------------------------------------------------
# $BERTFLOW_MAX_PAIRS: the first N pairs of every split
# ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task,split", [("STS12", "test"), ("SICK-R", "train"), ("STSB", "dev")])
def test_max_pairs_keeps_the_first_n_pairs(mirror, monkeypatch, task, split):
    full = load_sts(task, split)
    monkeypatch.setenv(data.MAX_PAIRS_ENV, "37")
    capped = load_sts(task, split)
    assert len(capped) == 37 and data.max_pairs() == 37
    assert (capped.sent1, capped.sent2, capped.subsets) == (full.sent1[:37], full.sent2[:37], full.subsets[:37])
    np.testing.assert_array_equal(capped.scores, full.scores[:37])
    monkeypatch.setenv(data.MAX_PAIRS_ENV, str(len(full) + 1))  # more than there are: all of them
    assert len(load_sts(task, split)) == len(full)


def test_max_pairs_can_be_bypassed_for_corpora(mirror, monkeypatch):
    full = data.task_sentences("STSB")
    monkeypatch.setenv(data.MAX_PAIRS_ENV, "5")
    assert len(data.task_sentences("STSB")) <= 3 * 2 * 5 < len(full)  # 5 pairs of each of 3 splits
    assert data.task_sentences("STSB", capped=False) == full
    assert len(load_sts("STSB", "train", capped=False)) == 5749


@pytest.mark.parametrize("value", ["0", "-3", "ten", "2.5"])
def test_max_pairs_must_be_a_positive_integer(monkeypatch, value):
    monkeypatch.setenv(data.MAX_PAIRS_ENV, value)
    with pytest.raises(ValueError, match=f"BERTFLOW_MAX_PAIRS must be a positive integer.*{value!r}"):
        data.max_pairs()


def test_max_pairs_unset_or_empty_keeps_everything(monkeypatch):
    assert data.max_pairs() is None
    monkeypatch.setenv(data.MAX_PAIRS_ENV, "")
    assert data.max_pairs() is None


# ----------------------------------------------------------------------------------------------------
# GloVe-50d from the hub: checked against the official file's first rows, then cached once
# ----------------------------------------------------------------------------------------------------

def test_glove_head_checksum_is_the_official_files_first_rows():
    """The mirror's subset file begins with the official file's first 100,000 lines (shared/README)."""
    from conftest import need

    path = MIRROR / "glove" / "glove.6B.50d.subset.txt.gz"
    need(path)
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as f:
        for line in itertools.islice(f, data.GLOVE_50D_HEAD[0]):
            digest.update(line)
    assert digest.hexdigest() == data.GLOVE_50D_HEAD[1]


@pytest.fixture
def glove_hub(tmp_path, monkeypatch, offline):
    """A fake hub serving ``glove_hub(text)`` as the 50-d file, with the checks scaled to it: the
    expected row count and the checksum of its first 3 lines are those of GLOVE_TEXT."""
    head = hashlib.sha256("".join(GLOVE_TEXT.splitlines(keepends=True)[:3]).encode()).hexdigest()
    monkeypatch.setattr(data, "GLOVE_50D_ROWS", GLOVE_TEXT.count("\n"))
    monkeypatch.setattr(data, "GLOVE_50D_HEAD", (3, head))
    monkeypatch.setattr(data, "hub_reachable", lambda *a, **k: True)
    downloads = []

    def serve(text):
        def fake(repo, file, revision, local_dir):
            assert (repo, revision, file) == data.GLOVE_HUB
            downloads.append(file)
            (Path(local_dir) / file).write_text(text, encoding="utf-8")
            return str(Path(local_dir) / file)

        import huggingface_hub

        monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
        return downloads

    return serve


def test_glove_hub_copy_of_50d_is_cached_once(glove_hub, offline, monkeypatch):
    downloads = glove_hub(GLOVE_TEXT)
    path = data._find_glove(50)
    assert path == offline / "glove" / "glove.6B.50d.txt" and path.read_text() == GLOVE_TEXT
    assert data._find_glove(50) == path and downloads == ["glove.6B.50d.txt"]  # the second call: the cache
    assert [p.name for p in path.parent.iterdir()] == ["glove.6B.50d.txt"]  # no staging left behind


def test_glove_hub_copy_that_differs_is_refused_and_names_it(glove_hub, offline):
    glove_hub(GLOVE_TEXT.replace("cat 0 2", "cat 0 9"))  # one number of the first rows changed
    with pytest.raises(DataNotFoundError) as err:
        data._find_glove(50)
    message = str(err.value)
    for part in ("https://huggingface.co/JeremiahZ/glove", "is not the official glove.6B.50d.txt",
                 "http://127.0.0.1:9/blocked/GloVe", "BERTFLOW_DATA"):
        assert part in message, part
    assert not (offline / "glove" / "glove.6B.50d.txt").exists()
