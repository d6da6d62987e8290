"""bertflow_mini — the small, tested package behind the BERT-flow teaching book.

One idea per module, in folders that are the layers of the pipeline (each imports only the layers
before it; ``lint-imports`` checks it)::

    data/         1  STS12–16, STS-B, SICK-R, GloVe, the pretraining corpus, downloads
    postprocess/  1  whitening and the flow: maps fitted on vectors
    encoders/     2  a model name → weights → sentence vectors (the one name map, the cache, pretraining)
    evaluation/   3  STS scoring, the paper's table, bootstrap, published numbers, baselines
    geometry/     4  isotropy, frequency, degeneration, holes, neighbours, other similarities
    chapters/     5  set-up, figures and the experiments only one chapter needs
    cli/          6  ``python -m bertflow_mini pretrain|sts|reproduce|encode …``

``import bertflow_mini as bf`` gives the names the chapters and the README use (``bf.setup``,
``bf.load_encoder``, ``bf.Whitening``, …), each imported from its module on first use, so importing
the package itself is cheap and touches no network.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: name → the module that defines it (the one place a chapter-facing name is looked up).
_API: dict[str, str] = {
    # chapters: set-up, prose checks, exercises, figures
    "setup": "bertflow_mini.chapters.chapter",
    "claim": "bertflow_mini.chapters.chapter",
    "glue": "bertflow_mini.chapters.chapter",
    "rounded": "bertflow_mini.chapters.chapter",
    "seed_everything": "bertflow_mini.chapters.chapter",
    "COLORS": "bertflow_mini.chapters.plotting",
    "check": "bertflow_mini.chapters.exercises",
    "confirm": "bertflow_mini.chapters.exercises",
    "solution": "bertflow_mini.chapters.exercises",
    "model_strength": "bertflow_mini.chapters.strength",
    "describe_strength": "bertflow_mini.chapters.strength",
    # data
    "TASKS": "bertflow_mini.data",
    "load_sts": "bertflow_mini.data",
    "task_sentences": "bertflow_mini.data",
    "load_glove": "bertflow_mini.data",
    "load_sick_entailment": "bertflow_mini.data.entailment",
    "load_qnli": "bertflow_mini.data.entailment",
    # encoders
    "BOOK_MODEL": "bertflow_mini.encoders",
    "PAPER_MODEL": "bertflow_mini.encoders",
    "CONTRAST_MODEL": "bertflow_mini.encoders",
    "control_of": "bertflow_mini.encoders",
    "load_encoder": "bertflow_mini.encoders",
    "build": "bertflow_mini.encoders",
    "resolve_model": "bertflow_mini.encoders",
    "checkpoints_along_training": "bertflow_mini.encoders",
    "parameter_count": "bertflow_mini.encoders",
    "encode": "bertflow_mini.encoders",
    "encode_layers": "bertflow_mini.encoders",
    "encode_with_dropout": "bertflow_mini.encoders",
    "pooling_grid": "bertflow_mini.encoders",
    "simcse_name": "bertflow_mini.encoders.simcse",
    "simcse_seeds": "bertflow_mini.encoders.names",
    "training_log_of": "bertflow_mini.encoders.names",
    # post-processors
    "Whitening": "bertflow_mini.postprocess.whitening",
    "FlowConfig": "bertflow_mini.postprocess.flow",
    "FlowTransform": "bertflow_mini.postprocess.flow",
    "fit_flow": "bertflow_mini.postprocess.flow",
    # evaluation
    "spearman": "bertflow_mini.evaluation.sts",
    "cosine_scores": "bertflow_mini.evaluation.vectors",
    "score_pairs": "bertflow_mini.evaluation.sts",
    "score_similarities": "bertflow_mini.evaluation.sts",
    "embed_task": "bertflow_mini.evaluation.reproduce",
    "Embedded": "bertflow_mini.evaluation.sts",
    "Evaluation": "bertflow_mini.evaluation.reproduce",
    "default_methods": "bertflow_mini.evaluation.methods",
    "truncated_whitening": "bertflow_mini.evaluation.methods",
    "fitting_sentences": "bertflow_mini.evaluation.reproduce",
    "rows_table": "bertflow_mini.evaluation.reproduce",
    "word_overlap_row": "bertflow_mini.evaluation.reproduce",
    "published_rows": "bertflow_mini.evaluation.reproduce",
    "subset_table": "bertflow_mini.evaluation.sts",
    "published_table": "bertflow_mini.evaluation.published",
    "paired_bootstrap": "bertflow_mini.evaluation.bootstrap",
    "average_difference": "bertflow_mini.evaluation.bootstrap",
    "LEXICAL_TABLE6": "bertflow_mini.evaluation.published",
    "lexical_table": "bertflow_mini.evaluation.lexical",
    "word_edit_distances": "bertflow_mini.evaluation.lexical",
    # the shipped measurements, and what pretraining earns
    "CONTROLS_FILE": "bertflow_mini.evaluation.measured",
    "PRETRAIN_SEEDS_FILE": "bertflow_mini.evaluation.measured",
    "SCALE_FILE": "bertflow_mini.evaluation.measured",
    "colab_minutes": "bertflow_mini.evaluation.measured",
    "controls_table": "bertflow_mini.evaluation.measured",
    "earned_table": "bertflow_mini.evaluation.measured",
    "pretrain_seeds": "bertflow_mini.evaluation.measured",
    "scale_curve": "bertflow_mini.evaluation.measured",
    "control_summary": "bertflow_mini.evaluation.controls",
    "pretrain_seed_spread": "bertflow_mini.evaluation.controls",
    "earned": "bertflow_mini.evaluation.earned",
    "SHAPE_OF": "bertflow_mini.evaluation.earned",
    "earned_live": "bertflow_mini.evaluation.earned",
    "scale_gaps": "bertflow_mini.evaluation.scale",
    "step_zero": "bertflow_mini.evaluation.scale",
    "harness_spread": "bertflow_mini.evaluation.harness",
    "beyond_harness": "bertflow_mini.evaluation.harness",
    "plot_earned": "bertflow_mini.chapters.plotting",
    "plot_scale_curve": "bertflow_mini.chapters.plotting",
    "plot_scale_gaps": "bertflow_mini.chapters.plotting",
}

__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    """``bf.NAME``: import NAME from its module (see :data:`_API`) the first time it is used."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'bertflow_mini' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
