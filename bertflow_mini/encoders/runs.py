"""The cache of trained artefacts: a config's hash names its folder, which is written atomically.

Pretraining (``scratch-bert-<key>``), SimCSE (``<base>+simcse-<key>``) and the random-init controls
(``<base>@0-seed<k>-<key>``) all keep their runs this way, so a changed config is never served a
stale model and a crash never leaves half a folder.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

from bertflow_mini._io import cache_dir


class NotBuiltError(OSError):
    """A model made on this machine (pretrained, fine-tuned, initialised) is not built yet.

    Not a ``FileNotFoundError``: code that falls back when a file is absent must not fall back
    silently for a model that only needs building."""


def run_key(payload: object) -> str:
    """Twelve hex digits of the SHA-256 of ``payload`` as sorted JSON: what names a run's folder."""
    text = json.dumps(payload, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_folder(prefix: str, payload: object, suffix: str = "") -> Path:
    """``<cache>/models/<prefix>-<run_key(payload)><suffix>``, whether or not it exists yet."""
    return cache_dir("models") / f"{prefix}-{run_key(payload)}{suffix}"


def write_run_log(
    folder: Path,
    facts_file: str,
    facts: dict[str, Any],
    rows: list[dict[str, Any]] | None = None,
) -> None:
    """Write a run's facts (``facts_file``, JSON) and, when given, its curve (``training_log.csv``,
    one row per dict, columns in the first row's order) into ``folder``."""
    if rows:
        with open(folder / "training_log.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    (folder / facts_file).write_text(json.dumps(facts, indent=2) + "\n")
