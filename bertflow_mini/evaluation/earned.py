"""What pretraining earns: a pretrained model's score minus its random-initialisation control.

One table the chapters share, one row per (checkpoint, pooling, method, dataset), tidy:

``earned(MODEL)`` gives

* for ``bert-base-uncased`` (:data:`~bertflow_mini.encoders.names.PAPER_MODEL`): the **published**
  pretrained rows (Li et al. 2020, Table 2 — raw last-avg and first-last-avg, which BERT-flow calls
  "last2avg", and the flow fitted on the target; Su et al. 2021 — whitening fitted on the target)
  minus **our** random-init bert-base (the same 12 × 768 shape and pooling, Hugging Face's initialiser
  or, with ``init="trunc"``, Google's, init seeds 0, 1, 2: mean, and the seed spread as ``control_sd``). The published rows come from the
  papers' own harness (SentEval, their fits); ours is :mod:`bertflow_mini.evaluation.reproduce` with
  the post-processor fitted on the target dataset's own sentences (``fit="target"``, the papers'
  "target" setting). No paired bootstrap is possible: the papers' per-pair similarities are not
  published. The control numbers are read from the committed benchmark result
  (``benchmarks/results/controls.json``, written by ``benchmarks/bench_controls.py``: encoding 7
  datasets with bert-base three times takes hours on two CPU cores); ``live=True`` computes them
  instead, and so does the default where that file is missing (a pip install in Colab, on a GPU).
* for any other model — ``scratch-bert``: each checkpoint along training (``@25``, ``@50``, the
  100 % model) minus ``scratch-bert@0``, **both sides ours**, computed live (embeddings are cached),
  with a paired bootstrap over the test pairs (:mod:`bertflow_mini.evaluation.bootstrap`): ``low`` /
  ``high`` is the 95 % percentile interval of the difference. For the 100 % checkpoint the
  pretraining-seed spread is added from ``benchmarks/results/pretrain-seeds.json`` (``pretrained_sd``,
  STS-B and the 7-dataset mean only), and for every model of a shape the benchmark measured, the
  init-seed spread of that shape's control (``control_sd``).

The ``Avg.`` rows are the mean over the datasets asked for; their interval averages each draw's
per-dataset differences (the datasets' pairs are drawn independently).

``scale_curve()`` reads scratch-bert's scale curve (``benchmarks/results/scale.json``, written by
``benchmarks/bench_scale.py``: separate pretraining runs of growing length, each beside its own step 0),
``scale_gaps`` turns it into pretrained-minus-control per run length, and ``plot_scale_curve`` draws it.

``plot_earned(table)`` draws it: the earned points with their intervals (ours) or ± the control's
seed spread (published), a panel per pooling.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.data.datasets import canonical_task
from bertflow_mini.evaluation.bootstrap import percentile_interval, resampled_scores
from bertflow_mini.evaluation.published import PUBLISHED

__all__ = [
    "COLUMNS", "CONTROLS_FILE", "PRETRAIN_SEEDS_FILE", "controls_table", "earned", "earned_live",
    "earned_published", "plot_earned", "plot_scale_curve", "pretrain_seed_spread", "SCALE_FILE", "scale_curve",
    "scale_gaps", "with_average",
]

_RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
#: The random-init control benchmark's output (``benchmarks/bench_controls.py``).
CONTROLS_FILE = _RESULTS / "controls.json"
#: scratch-bert's pretraining seeds (``benchmarks/bench_pretrain.py --seeds 3``).
PRETRAIN_SEEDS_FILE = _RESULTS / "pretrain-seeds.json"
#: scratch-bert's scale curve (``benchmarks/bench_scale.py``).
SCALE_FILE = _RESULTS / "scale.json"

METHODS = ("none", "whitening", "flow")
POOLINGS = ("last-avg", "first-last-avg")
#: The columns of :func:`earned`'s table, in order.
COLUMNS = [
    "model", "checkpoint", "pooling", "method", "task", "pretrained", "control", "earned",
    "control_sd", "control_seeds", "low", "high", "pretrained_sd", "pretrained_seeds",
    "pretrained_source", "control_source",
]
#: The controls' initialisers (:data:`bertflow_mini.encoders.names.INITIALISERS`: ``<name>@0`` and
#: ``<name>@0-trunc``), with the labels the tables print.
INITS = {"hf": "Hugging Face's normal(0.02)", "trunc": "Google's truncated normal(0.02)"}
#: The shape each model's control has, where the controls benchmark measured that shape.
SHAPE_OF = {"bert-base-uncased": "bert-base", "scratch-bert": "bert-mini"}
#: Which paper each published (pooling, method) row of bert-base comes from.
_PAPERS = {"none": "BERT-flow", "flow": "BERT-flow", "whitening": "whitening"}
_CITATION = {"BERT-flow": "Li et al. 2020, Table 2", "whitening": "Su et al. 2021"}


# --------------------------------------------------------------------------------------------
# The committed results
# --------------------------------------------------------------------------------------------
def _read_json(path: Path, what: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: {what}. It is committed with the repository (clone it), or pass live=True"
        )
    with open(path) as f:
        return json.load(f)


def with_average(table: pd.DataFrame, by: Sequence[str], values: Sequence[str] = ("score",)) -> pd.DataFrame:
    """``table`` plus one ``Avg.`` row per ``by`` group that has all 7 datasets: the mean of ``values``
    over them (each seed's 7-dataset mean, as every table here reports it)."""
    groups = table[table["task"].isin(TASKS)].groupby(list(by))
    avg = groups[list(values)].mean()[groups.size() == len(TASKS)].reset_index()
    return pd.concat([table, avg.assign(task="Avg.")], ignore_index=True)


def controls_table(path: str | Path = CONTROLS_FILE) -> pd.DataFrame:
    """The controls benchmark's scores, one row per (shape, init, seed, pooling, method, task)."""
    record = _read_json(Path(path), "the random-init controls (benchmarks/bench_controls.py)")
    table = pd.DataFrame(record["records"])
    if table.empty:
        return table
    if not np.isfinite(table["score"].to_numpy(dtype=np.float64)).all():
        raise ValueError(f"{path}: a score is NaN or infinite")
    return table


def control_summary(
    shape: str, pooling: str, method: str, task: str, init: str = "hf",
    path: str | Path = CONTROLS_FILE,
) -> tuple[float, float, int]:
    """Mean, sd (``ddof=1``; NaN for one seed) and number of init seeds of one control cell; the
    ``Avg.`` cell is each seed's mean over the 7 datasets (only seeds with all 7)."""
    table = controls_table(path)
    if table.empty:
        return math.nan, math.nan, 0
    t = table[(table["shape"] == shape) & (table["init"] == init) & (table["pooling"] == pooling)
              & (table["method"] == method)]
    if task == "Avg.":
        t = with_average(t, ["seed"])
    scores = t.loc[t["task"] == (task if task == "Avg." else canonical_task(task)), "score"].to_numpy()
    if len(scores) == 0:
        return math.nan, math.nan, 0
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else math.nan
    return float(np.mean(scores)), sd, len(scores)


def pretrain_seed_spread(
    pooling: str, method: str, task: str, path: str | Path = PRETRAIN_SEEDS_FILE
) -> tuple[float, int]:
    """scratch-bert's sd over pretraining seeds (``ddof=1``) and the number of seeds, for STS-B or
    ``Avg.`` (the only columns the seeds benchmark keeps); NaN and 0 otherwise."""
    column = "Avg." if task == "Avg." else canonical_task(task)
    record = _read_json(Path(path), "scratch-bert's pretraining seeds (benchmarks/bench_pretrain.py --seeds 3)")
    scores = [s[pooling][method][column] for s in record["seeds"].values()
              if column in s.get(pooling, {}).get(method, {})]
    if len(scores) < 2:
        return math.nan, len(scores)
    return float(np.std(scores, ddof=1)), len(scores)


# --------------------------------------------------------------------------------------------
# bert-base: published minus ours
# --------------------------------------------------------------------------------------------
def _published_score(pooling: str, method: str, task: str) -> tuple[float, str] | None:
    paper = _PAPERS.get(method)
    fit = "-" if method == "none" else "target"
    entry = PUBLISHED.get((paper, "bert-base-uncased", pooling, method, fit))
    if entry is None:
        return None
    aggregation, scores = entry
    if aggregation != "wmean":
        raise ValueError(f"{paper} {pooling} {method}: published under {aggregation!r}, ours is wmean")
    by_task = dict(zip(TASKS, scores))
    value = float(np.mean(scores)) if task == "Avg." else by_task[canonical_task(task)]
    where = f"{_CITATION[paper]} (their harness, fit {fit if fit != '-' else 'none'})"
    return value, where


def _live_control(
    shape_model: str, pooling: str, method: str, task: str, seeds: Sequence[int], cache: dict, init: str = "hf"
) -> tuple[float, float, int]:
    from bertflow_mini.encoders import control_of, load_encoder
    from bertflow_mini.evaluation.reproduce import Evaluation

    scores = []
    for seed in seeds:
        name = control_of(shape_model, seed, init)
        if name not in cache:
            cache[name] = Evaluation(load_encoder(name), progress=False)
        tasks = TASKS if task == "Avg." else [task]
        scores.append(float(np.mean([cache[name].score(t, pooling, method).wmean for t in tasks])))
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else math.nan
    return float(np.mean(scores)), sd, len(scores)


def earned_published(
    tasks: Sequence[str] = TASKS,
    poolings: Sequence[str] = POOLINGS,
    methods: Sequence[str] = METHODS,
    *,
    live: bool = False,
    seeds: Sequence[int] = (0, 1, 2),
    controls: str | Path = CONTROLS_FILE,
    init: str = "hf",
) -> pd.DataFrame:
    """Published pretrained bert-base minus our random-init bert-base, per the module's doc.

    ``init``: the control's initialiser, ``"hf"`` (Hugging Face's normal, the default) or ``"trunc"``
    (Google's truncated normal, which the released bert-base started from; ``<name>@0-trunc``).
    Cells no paper publishes (the flow and whitening on last-avg) are left out; control cells the
    committed file lacks are NaN (``live=True`` computes every control cell instead)."""
    if init not in INITS:
        raise ValueError(f"init={init!r}: one of {sorted(INITS)}")
    rows, cache = [], {}
    for pooling in poolings:
        for method in methods:
            for task in [*tasks, "Avg."] if len(tasks) == len(TASKS) else tasks:
                pub = _published_score(pooling, method, task)
                if pub is None:
                    continue
                if live:
                    mean, sd, n = _live_control("bert-base-uncased", pooling, method, task, seeds, cache, init)
                    source = "ours, computed live"
                else:
                    mean, sd, n = control_summary("bert-base", pooling, method, task, init, controls)
                    source = f"ours, {Path(controls).name}"
                rows.append({
                    "model": "bert-base-uncased", "checkpoint": "bert-base-uncased (published)" + (
                        "" if init == "hf" else ", Google init"),
                    "pooling": pooling, "method": method, "task": task if task == "Avg." else canonical_task(task),
                    "pretrained": pub[0], "control": mean, "earned": pub[0] - mean,
                    "control_sd": sd, "control_seeds": n, "low": math.nan, "high": math.nan,
                    "pretrained_sd": math.nan, "pretrained_seeds": 1,
                    "pretrained_source": pub[1],
                    "control_source": f"{source}: bert-base-uncased@0{'-trunc' if init == 'trunc' else ''}, "
                                      f"{INITS[init]} init, reproduce fit=target, wmean",
                })
    return pd.DataFrame(rows, columns=COLUMNS)


# --------------------------------------------------------------------------------------------
# Both sides ours: a checkpoint minus its @0, with a paired bootstrap
# --------------------------------------------------------------------------------------------
def _paired_draws(
    ev_a, ev_b, task: str, pooling: str, method: str, n_resamples: int, seed: int
) -> tuple[float, float, np.ndarray]:
    """Score of a, score of b, and the bootstrap differences a − b on ``task``'s test pairs."""
    pairs = ev_a.pairs(task)
    sims = {"a": ev_a.similarities(task, pooling, method), "b": ev_b.similarities(task, pooling, method)}
    draws = resampled_scores(sims, pairs.scores, np.asarray(pairs.subsets), n_resamples, seed)
    a, b = ev_a.score(task, pooling, method).wmean, ev_b.score(task, pooling, method).wmean
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
    evaluations: dict | None = None,
    controls: str | Path = CONTROLS_FILE,
    seeds_file: str | Path = PRETRAIN_SEEDS_FILE,
) -> pd.DataFrame:
    """Each checkpoint of ``model`` minus its random init, both ours, with a paired bootstrap.

    ``checkpoints``: ``(label, name)`` pairs, default the model's own checkpoints along training
    (:func:`~bertflow_mini.encoders.names.checkpoints_along_training`, the control left out);
    ``control`` defaults to ``<model>@0``. Pass ``evaluations`` (name → :class:`Evaluation`) to reuse
    a chapter's encodings and fits; new ones are added to it."""
    from bertflow_mini.encoders import (
        checkpoints_along_training,
        control_of,
        load_encoder,
    )
    from bertflow_mini.evaluation.reproduce import Evaluation

    control = control or control_of(model)
    if checkpoints is None:  # the last is the model itself, under its own name (its cached embeddings)
        along = [(label, name) for label, name in checkpoints_along_training(model) if name != control]
        checkpoints = along[:-1] + [(along[-1][0], model)] if along else []
    evaluations = {} if evaluations is None else evaluations

    def evaluation(name: str):
        if name not in evaluations:
            evaluations[name] = Evaluation(load_encoder(name), progress=False)
        return evaluations[name]

    tasks = [canonical_task(t) for t in tasks]
    shape = SHAPE_OF.get(model)
    final = checkpoints[-1][1] if checkpoints else None
    rows = []
    for label, name in checkpoints:
        for pooling in poolings:
            for method in methods:
                scores = {t: _paired_draws(evaluation(name), evaluation(control), t, pooling, method,
                                           n_resamples, seed + i) for i, t in enumerate(tasks)}
                if len(tasks) > 1:
                    scores["Avg."] = tuple(np.mean([v[k] for v in scores.values()], axis=0) for k in range(3))
                for task, (a, b, diffs) in scores.items():
                    interval = percentile_interval(a - b, diffs, level)
                    low, high = interval.low, interval.high
                    p_sd, p_n = (pretrain_seed_spread(pooling, method, task, seeds_file)
                                 if model == "scratch-bert" and name == final and task in ("STSB", "Avg.")
                                 else (math.nan, 1))
                    c_sd, c_n = (control_summary(shape, pooling, method, task, path=controls)[1:]
                                 if shape and Path(controls).is_file() else (math.nan, 1))
                    rows.append({
                        "model": model, "checkpoint": label, "pooling": pooling, "method": method,
                        "task": task, "pretrained": a, "control": b, "earned": a - b,
                        "control_sd": c_sd, "control_seeds": c_n, "low": low, "high": high,
                        "pretrained_sd": p_sd, "pretrained_seeds": p_n,
                        "pretrained_source": f"ours: {name}, reproduce fit=target, wmean",
                        "control_source": f"ours: {control}, same harness; paired bootstrap "
                                          f"({n_resamples} draws, {level:.0%})"
                                          + (f"; control_sd: {shape}@0 init seeds" if c_n > 1 else ""),
                    })
    return pd.DataFrame(rows, columns=COLUMNS)


