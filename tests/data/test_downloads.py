"""bertflow_mini.data.downloads: archives built here from ../shared's files (file:// URLs, through
pooch), unpacked, checked file by file, moved into place in one step; broken or altered downloads
refused without leaving a folder behind. Never the network."""

from __future__ import annotations

import gzip
import os
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bertflow_mini.data import DataNotFoundError, downloads, load_sts
from bertflow_mini.data.layout import SOURCES, data_root
from data.conftest import STSB_LINE, zip_folder


def _serve(monkeypatch, key: str, archive: Path) -> None:
    monkeypatch.setitem(downloads.URLS, key, archive.as_uri())


def _sts12_zip(mirror: Path, tmp_path: Path, only=None) -> Path:
    return zip_folder(
        mirror / "sts" / "STS12", tmp_path / "STS2012-en-test.zip", "test-gold", only
    )


def test_download_sts_zip_gives_the_mirrors_pairs_and_is_cached(
    mirror, tmp_path, offline, monkeypatch
):
    want = load_sts("STS12", root=mirror)
    _serve(monkeypatch, "STS12", _sts12_zip(mirror, tmp_path))
    got = load_sts("STS12")
    assert (got.sent1, got.sent2, got.subsets) == (want.sent1, want.sent2, want.subsets)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert data_root(need="sts/STS12") == offline
    assert (
        offline / "sts" / "STS12" / "00-readme.txt"
    ).is_file()  # the archive's other files too
    # no staging folder left
    assert [p.name for p in (offline / "sts").iterdir()] == ["STS12"]
    monkeypatch.setitem(downloads.URLS, "STS12", "http://127.0.0.1:9/gone.zip")
    # the second call reads the cache, no download
    assert len(load_sts("STS12")) == 3108


def test_download_stsb_tar_and_three_sick_zips(mirror, tmp_path, offline, monkeypatch):
    want_b, want_s = (
        load_sts("STSB", "test", root=mirror),
        load_sts("SICK-R", "trial", root=mirror),
    )
    with tarfile.open(tmp_path / "Stsbenchmark.tar.gz", "w:gz") as tf:
        tf.add(mirror / "sts" / "STSBenchmark", arcname="stsbenchmark")
    _serve(monkeypatch, "STSB", tmp_path / "Stsbenchmark.tar.gz")
    assert load_sts("STSB", "test").sent1 == want_b.sent1
    for key, name in [("SICK-train", "SICK_train.txt"), ("SICK-trial", "SICK_trial.txt"),
                      ("SICK-test", "SICK_test_annotated.txt")]:  # fmt: skip
        with zipfile.ZipFile(tmp_path / f"{key}.zip", "w") as zf:
            zf.write(mirror / "sick" / name, name)
        _serve(monkeypatch, key, tmp_path / f"{key}.zip")
    got = load_sts("SICK-R", "trial")
    assert (got.sent1, got.scores.tolist()) == (want_s.sent1, want_s.scores.tolist())
    assert sorted(p.name for p in (offline / "sick").iterdir()) == sorted(
        SOURCES["SICK-R"].files
    )


