"""bertflow_mini.data.layout: where loaders look, in which order, and the error when nothing is
found (the env var, every path looked in, the URLs)."""

from __future__ import annotations

import pytest

from bertflow_mini.data import DataNotFoundError, downloads, load_sts
from bertflow_mini.data.layout import SOURCES, data_root
from data.conftest import write_sts_year


def test_explicit_root_without_data_names_the_path_env_var_and_url(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_sts("STS14", root=tmp_path)
    for part in (
        str(tmp_path / "sts" / "STS14"),
        "$BERTFLOW_DATA",
        downloads.URLS["STS14"],
    ):
        assert part in str(err.value), part


def test_a_file_missing_from_a_found_folder_names_it_the_env_var_and_url(
    tmp_path, monkeypatch
):
    folder = write_sts_year(tmp_path / "sts" / "STS15", "STS15")
    (folder / "STS.gs.belief.txt").unlink()  # e.g. a copy interrupted half-way
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError) as err:
        load_sts("STS15")
    want = (
        str(folder / "STS.gs.belief.txt"),
        f"$BERTFLOW_DATA is {tmp_path}",
        downloads.URLS["STS15"],
    )
    for part in want:
        assert part in str(err.value), part


def test_offline_error_names_env_var_paths_url_and_the_failure(offline):
    with pytest.raises(FileNotFoundError) as err:
        load_sts("STS15")
    message = str(err.value)
    for part in ("BERTFLOW_DATA", str(offline.parent.parent / "empty" / "sts" / "STS15"),
                 str(offline / "sts" / "STS15"), "http://127.0.0.1:9/blocked/STS15",
                 "ConnectionError"):  # fmt: skip
        assert part in message, part


def test_env_folder_wins_and_one_without_the_subfolder_is_skipped(
    tmp_path, monkeypatch
):
    write_sts_year(tmp_path / "env" / "sts" / "STS13", "STS13")
    write_sts_year(tmp_path / "cache" / "data" / "sts" / "STS13", "STS13", n=2)
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    assert (
        data_root(need="sts/STS13") == tmp_path / "env" and len(load_sts("STS13")) == 9
    )
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "elsewhere"))
    assert data_root(need="sts/STS13") == tmp_path / "cache" / "data"
    assert len(load_sts("STS13")) == 6
    with pytest.raises(ValueError, match="not part of the data layout"):
        data_root(need="squad")


def test_every_source_file_is_in_the_mirror(mirror):
    """The layout's file lists name real files: each is where ../shared/data has it (WordNet's
    gzipped there)."""
    for key, source in SOURCES.items():
        if key == "QNLI":  # not mirrored
            continue
        for name in source.files:
            path = mirror / source.target / name
            assert path.is_file() or path.with_name(name + ".gz").is_file(), path