# --------------------------------------------------------------------------------------------
# The one call a chapter makes
# --------------------------------------------------------------------------------------------
def earned(
    model: str,
    tasks: Sequence[str] = TASKS,
    poolings: Sequence[str] = POOLINGS,
    methods: Sequence[str] = METHODS,
    *,
    live: bool | None = None,
    **options,
) -> pd.DataFrame:
    """What pretraining earns for ``model`` (see the module's doc): a tidy table of
    :data:`COLUMNS`, one row per checkpoint, pooling, method and dataset (+ ``Avg.`` when all 7).

    ``bert-base-uncased``: published minus our control, the control from the committed file
    (``live=True``, or ``None`` where the file is missing, as in Colab: computed now, 3 init seeds). Any other model: its checkpoints minus its ``@0``, computed now
    (``options`` go to :func:`earned_live`)."""
    from bertflow_mini.encoders.sources import short_name

    if short_name(model) == "bert-base-uncased":
        keep = {k: v for k, v in options.items() if k in ("seeds", "controls", "init")}
        if live is None:  # the committed file where there is one (a clone), else live (Colab)
            live = not Path(keep.get("controls", CONTROLS_FILE)).is_file()
        return earned_published(tasks, poolings, methods, live=live, **keep)
    return earned_live(model, tasks, poolings, methods, **options)