def _corrupt(mirror: Path, tmp_path: Path, how: str) -> Path:
    good = _sts12_zip(mirror, tmp_path)
    bad = tmp_path / f"{how}.zip"
    raw = good.read_bytes()
    if how == "garbage":
        bad.write_bytes(b"<html>503 Service Unavailable</html>")
    elif how == "truncated":  # an interrupted download
        bad.write_bytes(raw[: len(raw) // 2])
    elif how == "bitflip":  # damaged data inside a member: the CRC check must notice
        with zipfile.ZipFile(good) as zf:
            info = zf.getinfo("test-gold/STS.input.MSRpar.txt")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 2
        bad.write_bytes(raw[:start] + bytes([raw[start] ^ 0xFF]) + raw[start + 1 :])
    elif how == "incomplete":  # a whole zip, but without one of the expected files
        names = [
            p.name
            for p in (mirror / "sts" / "STS12").iterdir()
            if "MSRvid" not in p.name
        ]
        return _sts12_zip(mirror, tmp_path, only=names)
    elif how == "altered":  # a whole zip with every file, one not the official one
        with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
            for name in src.namelist():
                data = src.read(name)
                if "gs.MSRpar" in name:  # its first gold score changed
                    data = (b"4" if data[:1] == b"5" else b"5") + data[1:]
                dst.writestr(name, data)
    return bad


@pytest.mark.parametrize(
    "how,why",
    [("garbage", "neither a zip nor a tar"), ("truncated", "neither a zip"),
     ("bitflip", "(BadZipFile|error)"), ("incomplete", "lacks STS.input.MSRvid.txt"),
     ("altered", "STS.gs.MSRpar.txt is not the official file .its SHA-256")],
)  # fmt: skip
def test_bad_archive_raises_why_and_leaves_no_folder(
    mirror, tmp_path, offline, monkeypatch, how, why
):
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    archive = _corrupt(mirror, tmp_path, how)
    _serve(monkeypatch, "STS12", archive)
    with pytest.raises(
        DataNotFoundError, match=f"downloading {archive.as_uri()} failed.*{why}"
    ):
        load_sts("STS12")
    # no half-filled staging folder either
    assert list((offline / "sts").iterdir()) == []


def test_truncated_tar_raises_and_leaves_no_folder(tmp_path, offline, monkeypatch):
    src = tmp_path / "stsbenchmark"
    src.mkdir()
    # incompressible text: half the .tar.gz misses members
    for split in (
        "train",
        "dev",
        "test",
    ):
        lines = (
            STSB_LINE.format(score=3).replace("0012", os.urandom(8).hex())
            for _ in range(300)
        )
        (src / f"sts-{split}.csv").write_text("".join(lines), encoding="utf-8")
    with tarfile.open(tmp_path / "full.tar.gz", "w:gz") as tf:
        tf.add(src, arcname="stsbenchmark")
    raw = (tmp_path / "full.tar.gz").read_bytes()
    (tmp_path / "Stsbenchmark.tar.gz").write_bytes(raw[: len(raw) // 2])
    _serve(monkeypatch, "STSB", tmp_path / "Stsbenchmark.tar.gz")
    with pytest.raises(DataNotFoundError, match="Stsbenchmark.tar.gz"):
        load_sts("STSB", "test")
    assert list((offline / "sts").iterdir()) == []


def _wordnet_archives(mirror: Path, tmp_path: Path, alter_nltk: bool) -> None:
    """NLTK's wordnet.zip (``wordnet/data.*``) and Princeton's tar (``WordNet-3.0/dict/data.*``)
    holding the mirror's files; NLTK's with one byte changed when ``alter_nltk``."""
    plain = {}
    for name in SOURCES["WordNet"].files:
        plain[name] = gzip.decompress((mirror / "wordnet" / f"{name}.gz").read_bytes())
    with zipfile.ZipFile(tmp_path / "wordnet.zip", "w") as zf:
        for name, data in plain.items():
            changed = alter_nltk and name == "data.adv"
            zf.writestr(f"wordnet/{name}", data[:-2] + b"X\n" if changed else data)
    with tarfile.open(
        tmp_path / "WordNet-3.0.tar.gz", "w"
    ) as tf:  # (a tar, uncompressed: quick)
        for name in plain:
            # a member outside dict/ is ignored
            tf.add(tmp_path / "wordnet.zip", arcname="unused")
            break
        folder = tmp_path / "princeton"
        folder.mkdir()
        for name, data in plain.items():
            (folder / name).write_bytes(data)
            tf.add(folder / name, arcname=f"WordNet-3.0/dict/{name}")


@pytest.mark.parametrize("alter_nltk", [False, True])
def test_wordnet_from_nltk_else_princeton_checked_file_by_file(mirror, tmp_path, offline,
                                                               monkeypatch, alter_nltk):  # fmt: skip
    _wordnet_archives(mirror, tmp_path, alter_nltk)
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    _serve(monkeypatch, "WordNet-NLTK", tmp_path / "wordnet.zip")
    _serve(monkeypatch, "WordNet", tmp_path / "WordNet-3.0.tar.gz")
    downloaded = []
    real = downloads.download
    monkeypatch.setattr(
        downloads, "download", lambda url, *a: downloaded.append(url) or real(url, *a)
    )
    assert data_root(need="wordnet") == offline
    for name in SOURCES["WordNet"].files:
        want = gzip.decompress((mirror / "wordnet" / f"{name}.gz").read_bytes())
        assert (offline / "wordnet" / name).read_bytes() == want, name
    nltk, princeton = (
        (tmp_path / "wordnet.zip").as_uri(),
        (tmp_path / "WordNet-3.0.tar.gz").as_uri(),
    )
    assert downloaded == ([nltk, princeton] if alter_nltk else [nltk])


def test_wordnet_when_both_sources_fail_names_both(tmp_path, offline):
    with pytest.raises(DataNotFoundError) as err:
        data_root(need="wordnet")
    for part in (
        "blocked/WordNet-NLTK",
        "blocked/WordNet",
        "$BERTFLOW_DATA",
        "ConnectionError",
    ):
        assert part in str(err.value), part


def test_pooch_checks_a_known_hash(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    into = tmp_path / "into"
    got = downloads.download(
        (tmp_path / "a.txt").as_uri(), into, downloads.sha256(tmp_path / "a.txt")
    )
    assert got.read_text() == "hello\n"
    with pytest.raises(ValueError, match="SHA256"):
        downloads.download(
            (tmp_path / "a.txt").as_uri(), tmp_path / "other", "sha256:" + "0" * 64
        )


def test_no_network_at_import():
    """Importing the data layer opens no connection: a socket opened at import would fail here."""
    import subprocess
    import sys

    code = (
        "import socket\n"
        "def refuse(*a, **k): raise AssertionError('network at import')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "import bertflow_mini.data, bertflow_mini.data.corpus\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------- the hub probe
# data/conftest.py replaces downloads.hub_reachable for every test: these test the real one.
REAL_HUB_REACHABLE = downloads.hub_reachable
REAL_IN_COLAB = downloads.in_colab


@pytest.fixture
def probes(monkeypatch):
    """Probes answered from a script (True: the connection opens, False: it fails), counted, on a
    clock the test moves; outside Colab; no answer remembered from before the test."""
    script: list[bool] = []
    clock = [1000.0]
    count = [0]

    class _Connection:
        def close(self) -> None:
            pass

    def connect(_address, timeout):
        count[0] += 1
        if not script.pop(0):
            raise OSError("network is unreachable")
        return _Connection()

    monkeypatch.setattr(downloads.socket, "create_connection", connect)
    monkeypatch.setattr(downloads.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(downloads, "in_colab", lambda: False)
    downloads.forget_hub_probes()
    yield script, clock, count
    downloads.forget_hub_probes()


def test_a_failed_probe_is_tried_again_after_the_back_off(probes):
    script, clock, count = probes
    script += [False, True]
    assert REAL_HUB_REACHABLE() is False
    # within the back-off: no new probe, the same answer
    clock[0] += downloads.PROBE_BACKOFF_S / 2
    assert (REAL_HUB_REACHABLE(), count[0]) == (False, 1)
    # after it: probed again, and the hub answers
    clock[0] += downloads.PROBE_BACKOFF_S
    assert (REAL_HUB_REACHABLE(), count[0]) == (True, 2)


def test_a_successful_probe_is_remembered_for_the_process(probes):
    script, clock, count = probes
    script += [True]
    assert REAL_HUB_REACHABLE() is True
    clock[0] += 10 * downloads.PROBE_BACKOFF_S
    # no second probe (the script is empty: one would fail the test with an IndexError)
    assert (REAL_HUB_REACHABLE(), REAL_HUB_REACHABLE(), count[0]) == (True, True, 1)


def test_in_colab_the_hub_counts_as_reachable_without_a_probe(probes, monkeypatch):
    import sys
    import types

    _, _, count = probes
    # the real in_colab, and google.colab imported (as Colab's kernel does at start)
    monkeypatch.setattr(downloads, "in_colab", REAL_IN_COLAB)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert downloads.in_colab() is True
    assert REAL_HUB_REACHABLE() is True and count[0] == 0


def test_hub_reachable_tells_an_open_port_from_a_closed_one(monkeypatch):
    """Real sockets: a listening local port is reachable; once closed, a fresh probe says no."""
    import socket

    monkeypatch.setattr(downloads, "in_colab", lambda: False)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    downloads.forget_hub_probes()
    assert REAL_HUB_REACHABLE("127.0.0.1", port=port, timeout=1.0) is True
    server.close()
    # a success is remembered
    assert REAL_HUB_REACHABLE("127.0.0.1", port=port, timeout=1.0) is True
    downloads.forget_hub_probes()
    assert REAL_HUB_REACHABLE("127.0.0.1", port=port, timeout=1.0) is False
    downloads.forget_hub_probes()


def test_a_bug_in_a_route_surfaces_instead_of_trying_the_next(tmp_path, monkeypatch):
    """A route that fails as a download fails (OSError, a bad archive) passes to the next; a
    programming error inside one (here a TypeError from its check) is not a failed download."""
    from dataclasses import replace

    source = SOURCES["STS12"]
    calls = []

    def broken(route, staging):
        calls.append(route)
        raise TypeError("a bug")

    monkeypatch.setattr(downloads, "_unpacked", broken)
    with pytest.raises(TypeError, match="a bug"):
        downloads.install(replace(source, routes=source.routes * 2), tmp_path)
    assert len(calls) == 1

    def unreachable(route, staging):
        calls.append(route)
        raise OSError("unreachable")

    calls.clear()
    monkeypatch.setattr(downloads, "_unpacked", unreachable)
    with pytest.raises(OSError, match="unreachable.*unreachable"):
        downloads.install(replace(source, routes=source.routes * 2), tmp_path)
    assert len(calls) == 2
