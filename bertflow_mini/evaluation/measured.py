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
* ``colab-budget.json``  each chapter's work with bert-base-uncased, counted in the
  simulated Colab run and turned into minutes on a T4 and on Colab's CPU
  (``benchmarks/bench_colab.py``): :func:`colab_budget`
"""

from __future__ import annotations

import io
import json
from importlib.resources import files
from importlib.resources.abc import Traversable
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "COLAB_BUDGET_FILE",
    "CONTROLS_FILE",
    "DICTIONARY_SEEDS_FILE",
    "EARNED_FILE",
    "PRETRAIN_SEEDS_FILE",
    "RESULTS",
    "SCALE_FILE",
    "colab_budget",
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
#: The Colab budget per chapter (``benchmarks/bench_colab.py``).
COLAB_BUDGET_FILE = RESULTS / "colab-budget.json"

Source = str | PathLike | Traversable


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


def read_json(source: Source, what: str) -> dict:
    """The JSON object in ``source``; ``what`` names it (and its writer) in the error if
    missing."""
    return json.loads(_read_text(source, what))


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


def pretrain_seeds(source: Source = PRETRAIN_SEEDS_FILE) -> dict:
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


def colab_budget(source: Source = COLAB_BUDGET_FILE) -> pd.DataFrame:
    """One row per chapter, indexed by its two-digit number: the work a Colab reader's
    run does with bert-base-uncased (tokens through a bert-base-shaped network, flow
    fits at 768 wide, checkpoints downloaded) and the minutes it is estimated to take
    on a T4 and on Colab's CPU, from the counts and the rates measured beside them, and
    on Colab's CPU for a quick run (``bf.setup(quick=True)``). ``table.attrs`` holds
    those rates (``throughput``), the assumptions (``assumed``), the goals
    (``budget_s``), the quick run's cap (``quick``: ``pairs`` per split) and, per chapter,
    the quick run's minutes of other work counted on narrower stand-in networks
    (``quick_lower_bound_min``: a lower bound on that part)."""
    data = read_json(source, "the Colab budget (benchmarks/bench_colab.py)")
    rows = {
        number: {
            "bert-base tokens (M)": c["bert_base_tokens"] / 1e6,
            "768-wide flow fits": c["fits_768"],
            "download (GB)": c["gb"],
            "T4 (min)": c["t4_s"]["total"] / 60,
            "Colab CPU (min)": c["cpu_s"]["total"] / 60,
            "quick CPU (min)": c["quick_cpu_s"]["total"] / 60,
        }
        for number, c in data["chapters"].items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("chapter")
    minutes = table[["T4 (min)", "Colab CPU (min)", "quick CPU (min)"]].to_numpy(
        np.float64
    )
    if not np.isfinite(minutes).all() or (minutes < 0).any():
        raise ValueError(f"{source}: a chapter's minutes are NaN, infinite or negative")
    goals = data["budget_s"]
    table["meets T4 goal"] = table["T4 (min)"] <= goals["gpu"] / 60
    table["meets CPU goal"] = table["Colab CPU (min)"] <= goals["cpu"] / 60
    table = table.sort_index()
    table.attrs = {k: data[k] for k in ("throughput", "assumed", "budget_s", "quick")}
    table.attrs["quick_lower_bound_min"] = {
        number: c["quick_cpu_s"]["other"] / 60 for number, c in data["chapters"].items()
    }
    return table