def plot_earned(table: pd.DataFrame, task: str = "Avg.", ax=None):
    """The earned points of one ``task`` (default ``Avg.``), a panel per pooling, x = checkpoint,
    a colour per method; whiskers: the bootstrap interval where both sides are ours, else ± the
    control's init-seed sd. A dashed line at 0: no gain over the random network."""
    import matplotlib.pyplot as plt

    t = table[table["task"] == task]
    if t.empty:
        raise ValueError(f"no rows for task {task!r}; the table has {sorted(set(table['task']))}")
    poolings = list(dict.fromkeys(t["pooling"]))
    if ax is None:
        _, ax = plt.subplots(1, len(poolings), figsize=(4.2 * len(poolings), 3.4), sharey=True, squeeze=False)
        axes = list(ax[0])
    else:
        axes = list(np.atleast_1d(ax))
    if len(axes) != len(poolings):
        raise ValueError(f"need {len(poolings)} axes (one per pooling), got {len(axes)}")
    labels = list(dict.fromkeys(t["checkpoint"]))
    methods = list(dict.fromkeys(t["method"]))
    for a, pooling in zip(axes, poolings):
        for j, method in enumerate(methods):
            rows = t[(t["pooling"] == pooling) & (t["method"] == method)]
            if rows.empty:
                continue
            x = np.array([labels.index(c) for c in rows["checkpoint"]]) + (j - (len(methods) - 1) / 2) * 0.12
            y = rows["earned"].to_numpy()
            ours = rows["low"].notna().to_numpy()
            lo = np.where(ours, y - rows["low"], rows["control_sd"].fillna(0))
            hi = np.where(ours, rows["high"] - y, rows["control_sd"].fillna(0))
            a.errorbar(x, y, yerr=[lo, hi], fmt="o-" if len(labels) > 1 else "o", capsize=3,
                       label={"none": "raw cosine"}.get(method, method))
        a.axhline(0, color="grey", ls="--", lw=1)
        a.set_xticks(range(len(labels)), labels, rotation=15)
        a.set_title(f"{pooling}, {task}")
    axes[0].set_ylabel("pretrained − random init\n(Spearman × 100)")
    axes[-1].legend(fontsize=8)
    return axes


