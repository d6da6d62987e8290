"""Fixtures for the data layer's tests: no network ever, the real mirror, an empty offline cache,
and small files in the official formats."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from bertflow_mini.data import GloVe, downloads, load_glove
from bertflow_mini.data.pairs import MAX_PAIRS_ENV, STS_SUBSETS

MIRROR = Path(
    os.environ.get("BERTFLOW_DATA")
    or Path(__file__).resolve().parents[3] / "shared" / "data"
)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """No test may reach the internet: every official URL points at a closed local port, the hub
    is unreachable (a test serves a fixture by patching ``downloads.hub_download``), and no test
    may set the subset cap by accident."""
    for key in downloads.URLS:
        monkeypatch.setitem(downloads.URLS, key, f"http://127.0.0.1:9/blocked/{key}")
    monkeypatch.setattr(downloads, "hub_reachable", lambda *a, **k: False)
    monkeypatch.delenv(MAX_PAIRS_ENV, raising=False)


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


def write_sts_year(folder: Path, task: str = "STS12", n: int = 3) -> Path:
    """A fake STS year: every subset with ``n`` pairs scored 0.5, 1.5, …"""
    folder.mkdir(parents=True, exist_ok=True)
    prefix = "STS2016" if task == "STS16" else "STS"
    for subset in STS_SUBSETS[task]:
        (folder / f"{prefix}.input.{subset}.txt").write_text(
            "".join(f"{subset} a {i}\t{subset} b {i}\n" for i in range(n)),
            encoding="utf-8",
        )
        (folder / f"{prefix}.gs.{subset}.txt").write_text(
            "".join(f"{i + 0.5}\n" for i in range(n)), encoding="utf-8"
        )
    return folder


STSB_LINE = "main-news\theadlines\t2016\t0012\t{score}\tSaid \"hi\" to her\tSaid 'hi'\n"
SICK_HEADER = (
    "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
)


def write_sick(folder: Path, newline: str = "\n", score: str = "4.5") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    body = SICK_HEADER + (
        f"1\tA dog runs\tA dog is running\t{score}\tENTAILMENT\n2\tA cat\tNo cat\t1\tCONTRADICTION\n"
    )
    for name in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"):
        (folder / name).write_bytes(body.replace("\n", newline).encode("utf-8"))


def zip_folder(folder: Path, archive: Path, arcroot: str, only=None) -> Path:
    """``folder``'s files (or those named in ``only``) zipped under ``arcroot``."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.iterdir()):
            if only is None or f.name in only:
                zf.write(f, f"{arcroot}/{f.name}" if arcroot else f.name)
    return archive


@pytest.fixture(scope="module")
def real_glove() -> GloVe:
    from conftest import need

    path = MIRROR / "glove" / "glove.6B.50d.subset.txt.gz"
    need(path)
    return load_glove(path)
