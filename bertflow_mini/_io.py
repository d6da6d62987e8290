"""Where the package keeps files, and how it writes them: atomically, so a crash never leaves half a file."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def cache_dir(*parts: str) -> Path:
    """The user cache, ``$BERTFLOW_CACHE`` or ``~/.cache/bertflow_mini``, with ``parts`` appended (created)."""
    root = Path(os.environ.get("BERTFLOW_CACHE") or Path.home() / ".cache" / "bertflow_mini")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it is renamed onto ``target`` in one step.

    Readers see either the old file or the complete new one, never a partial write; on an
    exception the temporary file is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates the file private (0600); give it the target's mode, or the usual one
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~umask)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
