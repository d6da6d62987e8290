"""bertflow_mini.data.checksums: every digest recomputed from ../shared's files (WordNet's content
digests: tests/data/test_wordnet.py)."""

from __future__ import annotations

import gzip
import hashlib

from bertflow_mini.data.checksums import FILES
from bertflow_mini.data.layout import SOURCES


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_every_digest_is_that_of_the_mirrors_file(mirror):
    for key, digest in FILES.items():
        path = mirror / key
        data = (
            path.read_bytes()
            if path.is_file()
            else gzip.decompress((mirror / f"{key}.gz").read_bytes())
        )
        assert _digest(data) == digest, key


def test_every_file_a_download_is_checked_against_has_a_digest():
    needed = {
        f"{s.target}/{f}" for s in SOURCES.values() if s.check is None for f in s.files
    }
    assert needed == set(FILES)
