"""What pretraining earns: a pretrained model's STS score minus its random-initialisation control,
one tidy table the chapters share (a row per checkpoint, pooling, method and dataset, + ``Avg.``).

For ``bert-base-uncased`` the pretrained side is the papers' published rows and the control is ours
(init seeds 0–2, shipped in :mod:`~bertflow_mini.evaluation.measured`; ``live=True`` recomputes it),
so there is no paired bootstrap; for any other model (``scratch-bert``) both sides are ours and a
paired bootstrap over the test pairs (:mod:`~bertflow_mini.evaluation.bootstrap`) gives the interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.data.pairs import canonical_task
from bertflow_mini.evaluation.bootstrap import percentile_interval, resampled_scores
from bertflow_mini.evaluation.controls import control_summary, pretrain_seed_spread
from bertflow_mini.evaluation.measured import (
    CONTROLS_FILE,
    PRETRAIN_SEEDS_FILE,
    Source,
    is_file,
)
from bertflow_mini.evaluation.published import PUBLISHED
from bertflow_mini.evaluation.sts import AVG, task_average

if TYPE_CHECKING:
    from bertflow_mini.evaluation.reproduce import Evaluation

__all__ = ["COLUMNS", "earned", "earned_live", "earned_published"]

METHODS = ("none", "whitening", "flow")
POOLINGS = ("last-avg", "first-last-avg")
#: The columns of :func:`earned`'s table, in order.
COLUMNS = [
    "model", "checkpoint", "pooling", "method", "task", "pretrained", "control",
    "earned", "control_sd", "control_seeds", "low", "high", "pretrained_sd",
    "pretrained_seeds", "pretrained_source", "control_source",
]  # fmt: skip
#: The controls' initialisers (:data:`bertflow_mini.encoders.spec.INITIALISERS`:
#: ``<name>@0`` and ``<name>@0-trunc``), with the labels the tables print.
INITS = {
    "hf": "Hugging Face's normal(0.02)",
    "trunc": "Google's truncated normal(0.02)",
}
#: The shape each model's control has, where the controls experiment measured it.
SHAPE_OF = {"bert-base-uncased": "bert-base", "scratch-bert": "bert-mini"}
#: Which paper each published (pooling, method) row of bert-base comes from.
_PAPERS = {"none": "BERT-flow", "flow": "BERT-flow", "whitening": "whitening"}
_CITATION = {"BERT-flow": "Li et al. 2020, Table 2", "whitening": "Su et al. 2021"}


# --------------------------------------------------------------------------------------
# bert-base: published minus ours
# --------------------------------------------------------------------------------------
def _file_name(source: Source) -> str:
    return source.name if hasattr(source, "name") else str(source).rsplit("/", 1)[-1]


def _published_score(pooling: str, method: str, task: str) -> tuple[float, str] | None:
    paper = _PAPERS.get(method)
    if paper is None:
        return None
    fit = "-" if method == "none" else "target"
    entry = PUBLISHED.get((paper, "bert-base-uncased", pooling, method, fit))
    if entry is None:
        return None
    aggregation, scores = entry
    if aggregation != "wmean":
        raise ValueError(
            f"{paper} {pooling} {method}: published under {aggregation!r}, "
            "ours is wmean"
        )
    by_task = dict(zip(TASKS, scores))
    value = (
        float(task_average(scores)) if task == AVG else by_task[canonical_task(task)]
    )
    where = f"{_CITATION[paper]} (their harness, fit {fit if fit != '-' else 'none'})"
    return value, where


def _live_control(
    shape_model: str,
    pooling: str,
    method: str,
    task: str,
    seeds: Sequence[int],
    cache: dict[str, Evaluation],
    init: str = "hf",
) -> tuple[float, float, int]:
    from bertflow_mini.encoders import control_of, load_encoder
    from bertflow_mini.evaluation.reproduce import Evaluation

    scores = []
    for seed in seeds:
        name = control_of(shape_model, seed, init)
        if name not in cache:
            cache[name] = Evaluation(load_encoder(name), progress=False)
        tasks = TASKS if task == "Avg." else [task]
        scores.append(
            float(np.mean([cache[name].score(t, pooling, method).wmean for t in tasks]))
        )
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else math.nan
    return float(np.mean(scores)), sd, len(scores)


def earned_published(
    tasks: Sequence[str] = TASKS,
    poolings: Sequence[str] = POOLINGS,
    methods: Sequence[str] = METHODS,
    *,
    live: bool = False,
    seeds: Sequence[int] = (0, 1, 2),
    controls: Source = CONTROLS_FILE,
    init: str = "hf",
) -> pd.DataFrame:
    """Published pretrained bert-base minus our random-init bert-base, per the module's
    doc.

    ``init``: the control's initialiser, ``"hf"`` (Hugging Face's normal, the
    default) or ``"trunc"`` (Google's truncated normal, which the released bert-base
    started from; ``<name>@0-trunc``). Cells no paper publishes (the flow and
    whitening on last-avg) are left out; control cells the committed file lacks are
    NaN (``live=True`` computes every control cell instead)."""
    if init not in INITS:
        raise ValueError(f"init={init!r}: one of {sorted(INITS)}")
    rows: list[dict[str, Any]] = []
    cache: dict[str, Evaluation] = {}
    control_name = "bert-base-uncased@0" + ("-trunc" if init == "trunc" else "")
    for pooling in poolings:
        for method in methods:
            for task in [*tasks, "Avg."] if len(tasks) == len(TASKS) else tasks:
                pub = _published_score(pooling, method, task)
                if pub is None:
                    continue
                if live:
                    mean, sd, n = _live_control(
                        "bert-base-uncased", pooling, method, task, seeds, cache, init
                    )
                    source = "ours, computed live"
                else:
                    mean, sd, n = control_summary(
                        "bert-base", pooling, method, task, init, controls
                    )
                    source = f"ours, {_file_name(controls)}"
                rows.append(
                    {
                        "model": "bert-base-uncased",
                        "checkpoint": "bert-base-uncased (published)"
                        + ("" if init == "hf" else ", Google init"),
                        "pooling": pooling,
                        "method": method,
                        "task": task if task == "Avg." else canonical_task(task),
                        "pretrained": pub[0],
                        "control": mean,
                        "earned": pub[0] - mean,
                        "control_sd": sd,
                        "control_seeds": n,
                        "low": math.nan,
                        "high": math.nan,
                        "pretrained_sd": math.nan,
                        "pretrained_seeds": 1,
                        "pretrained_source": pub[1],
                        "control_source": f"{source}: {control_name}, {INITS[init]} "
                        "init, reproduce fit=target, wmean",
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


# --------------------------------------------------------------------------------------
# Both sides ours: a checkpoint minus its @0, with a paired bootstrap
# --------------------------------------------------------------------------------------
def _paired_draws(
    ev_a: Evaluation,
    ev_b: Evaluation,
    task: str,
    pooling: str,
    method: str,
    n_resamples: int,
    seed: int,
) -> tuple[float, float, np.ndarray]:
    """Score of a, score of b, and the bootstrap differences a − b on ``task``'s test
    pairs."""
    pairs = ev_a.pairs(task)
    sims = {
        "a": ev_a.similarities(task, pooling, method),
        "b": ev_b.similarities(task, pooling, method),
    }
    draws = resampled_scores(
        sims, pairs.scores, np.asarray(pairs.subsets), n_resamples, seed
    )
    a, b = (
        ev_a.score(task, pooling, method).wmean,
        ev_b.score(task, pooling, method).wmean,
    )
    return a, b, draws["a"] - draws["b"]


def earned_live(
    model: str,
    tasks: Sequence[str] = TASKS,
    poolings: Sequence[str] = POOLINGS,
    methods: Sequence[str] = METHODS,
    *,
    checkpoints: Sequence[tuple[str, str]] | None = None,
    control: str | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    evaluations: dict[str, Evaluation] | None = None,
    controls: Source = CONTROLS_FILE,
    seeds_file: Source = PRETRAIN_SEEDS_FILE,
) -> pd.DataFrame:
    """Each checkpoint of ``model`` minus its random init, both ours, with a paired
    bootstrap.

    ``checkpoints``: ``(label, name)`` pairs, default the model's own checkpoints
    along training (:func:`~bertflow_mini.encoders.names.checkpoints_along_training`,
    the control left out); ``control`` defaults to ``<model>@0``. Pass
    ``evaluations`` (name → :class:`Evaluation`) to reuse a chapter's encodings and
    fits; new ones are added to it."""
    from bertflow_mini.encoders import (
        checkpoints_along_training,
        control_of,
        load_encoder,
    )
    from bertflow_mini.evaluation.reproduce import Evaluation

    control = control or control_of(model)
    # the last is the model itself, under its own name (its cached embeddings)
    if checkpoints is None:
        along = [
            (label, name)
            for label, name in checkpoints_along_training(model)
            if name != control
        ]
        checkpoints = along[:-1] + [(along[-1][0], model)] if along else []
    evaluations = {} if evaluations is None else evaluations

    def evaluation(name: str) -> Evaluation:
        if name not in evaluations:
            evaluations[name] = Evaluation(load_encoder(name), progress=False)
        return evaluations[name]

    tasks = [canonical_task(t) for t in tasks]
    shape = SHAPE_OF.get(model)
    final = checkpoints[-1][1] if checkpoints else None
    harness = "reproduce fit=target, wmean"
    bootstrap = f"same harness; paired bootstrap ({n_resamples} draws, {level:.0%})"
    rows = []
    for label, name in checkpoints:
        for pooling in poolings:
            for method in methods:
                scores = {
                    t: _paired_draws(
                        evaluation(name),
                        evaluation(control),
                        t,
                        pooling,
                        method,
                        n_resamples,
                        seed + i,
                    )
                    for i, t in enumerate(tasks)
                }
                if len(tasks) > 1:
                    scores[AVG] = tuple(  # type: ignore[assignment]
                        task_average([v[k] for v in scores.values()], axis=0)  # type: ignore[arg-type]
                        for k in range(3)
                    )
                for task, (a, b, diffs) in scores.items():
                    interval = percentile_interval(a - b, diffs, level)
                    low, high = interval.low, interval.high
                    p_sd, p_n = (
                        pretrain_seed_spread(pooling, method, task, seeds_file)
                        if model == "scratch-bert"
                        and name == final
                        and task in ("STSB", "Avg.")
                        else (math.nan, 1)
                    )
                    c_sd, c_n = (
                        control_summary(shape, pooling, method, task, path=controls)[1:]
                        if shape and is_file(controls)
                        else (math.nan, 1)
                    )
                    rows.append(
                        {
                            "model": model,
                            "checkpoint": label,
                            "pooling": pooling,
                            "method": method,
                            "task": task,
                            "pretrained": a,
                            "control": b,
                            "earned": a - b,
                            "control_sd": c_sd,
                            "control_seeds": c_n,
                            "low": low,
                            "high": high,
                            "pretrained_sd": p_sd,
                            "pretrained_seeds": p_n,
                            "pretrained_source": f"ours: {name}, {harness}",
                            "control_source": f"ours: {control}, {bootstrap}"
                            + (
                                f"; control_sd: {shape}@0 init seeds" if c_n > 1 else ""
                            ),
                        }
                    )
    return pd.DataFrame(rows, columns=COLUMNS)


# --------------------------------------------------------------------------------------
# The one call a chapter makes
# --------------------------------------------------------------------------------------
def earned(
    model: str,
    tasks: Sequence[str] = TASKS,
    poolings: Sequence[str] = POOLINGS,
    methods: Sequence[str] = METHODS,
    *,
    live: bool | None = None,
    **options: Any,
) -> pd.DataFrame:
    """What pretraining earns for ``model`` (see the module's doc): a tidy table of
    :data:`COLUMNS`, one row per checkpoint, pooling, method and dataset (+ ``Avg.``
    when all 7).

    ``bert-base-uncased``: published minus our control, the control from the shipped
    file (``live=True``, or ``None`` where ``controls=`` names no file: computed now,
    3 init seeds). Any other model: its checkpoints minus its ``@0``, computed now
    (``options`` go to :func:`earned_live`)."""
    from bertflow_mini.encoders.spec import short_name

    if short_name(model) == "bert-base-uncased":
        keep = {k: v for k, v in options.items() if k in ("seeds", "controls", "init")}
        # the committed file where there is one (a clone), else live (Colab)
        if live is None:
            live = not is_file(keep.get("controls", CONTROLS_FILE))
        return earned_published(tasks, poolings, methods, live=live, **keep)
    return earned_live(model, tasks, poolings, methods, **options)
