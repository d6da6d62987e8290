"""Atomic writes: all or nothing, with ordinary permissions."""

from __future__ import annotations

import os
import stat

import pytest

from bertflow_mini._io import atomic_dir, atomic_path, cache_dir


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


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_get_the_mode_open_would_give_them(tmp_path, umask):
    # The oracle: a file created by a plain open() under the same umask (mkstemp's would be 0600).
    before = os.umask(umask)
    try:
        (tmp_path / "plain.txt").write_text("x")
        with atomic_path(tmp_path / "new.txt") as tmp:
            tmp.write_text("x")
    finally:
        os.umask(before)
    mode = stat.S_IMODE((tmp_path / "new.txt").stat().st_mode)
    assert (
        mode == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode) == 0o666 & ~umask
    )


def test_cache_dir_honours_the_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "c"))
    assert (
        cache_dir("embeddings") == tmp_path / "c" / "embeddings"
        and (tmp_path / "c" / "embeddings").is_dir()
    )


def test_a_folder_published_first_is_kept_whole_and_the_later_one_dropped(tmp_path):
    """Two writers of the same run: the one that finishes first wins; the other's files are not
    merged into it and its staging folder disappears, without an error."""
    target = tmp_path / "run"
    with atomic_dir(target) as slow:
        (slow / "weights").write_text("slow")
        (slow / "only-slow").write_text("x")
        with atomic_dir(target) as fast:
            (fast / "weights").write_text("fast")
        assert (target / "weights").read_text() == "fast"
    assert sorted(p.name for p in target.iterdir()) == ["weights"]
    assert (target / "weights").read_text() == "fast"
    assert os.listdir(tmp_path) == ["run"]


def test_a_failed_folder_write_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "run") as staging:
            (staging / "half").write_text("x")
            raise RuntimeError("crash")
    assert os.listdir(tmp_path) == []
