"""The measurements behind the book, shipped with the package and read from it.

The experiments (``experiments/`` in the repository; each file says which) write
their results into this package's ``results/`` folder, so a pip install carries them
and a chapter reads them through :mod:`importlib.resources`, never through a path
into a checkout:

* ``controls.json``  random-init controls at every BERT shape, init seed and
  initialiser, and the no-semantics baselines (``experiments/controls.py``):
  :func:`controls_table`
* ``earned.csv``  what pretraining earns, both scales (``experiments/controls.py
  --earned``): :func:`earned_table`
* ``pretrain-seeds.json``  scratch-bert pretrained with several seeds
  (``experiments/scratch_bert.py --seeds 3``): :func:`pretrain_seeds`; the corpus
  ablation's seeds (``--set corpus=dictionary+sts``) are
  ``pretrain-seeds-dictionary.json``
* ``scale.json``  scratch-bert's scale curve (``experiments/scale_curve.py``):
  :func:`scale_curve`
* ``colab-minutes.json``  each chapter's Colab edition timed as a reader runs it on the
  book's model, in the simulated Colab runtime (``benchmarks/bench_colab.py``):
  :func:`colab_minutes`
"""

from __future__ import annotations

import io
import json
from importlib.resources import files
from importlib.resources.abc import Traversable
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "COLAB_MINUTES_FILE",
    "CONTROLS_FILE",
    "DICTIONARY_SEEDS_FILE",
    "EARNED_FILE",
    "PRETRAIN_SEEDS_FILE",
    "RESULTS",
    "SCALE_FILE",
    "colab_minutes",
    "controls_table",
    "earned_table",
    "is_file",
    "pretrain_seeds",
    "read_json",
    "scale_curve",
]

#: The shipped results folder (package data).
RESULTS: Traversable = files("bertflow_mini.evaluation") / "results"
#: The random-init controls and baselines (``experiments/controls.py``).
CONTROLS_FILE = RESULTS / "controls.json"
#: What pretraining earns, both scales (``experiments/controls.py --earned``).
EARNED_FILE = RESULTS / "earned.csv"
#: scratch-bert's pretraining seeds (``experiments/scratch_bert.py --seeds 3``).
PRETRAIN_SEEDS_FILE = RESULTS / "pretrain-seeds.json"
#: The same seeds on the dictionary+sts corpus: the corpus ablation.
DICTIONARY_SEEDS_FILE = RESULTS / "pretrain-seeds-dictionary.json"
#: scratch-bert's scale curve (``experiments/scale_curve.py``).
SCALE_FILE = RESULTS / "scale.json"
#: Each chapter's minutes in the simulated Colab runtime (``benchmarks/bench_colab.py``).
COLAB_MINUTES_FILE = RESULTS / "colab-minutes.json"

Source = str | PathLike[str] | Traversable


def _as_file(source: Source) -> Traversable | Path:
    return Path(source) if isinstance(source, (str, PathLike)) else source


def is_file(source: Source) -> bool:
    """Whether ``source`` (a path or a shipped resource) is a file."""
    return _as_file(source).is_file()


def _read_text(source: Source, what: str) -> str:
    file = _as_file(source)
    if not file.is_file():
        raise FileNotFoundError(
            f"{source} is missing: {what}. The package ships it (reinstall "
            "bertflow_mini), or pass live=True where the function offers it"
        )
    return file.read_text(encoding="utf-8")


def read_json(source: Source, what: str) -> dict[str, Any]:
    """The JSON object in ``source``; ``what`` names it (and its writer) in the error if
    missing."""
    data: dict[str, Any] = json.loads(_read_text(source, what))
    return data


def _finite_scores(table: pd.DataFrame, source: Source) -> pd.DataFrame:
    if not table.empty and not np.isfinite(table["score"].to_numpy(np.float64)).all():
        raise ValueError(f"{source}: a score is NaN or infinite")
    return table


def controls_table(source: Source = CONTROLS_FILE) -> pd.DataFrame:
    """The controls' scores, one row per (shape, init, seed, pooling, method, task)."""
    what = "the random-init controls (experiments/controls.py)"
    return _finite_scores(pd.DataFrame(read_json(source, what)["records"]), source)


def scale_curve(source: Source = SCALE_FILE) -> pd.DataFrame:
    """The scale curve's scores, one row per (run, seed, checkpoint, pooling, method,
    task); ``checkpoint`` is ``pct-100`` (the trained model) or ``pct-000`` (its
    random initialisation)."""
    what = "scratch-bert's scale curve (experiments/scale_curve.py)"
    return _finite_scores(pd.DataFrame(read_json(source, what)["records"]), source)


def pretrain_seeds(source: Source = PRETRAIN_SEEDS_FILE) -> dict[str, Any]:
    """scratch-bert's pretraining seeds: ``{"what", "command", "recipe_key_seed0",
    "seeds"}``, where ``seeds[s][pooling][method]`` holds ``STSB`` and ``Avg.``
    (Spearman × 100) and each seed's ``held_out_loss``. ``DICTIONARY_SEEDS_FILE``
    gives the corpus ablation's seeds."""
    return read_json(
        source, "scratch-bert's pretraining seeds (experiments/scratch_bert.py)"
    )


def earned_table(source: Source = EARNED_FILE) -> pd.DataFrame:
    """What pretraining earns as written by ``experiments/controls.py --earned`` (its
    first line, the command, is a ``#`` comment): the columns of
    :data:`earned.COLUMNS`."""
    text = _read_text(
        source, "what pretraining earns (experiments/controls.py --earned)"
    )
    return pd.read_csv(io.StringIO(text), skiprows=1 if text.startswith("#") else 0)


def colab_minutes(source: Source = COLAB_MINUTES_FILE) -> pd.Series:
    """Each chapter's wall-clock minutes as a Colab reader runs it on the book's model, indexed by
    its two-digit number; ``attrs["machine"]`` says on which CPU and how many cores."""
    data = read_json(source, "the chapters' Colab minutes (benchmarks/bench_colab.py)")
    minutes = pd.Series(data["chapters"], name="minutes", dtype=float).rename_axis(
        "chapter"
    )
    if not np.isfinite(minutes).all() or (minutes <= 0).any():
        raise ValueError(
            f"{source}: a chapter's minutes are NaN, infinite or not positive"
        )
    minutes.attrs = {"machine": data["machine"]}
    return minutes.sort_index()
