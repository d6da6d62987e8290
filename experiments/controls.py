"""Random-init controls at every BERT shape, and the baselines that explain them. Asserts nothing.

    OMP_NUM_THREADS=1 .venv/bin/python experiments/controls.py --shapes bert-base --seeds 0 1 2 --tasks STSB
    OMP_NUM_THREADS=1 .venv/bin/python experiments/controls.py --shapes tiny mini small medium
    .venv/bin/python experiments/controls.py --init trunc --shapes bert-base --seeds 0 1 2   # Google's init
    .venv/bin/python experiments/controls.py --baselines --tasks STSB      # item 4: why it is strong
    .venv/bin/python experiments/controls.py --earned --methods none whitening   # the shared table
    .venv/bin/python experiments/controls.py --show                        # print what is saved

1. controls: ``<shape>@0-seedS`` (Hugging Face's initialiser: normal(0, 0.02) weights, zero biases,
   unit LayerNorm; ``--init trunc``: ``<shape>@0-trunc-seedS``, Google's truncated normal(0.02) cut at
   2 sd, as TF BERT and MultiBERTs' step 0) scored raw / whitening / flow on the 7 datasets, last-avg and first-last-avg,
   post-processors fitted on the target dataset's sentences (``fit="target"``), Spearman x 100, wmean.
   Shapes: Turc et al.'s miniatures (tiny L2/H128, mini L4/H256, small L4/H512, medium L8/H512, built
   from bert-base's config) and bert-base (12 x 768). ``--flow-seeds`` limits the (slow) flow fits to
   some init seeds.
2. ``--baselines``: what a random network's whitened average already is, raw and whitened: the
   random network's input-embedding output (``hidden_states[0]``) and its word-embedding rows averaged
   per sentence, a bag of seeded Gaussian vectors of the same width, and IDF-weighted word overlap.

3. ``--earned``: "what pretraining earns" at both scales (:mod:`bertflow_mini.evaluation.earned`):
   published bert-base minus our random bert-base (each initialiser), and scratch-bert's checkpoints minus its ``@0``
   with a paired bootstrap, written to the package's ``results/earned.csv``.

Every cell is appended to ``bertflow_mini/evaluation/results/controls.json`` (shipped with the
package: :func:`bertflow_mini.evaluation.measured.controls_table`) as soon as it is scored
(:mod:`common`: atomically, under a lock; a cell already there is not recomputed). ``--show``
prints the tables (mean ± sd over init seeds) and the "what pretraining earns" table for bert-base.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import METHODS, POOLINGS, RESULTS, ResultsFile, command_line, score_cells

from bertflow_mini._io import atomic_path
from bertflow_mini.data import TASKS, load_sts
from bertflow_mini.data.pairs import canonical_task
from bertflow_mini.encoders import control_of, load_encoder
from bertflow_mini.evaluation import lexical
from bertflow_mini.evaluation.controls import with_average
from bertflow_mini.evaluation.earned import INITS, earned
from bertflow_mini.evaluation.measured import CONTROLS_FILE, EARNED_FILE, controls_table
from bertflow_mini.evaluation.reproduce import Evaluation
from bertflow_mini.evaluation.sts import score_similarities

SHAPES = {
    "tiny": "bert-tiny",
    "mini": "bert-mini",
    "small": "bert-small",
    "medium": "bert-medium",
    "bert-base": "bert-base-uncased",
    "base": "bert-base-uncased",
}
KEY = ("shape", "init", "seed", "pooling", "method", "task")
HEAD = {
    "what": (
        "random-init BERT controls and no-semantics baselines: Spearman x 100 on each dataset's test "
        "pairs, wmean, post-processors fitted on the target dataset's own sentences (fit=target); "
        "2-core AMD EPYC, OMP_NUM_THREADS=1"
    ),
    "command": "experiments/controls.py (see each record's 'command')",
}


#: Where the controls and the earned table go: the files the package ships.
RESULTS_FILE, EARNED_OUT = RESULTS / CONTROLS_FILE.name, RESULTS / EARNED_FILE.name


def shape_label(base: str) -> str:
    return "bert-base" if base == "bert-base-uncased" else base


def results_file(path: str | Path) -> ResultsFile:
    return ResultsFile(Path(path), KEY, HEAD)


# ---------------------------------------------------------------------------------------- initialisers
def encoder_for(base: str, seed: int, init: str):
    """``<base>@0-seedS``, or with ``init="trunc"`` ``<base>@0-trunc-seedS`` (Google's initialiser)."""
    return load_encoder(control_of(base, seed, init))


# ---------------------------------------------------------------------------------------- 1. controls
def run_controls(args, command: str) -> None:
    results = results_file(args.results)
    for shape in args.shapes:
        base = SHAPES[shape]
        for seed in args.seeds:
            enc = encoder_for(base, seed, args.init)
            score_cells(
                Evaluation(enc, progress=False),
                results,
                (shape_label(base), args.init, seed),
                args.tasks,
                args.poolings,
                args.methods,
                {"model": enc.name},
                command,
                skip=lambda m, seed=seed: (
                    m == "flow"
                    and args.flow_seeds is not None
                    and seed not in args.flow_seeds
                ),
            )


# ---------------------------------------------------------------------------------------- 2. baselines
def run_baselines(args, command: str) -> None:
    """Item 4 of the issue: the random network's input embeddings, a bag of random vectors, IDF overlap."""
    records = []
    for shape in args.shapes:
        base = SHAPES[shape]
        enc = encoder_for(base, 0, args.init)
        table = enc.model.get_input_embeddings().weight.detach().double().numpy()
        ev = Evaluation(enc, progress=False)
        d = table.shape[1]
        for task in args.tasks:
            task = canonical_task(task)
            embedders = {
                f"word-embedding rows of {shape_label(base)}@0": lambda s, tok=enc.tokenizer, t=table: (
                    lexical.bag_of_vectors(lexical.token_ids(s, tok), t)
                ),
                f"random Gaussian vectors, width {d}": lambda s, tok=enc.tokenizer, d=d: (
                    lexical.bag_of_vectors(
                        lexical.token_ids(s, tok),
                        lambda ids: lexical.random_token_vectors(ids, d, 0),
                    )
                ),
            }
            for name, embed in embedders.items():
                for method, score in lexical.score_vectors(task, embed).items():
                    records.append(
                        {
                            "shape": name,
                            "init": args.init,
                            "seed": 0,
                            "pooling": "bag",
                            "method": method,
                            "task": task,
                            "model": name,
                            "score": round(score, 4),
                        }
                    )
            if args.tasks and "layer0" not in args.skip:
                for method in ("none", "whitening"):
                    s = ev.score(task, (0,), method).wmean
                    records.append(
                        {
                            "shape": f"input-embedding output (hidden_states[0]) of {shape_label(base)}@0",
                            "init": args.init,
                            "seed": 0,
                            "pooling": "(0,)",
                            "method": method,
                            "task": task,
                            "model": enc.name,
                            "score": round(s, 4),
                        }
                    )
            print(f"{shape} {task}: done", flush=True)
    for task in args.tasks:
        pairs = load_sts(task, "test")
        idf = lexical.idf_weights(ev.sentences(task))
        score = score_similarities(
            pairs, lexical.idf_overlap(pairs.sent1, pairs.sent2, idf)
        ).wmean
        records.append(
            {
                "shape": "IDF-weighted word overlap (IDF over the dataset's sentences)",
                "init": "-",
                "seed": 0,
                "pooling": "-",
                "method": "none",
                "task": canonical_task(task),
                "model": "-",
                "score": round(score, 4),
            }
        )
    for r in records:
        r.update(fit="target", aggregation="wmean", command=command)
    results_file(args.results).save(records)


# ---------------------------------------------------------------------------------------- 3. earned
def run_earned(args, command: str) -> None:
    """Both scales of the shared table, written atomically to ``earned.csv`` (one header comment line)."""
    tables = [
        earned(
            "bert-base-uncased",
            args.tasks,
            args.poolings,
            args.methods,
            controls=Path(args.results),
            init=init,
        )
        for init in INITS
    ]
    tables.append(
        earned(
            "scratch-bert",
            args.tasks,
            args.poolings,
            args.methods,
            controls=Path(args.results),
        )
    )
    table = pd.concat(tables, ignore_index=True)
    with atomic_path(args.earned_file) as tmp, open(tmp, "w") as f:
        f.write(f"# {command}\n")
        table.to_csv(f, index=False, float_format="%.4f")
    show_earned(table)
    print(f"written: {args.earned_file}")


def show_earned(table: pd.DataFrame) -> None:
    t = table[table["task"].isin(["STSB", "Avg."])]
    cols = [
        "model",
        "checkpoint",
        "pooling",
        "method",
        "task",
        "pretrained",
        "control",
        "control_sd",
        "earned",
        "low",
        "high",
        "pretrained_sd",
    ]
    with pd.option_context("display.width", 250, "display.max_rows", 500):
        print(
            "\nwhat pretraining earns (Spearman x 100; low/high: 95% paired bootstrap, ours vs ours)"
        )
        print(t[cols].to_string(index=False, float_format=lambda v: f"{v:.2f}"))


# ---------------------------------------------------------------------------------------- printing
def show(path: Path) -> None:
    table = controls_table(path)
    if table.empty:
        print("nothing saved yet")
        return
    with pd.option_context(
        "display.width", 250, "display.max_columns", 30, "display.max_colwidth", 70
    ):
        for pooling in sorted(set(table["pooling"])):
            t = table[table["pooling"] == pooling]
            grouped = t.groupby(["shape", "init", "method", "task"])["score"]
            cells = grouped.agg(["mean", "std", "count"])
            text = cells.apply(
                lambda r: (
                    f"{r['mean']:.2f}"
                    + (f" ± {r['std']:.2f}" if r["count"] > 1 else "")
                    + (f" (n={int(r['count'])})" if r["count"] != 3 else "")
                ),
                axis=1,
            )
            wide = text.unstack("task")
            wide = wide[[c for c in TASKS if c in wide.columns]]
            seed_means = with_average(t, ["shape", "init", "method", "seed"])
            full = seed_means[seed_means["task"] == "Avg."].groupby(
                ["shape", "init", "method"]
            )["score"]
            avg = full.agg(["mean", "std", "count"])
            wide["Avg."] = (
                ""
                if avg.empty
                else avg.apply(
                    lambda r: (
                        f"{r['mean']:.2f}"
                        + (f" ± {r['std']:.2f}" if r["count"] > 1 else "")
                        + (f" (n={int(r['count'])})" if r["count"] != 3 else "")
                    ),
                    axis=1,
                ).reindex(wide.index)
            )
            what = {
                "bag": "baselines: a bag of vectors per sentence",
                "-": "baseline: no vectors",
                "(0,)": "baseline: the random network's input-embedding output",
            }.get(pooling, pooling)
            print(
                f"\n{what}: Spearman x 100, mean ± sd over init seeds (n=3 unless shown)"
            )
            print(wide.astype(object).fillna("").to_string())
        for init, label in INITS.items():
            print(
                f"\nwhat pretraining earns, bert-base: published pretrained minus our random init ({label}; "
                "mean of seeds)"
            )
            e = earned("bert-base-uncased", controls=path, init=init)
            e = e[e["task"].isin(["STSB", "Avg."])]
            print(
                e[
                    [
                        "pooling",
                        "method",
                        "task",
                        "pretrained",
                        "control",
                        "control_sd",
                        "control_seeds",
                        "earned",
                        "pretrained_source",
                    ]
                ].to_string(index=False, float_format=lambda v: f"{v:.2f}")
            )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--shapes",
        nargs="+",
        default=["tiny", "mini", "small", "medium", "bert-base"],
        choices=SHAPES,
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--tasks", nargs="+", default=list(TASKS))
    p.add_argument("--poolings", nargs="+", default=list(POOLINGS))
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument(
        "--flow-seeds",
        nargs="+",
        type=int,
        default=None,
        help="fit the flow for these init seeds only",
    )
    p.add_argument("--init", choices=["hf", "trunc"], default="hf")
    p.add_argument(
        "--baselines",
        action="store_true",
        help="item 4: the no-semantics baselines instead",
    )
    p.add_argument("--skip", nargs="*", default=[], help="baselines to skip: layer0")
    p.add_argument(
        "--earned", action="store_true", help="write the what-pretraining-earns table"
    )
    p.add_argument("--earned-file", default=str(EARNED_OUT))
    p.add_argument("--show", action="store_true", help="only print what is saved")
    p.add_argument("--results", default=str(RESULTS_FILE))
    args = p.parse_args(argv)
    command = command_line("controls.py", argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if args.earned:
        return run_earned(args, command)
    if not args.show:
        (run_baselines if args.baselines else run_controls)(args, command)
    show(Path(args.results))


if __name__ == "__main__":
    main()
