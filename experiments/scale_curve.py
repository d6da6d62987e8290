"""scratch-bert's scale curve: does more pretraining carry it past its random initialisation? Asserts nothing.

    .venv/bin/python experiments/scale_curve.py --corpus dictionary+sts --steps 1500 3000 6000 --seeds 0
    .venv/bin/python experiments/scale_curve.py --corpus dictionary+sts --steps 1500 --seeds 0 1 2
    .venv/bin/python experiments/scale_curve.py --show        # print the saved curve, draw the figure

Each point is a **separate** pretraining run of the book's recipe (``pretrain.Recipe``, changed only
by ``--corpus``, ``--steps``, ``--seed`` and ``--set FIELD=VALUE``), with its own warm-up and linear
decay, so a point is a finished model, not a snapshot taken mid-schedule. Every run is scored like
the controls (``experiments/controls.py``): raw / whitening / flow on the 7 datasets, last-avg
and first-last-avg, post-processors fitted on each dataset's own sentences (``fit="target"``),
Spearman x 100, wmean. Beside it, the control: the same run's step 0 (``pct-000``: the same shape,
the same seed, no training).

Records are appended to ``bertflow_mini/evaluation/results/scale.json`` (shipped with the package:
:func:`bertflow_mini.evaluation.measured.scale_curve`) as soon as they are scored (:mod:`common`:
atomically, under a lock; a cell already there is not recomputed). ``--show`` prints the curve — per run, the
wordpieces seen, the held-out loss, and the pretrained score minus its control — fits the gap
against log10(wordpieces) where there are three or more lengths, says where the lines would cross if
the trend holds (and not beyond ten times the longest run), and draws ``experiments/figures/scale-curve.png``
(:func:`bertflow_mini.chapters.plotting.plot_scale_curve`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (
    METHODS,
    POOLINGS,
    RESULTS,
    ResultsFile,
    command_line,
    parse_settings,
    score_cells,
)

from bertflow_mini.chapters.plotting import plot_scale_curve
from bertflow_mini.data import TASKS
from bertflow_mini.data.corpus import CORPORA
from bertflow_mini.encoders import load_encoder, pretrain
from bertflow_mini.evaluation.measured import SCALE_FILE, scale_curve
from bertflow_mini.evaluation.reproduce import Evaluation
from bertflow_mini.evaluation.scale import scale_gaps

KEY = (
    "corpus",
    "layers",
    "hidden",
    "steps",
    "seed",
    "checkpoint",
    "pooling",
    "method",
    "task",
)
HEAD = {
    "what": (
        "scratch-bert's scale curve: separate pretraining runs of the book's recipe (one per step count), "
        "each scored at its end (pct-100) and at its step 0 (pct-000, the control); Spearman x 100 on "
        "each dataset's test pairs, wmean, fit=target; 2-core AMD EPYC"
    ),
    "command": "experiments/scale_curve.py (see each record's 'command')",
}
#: Where the curve goes: the file the package ships.
RESULTS_FILE = RESULTS / SCALE_FILE.name
FIGURE = Path(__file__).resolve().parent / "figures" / "scale-curve.png"


def run_facts(recipe: pretrain.Recipe) -> dict:
    """What a run saw: sequences, epochs, wordpieces (epochs x the training set's wordpieces), held-out loss."""
    rows, info = pretrain.training_log(recipe)
    sequences = recipe.steps * recipe.batch_size
    epochs = sequences / info["train_sentences"]
    return {
        "sequences": sequences,
        "epochs": round(epochs, 4),
        "wordpieces": round(epochs * info["train_tokens"]),
        "held_out_loss": round(rows[-1]["held_out_loss"], 4),
        "train_minutes": round(info["seconds"] / 60, 1),
    }


def score_run(recipe: pretrain.Recipe, args, command: str) -> None:
    results = ResultsFile(Path(args.results), KEY, HEAD)
    pretrain.checkpoint(100, recipe)
    facts = {**run_facts(recipe), "recipe_key": recipe.key()}
    for checkpoint in ("pct-100", "pct-000"):
        enc = load_encoder(str(pretrain.run_dir(recipe) / checkpoint))
        prefix = (
            recipe.corpus,
            recipe.layers,
            recipe.hidden,
            recipe.steps,
            recipe.seed,
            checkpoint,
        )
        score_cells(
            Evaluation(enc, progress=False),
            results,
            prefix,
            args.tasks,
            args.poolings,
            args.methods,
            facts,
            command,
        )


def show(path: Path, figure: Path | None) -> None:
    curve = scale_curve(path)
    if curve.empty:
        print("nothing saved yet")
        return
    gaps = scale_gaps(curve)
    with pd.option_context("display.width", 250, "display.max_rows", 500):
        for (corpus, layers, hidden), g in gaps.groupby(["corpus", "layers", "hidden"]):
            print(
                f"\n{corpus}, {layers} layers x {hidden}: pretrained (pct-100) and its control (pct-000), "
                "Spearman x 100, mean over the seeds run (n)"
            )
            cols = [
                "steps",
                "seeds",
                "epochs",
                "wordpieces",
                "held_out_loss",
                "pooling",
                "method",
                "task",
                "pretrained",
                "control",
                "gap",
                "gap_sd",
            ]
            print(g[cols].to_string(index=False, float_format=lambda v: f"{v:.2f}"))
            for (pooling, method, task), line in g.groupby(
                ["pooling", "method", "task"]
            ):
                if line["steps"].nunique() < 3 or task not in ("STSB", "Avg."):
                    continue
                slope, intercept = np.polyfit(
                    np.log10(line["wordpieces"]), line["gap"], 1
                )
                longest = line["wordpieces"].max()
                cross = 10 ** (-intercept / slope) if slope > 0 else math.inf
                if line["gap"].iloc[-1] > 0:
                    where = "the longest run is above its control"
                elif slope <= 0:
                    where = "no upward trend: more text does not close the gap here"
                elif cross <= 10 * longest:
                    where = (
                        f"crosses 0 at about {cross:.3g} wordpieces if the trend holds"
                    )
                else:
                    where = f"would cross only beyond 10x the longest run ({cross / longest:.3g}x): too far to say"
                print(
                    f"  {pooling} {method} {task}: gap {slope * math.log10(2):+.2f} per doubling of the text; {where}"
                )
    if figure is not None:
        import matplotlib

        matplotlib.use("Agg")
        fig = plot_scale_curve(curve)
        fig.savefig(figure, dpi=110, bbox_inches="tight")
        print(f"written: {figure}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", choices=CORPORA, default=pretrain.DEFAULT.corpus)
    p.add_argument("--steps", nargs="+", type=int, default=[pretrain.DEFAULT.steps])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="another recipe field",
    )
    p.add_argument("--tasks", nargs="+", default=list(TASKS))
    p.add_argument("--poolings", nargs="+", default=list(POOLINGS))
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument(
        "--show", action="store_true", help="only print (and draw) what is saved"
    )
    p.add_argument("--figure", default=str(FIGURE))
    p.add_argument("--results", default=str(RESULTS_FILE))
    args = p.parse_args(argv)
    if not args.show:
        command = command_line("scale_curve.py", argv)
        torch.set_num_threads(
            int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
        )
        for steps in args.steps:
            for seed in args.seeds:
                recipe = pretrain.with_overrides(
                    corpus=args.corpus,
                    steps=steps,
                    seed=seed,
                    **parse_settings(args.set),
                )
                score_run(recipe, args, command)
    show(Path(args.results), Path(args.figure) if args.figure else None)


if __name__ == "__main__":
    main()
