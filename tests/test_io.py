"""Atomic writes: all or nothing, with ordinary permissions."""
from __future__ import annotations

import os
import stat

import pytest

from bertflow_mini._io import atomic_path, cache_dir


def test_atomic_path_replaces_whole_and_keeps_the_mode(tmp_path):
    target = tmp_path / "chapter.ipynb"
    target.write_text("old")
    os.chmod(target, 0o644)
    with atomic_path(target) as tmp:
        tmp.write_text("new")
        assert target.read_text() == "old"  # readers still see the old file mid-write
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["chapter.ipynb"]


def test_atomic_path_leaves_target_untouched_on_error(tmp_path):
    target = tmp_path / "cache.npy"
    target.write_text("good")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert target.read_text() == "good" and os.listdir(tmp_path) == ["cache.npy"]


def test_new_files_are_not_private(tmp_path):
    with atomic_path(tmp_path / "new.txt") as tmp:
        tmp.write_text("x")
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) & 0o044  # group/others may read


def test_cache_dir_honours_the_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "c"))
    assert cache_dir("embeddings") == tmp_path / "c" / "embeddings" and (tmp_path / "c" / "embeddings").is_dir()
