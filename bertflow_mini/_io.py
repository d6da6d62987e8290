"""Where the package keeps files, and how it writes them: atomically, so a crash never leaves half a file."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """The user cache, ``$BERTFLOW_CACHE`` or ``~/.cache/bertflow_mini``, with ``parts`` appended (created)."""
    root = Path(
        os.environ.get("BERTFLOW_CACHE") or Path.home() / ".cache" / "bertflow_mini"
    )
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it is renamed onto ``target`` in one step.

    Readers see either the old file or the complete new one, never a partial write; on an
    exception the temporary file is removed and ``target`` is left as it was. The new file gets
    the target's mode, or the one ``open`` would give it (the kernel applies the umask).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        tmp_path = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name beside {target}")
    try:
        yield tmp_path
        if target.exists():
            os.chmod(tmp_path, target.stat().st_mode & 0o777)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextmanager
def atomic_dir(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder beside ``target``; on success it is renamed onto ``target``.

    The folder appears complete or not at all. When ``target`` already exists on success (another
    process finished the same work first), theirs is kept and the staging folder is discarded; on
    an exception the staging folder is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(
        tempfile.mkdtemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".partial"
        )
    )
    try:
        yield staging
        try:
            # one step: rename(2) onto an existing non-empty folder fails, never merges
            os.rename(staging, target)
        except OSError as error:
            if (
                error.errno not in (errno.EEXIST, errno.ENOTEMPTY)
                or not target.is_dir()
            ):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