# --------------------------------------------------------------------------------------------
# scratch-bert's scale curve
# --------------------------------------------------------------------------------------------
_RUN = ["corpus", "layers", "hidden", "steps"]


def scale_curve(path: str | Path = SCALE_FILE) -> pd.DataFrame:
    """The scale benchmark's scores, one row per (run, seed, checkpoint, pooling, method, task);
    ``checkpoint`` is ``pct-100`` (the trained model) or ``pct-000`` (its random initialisation)."""
    record = _read_json(Path(path), "scratch-bert's scale curve (benchmarks/bench_scale.py)")
    table = pd.DataFrame(record["records"])
    if not table.empty and not np.isfinite(table["score"].to_numpy(dtype=np.float64)).all():
        raise ValueError(f"{path}: a score is NaN or infinite")
    return table


def scale_gaps(curve: pd.DataFrame) -> pd.DataFrame:
    """Per run length, pooling, method and task (+ ``Avg.``, each seed's mean over the 7 datasets where
    it has all 7): the pretrained score, its control, and ``gap`` = pretrained − control, as the mean
    over the seeds run (``seeds``), with the seeds' sd of the gap (``gap_sd``, NaN for one seed)."""
    if curve.empty:
        raise ValueError("the scale curve is empty: run benchmarks/bench_scale.py first")
    index = _RUN + ["seed", "pooling", "method"]
    wide = curve.pivot_table(index=index + ["task"], columns="checkpoint", values="score").dropna()
    wide = wide.rename(columns={"pct-100": "pretrained", "pct-000": "control"}).reset_index()
    wide = with_average(wide, index, ["pretrained", "control"])
    wide["gap"] = wide["pretrained"] - wide["control"]
    facts = curve.groupby(_RUN)[["epochs", "wordpieces", "held_out_loss"]].mean().reset_index()
    out = (wide.groupby(_RUN + ["pooling", "method", "task"])
           .agg(seeds=("seed", "nunique"), pretrained=("pretrained", "mean"), control=("control", "mean"),
                gap=("gap", "mean"), gap_sd=("gap", lambda g: g.std(ddof=1) if len(g) > 1 else math.nan))
           .reset_index().merge(facts, on=_RUN))
    out["order"] = out["task"].map({t: i for i, t in enumerate([*TASKS, "Avg."])})
    return out.sort_values(_RUN + ["pooling", "method", "order"]).drop(columns="order").reset_index(drop=True)


def plot_scale_curve(curve: pd.DataFrame, tasks: Sequence[str] = ("STSB", "Avg."),
                     methods: Sequence[str] = ("whitening", "flow")):
    """Score against wordpieces seen (log scale, a tick at each run), a panel per (pooling, task): each
    method's pretrained runs (a marker per corpus, joined; whiskers ± the sd of the gap over seeds,
    where a length has several) and, in the same colour, its control — the step-0 network, the same
    for every run of a seed — as a dotted line at its mean over the seeds measured, with a ± sd band."""
    import matplotlib.pyplot as plt

    gaps = scale_gaps(curve)
    poolings = list(dict.fromkeys(gaps["pooling"]))
    corpora = list(dict.fromkeys(gaps["corpus"]))
    # the control: each seed's step 0 (the same network in every run of that seed), mean and sd over seeds
    step0 = curve[curve["checkpoint"] == "pct-000"].drop_duplicates(["seed", "pooling", "method", "task"])
    control = with_average(step0, ["seed", "pooling", "method"]).groupby(["pooling", "method", "task"])["score"]
    control = control.agg(["mean", "std"])
    fig, axes = plt.subplots(len(poolings), len(tasks), figsize=(4.6 * len(tasks), 3.4 * len(poolings)),
                             squeeze=False, sharex=True)
    for row, pooling in zip(axes, poolings):
        for ax, task in zip(row, tasks):
            for colour, method in zip(("C0", "C1", "C2"), methods):
                pick = (gaps["pooling"] == pooling) & (gaps["method"] == method) & (gaps["task"] == task)
                for marker, corpus in zip("osD^", corpora):
                    line = gaps[pick & (gaps["corpus"] == corpus)].sort_values("wordpieces")
                    if len(line):
                        ax.errorbar(line["wordpieces"], line["pretrained"], yerr=line["gap_sd"].fillna(0),
                                    fmt=f"{marker}-", color=colour, capsize=3, label=f"{method}, {corpus}")
                if (pooling, method, task) in control.index:
                    level, sd = control.loc[(pooling, method, task)]
                    ax.axhline(level, ls=":", color=colour, label=f"{method}, step 0 (random init), ± sd")
                    if np.isfinite(sd):  # NaN for one seed
                        ax.axhspan(level - sd, level + sd, color=colour, alpha=0.12, lw=0)
            ax.set_xscale("log")
            ticks = sorted(set(gaps["wordpieces"]))
            ax.set_xticks(ticks, [f"{t / 1e6:.1f} M" for t in ticks])
            ax.minorticks_off()
            ax.set_title(f"{pooling}, {'7-dataset mean' if task == 'Avg.' else task}")
            ax.set_xlabel("wordpieces seen in pretraining")
        row[0].set_ylabel("Spearman × 100")
    drawn = [ax for ax in fig.axes if ax.get_legend_handles_labels()[0]]
    if drawn:
        drawn[-1].legend(fontsize=7)
    fig.tight_layout()
    return fig
