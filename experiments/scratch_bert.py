"""Does scratch-bert behave like BERT, and how much do its pretraining seeds vary? Asserts nothing.

    .venv/bin/python experiments/scratch_bert.py                  # default recipe, seed 0
    .venv/bin/python experiments/scratch_bert.py --seeds 3        # + the spread over pretraining seeds
    .venv/bin/python experiments/scratch_bert.py --set layers=2 --set lr=1e-3   # another recipe
    .venv/bin/python experiments/scratch_bert.py --seeds 3 --set corpus=dictionary+sts \
        --results bertflow_mini/evaluation/results/pretrain-seeds-dictionary.json   # the corpus probe
    .venv/bin/python experiments/scratch_bert.py --compare bertflow_mini/evaluation/results/pretrain-seeds.json \
        bertflow_mini/evaluation/results/pretrain-seeds-dictionary.json            # the corpus decision

``--seeds N`` also writes ``bertflow_mini/evaluation/results/pretrain-seeds.json`` (shipped with the
package; chapter 6 reads it through :func:`bertflow_mini.evaluation.measured.pretrain_seeds`): per
seed, the held-out loss and the STS-B / 7-dataset-mean scores (raw / whitening / flow; last-avg and
first-last-avg). The speed of the pretraining loop against ``transformers.Trainer`` is
``benchmarks/bench_pretrain.py``.

1. BERT-likeness: held-out MLM loss vs the unigram entropy; random-pair cosine of last-avg sentence
   vectors; Spearman(corpus frequency, input-embedding norm) over tokens seen ≥ 5 times;
2. the STS story: STS-B raw / whitening / flow at 0% (random init: the control), 25%, 50%, 100% of
   the steps, the word-overlap baseline, and the 7-dataset table beside the paper's bert-base rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import METHODS, RESULTS, command_line, parse_settings

from bertflow_mini._io import atomic_path
from bertflow_mini.data import TASKS, load_sts
from bertflow_mini.encoders import pretrain
from bertflow_mini.encoders.encoder import encode
from bertflow_mini.encoders.names import load_encoder
from bertflow_mini.evaluation.measured import PRETRAIN_SEEDS_FILE
from bertflow_mini.evaluation.reproduce import published_rows, reproduce
from bertflow_mini.evaluation.sts import score_similarities, word_overlap
from bertflow_mini.geometry.isotropy import mean_random_cosine

#: Where --seeds N goes: the file the package ships.
RESULTS_FILE = RESULTS / PRETRAIN_SEEDS_FILE.name


def show(title: str, df: pd.DataFrame) -> None:
    print(f"\n{title}")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(df.to_string(float_format=lambda v: f"{v:.2f}"))


# ---------------------------------------------------------------------------------------- 1. BERT-likeness
def bert_likeness(recipe) -> dict:
    rows, info = pretrain.training_log(recipe)
    folder = pretrain.run_dir(recipe)
    counts = np.load(folder / "token_counts.npy")
    enc = load_encoder(str(folder / "pct-100"))
    norms = enc.model.get_input_embeddings().weight.detach().norm(dim=1).numpy()
    seen = counts >= 5
    X = encode(enc, load_sts("STSB", "test").sentences(), "last-avg", progress=False)
    held = rows[-1]["held_out_loss"]
    return {
        "held-out MLM loss": held,
        "unigram entropy": info["unigram_entropy"],
        "held-out perplexity": math.exp(held),
        "random-pair cosine (last-avg)": mean_random_cosine(X),
        "rho(frequency, norm), tokens seen >= 5": spearmanr(
            counts[seen], norms[seen]
        ).statistic,
        "tokens seen >= 5": int(seen.sum()),
        "tokens never seen": int((counts == 0).sum()),
        "pretraining minutes": info["seconds"] / 60,
    }


# ---------------------------------------------------------------------------------------- 2. STS
def sts_curve(recipe, pooling: str) -> pd.DataFrame:
    rows = {}
    for pct in pretrain.PERCENTS:
        enc = load_encoder(str(pretrain.run_dir(recipe) / f"pct-{pct:03d}"))
        t = reproduce(enc, pooling, METHODS, tasks=["STSB"], progress=False)
        rows[f"{pct}% of the steps" + (" (random init)" if pct == 0 else "")] = t.mean[
            "STSB"
        ]
    pairs = load_sts("STSB", "test")
    rows["word overlap (no model)"] = pd.Series(
        {
            "none": score_similarities(
                pairs, word_overlap(pairs.sent1, pairs.sent2)
            ).wmean
        }
    )
    return pd.DataFrame(rows).T[list(METHODS)]


def full_table(recipe, pooling: str) -> pd.DataFrame:
    parts = []
    for pct, label in ((100, "scratch-bert"), (0, "random init")):
        enc = load_encoder(str(pretrain.run_dir(recipe) / f"pct-{pct:03d}"))
        t = reproduce(enc, pooling, METHODS, progress=False).mean
        parts.append(t.rename(index=lambda m, label=label: f"{label}: {m}"))
    overlap = {
        t: score_similarities(p, word_overlap(p.sent1, p.sent2)).wmean
        for t in TASKS
        for p in [load_sts(t, "test")]
    }
    overlap["Avg."] = float(np.mean(list(overlap.values())))
    parts.append(pd.DataFrame([overlap], index=["word overlap"]))
    return pd.concat(parts)


def seed_summary(recipe) -> dict:
    """Held-out loss and the STS-B / 7-dataset-mean scores of one pretrained seed, both poolings."""
    rows, _ = pretrain.training_log(recipe)
    enc = load_encoder(str(pretrain.run_dir(recipe) / "pct-100"))
    out = {"held_out_loss": round(rows[-1]["held_out_loss"], 4)}
    for pooling in ("last-avg", "first-last-avg"):
        t = reproduce(enc, pooling, METHODS, progress=False).mean
        out[pooling] = {
            m: {"STSB": round(t.loc[m, "STSB"], 2), "Avg.": round(t.loc[m, "Avg."], 2)}
            for m in METHODS
        }
    return out


def seed_spread(recipes: list, command: str, path: str) -> None:
    """Print mean ± sd over pretraining seeds and write them (JSON) to ``path``."""
    seeds = {str(r.seed): seed_summary(r) for r in recipes}
    for pooling in ("last-avg", "first-last-avg"):
        cells = {
            (m, col): [seeds[s][pooling][m][col] for s in seeds]
            for m in METHODS
            for col in ("STSB", "Avg.")
        }
        table = pd.DataFrame(
            {k: {"mean": np.mean(v), "sd": np.std(v, ddof=1)} for k, v in cells.items()}
        ).T
        show(
            f"{pooling}, 100% checkpoints over seeds {', '.join(seeds)}: mean and sd",
            table.round(2),
        )
    record = {
        "what": f"scratch-bert pretrained with seeds {', '.join(seeds)}; Spearman x 100 on STS-B test "
        "and the 7-dataset mean (reproduce, fit=target)",
        "command": command,
        "recipe_key_seed0": recipes[0].key(),
        "seeds": seeds,
    }
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=1))
    print(f"written: {path}")


def compare_seed_files(paths: list[str]) -> pd.DataFrame:
    """Two ``--seeds N`` results side by side: mean ± sd over pretraining seeds, the difference of the
    means (second minus first), whether it exceeds the larger seed sd, and Welch's t-test p-value."""
    from scipy.stats import ttest_ind

    if len(paths) != 2:
        raise SystemExit(f"--compare takes two result files, got {len(paths)}")
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f)["seeds"])
    rows = {}
    for pooling in ("last-avg", "first-last-avg"):
        for method in METHODS:
            for col in ("STSB", "Avg."):
                a, b = ([s[pooling][method][col] for s in run.values()] for run in runs)
                spread = max(np.std(a, ddof=1), np.std(b, ddof=1))
                rows[(pooling, method, col)] = {
                    "first": f"{np.mean(a):.2f} ± {np.std(a, ddof=1):.2f}",
                    "second": f"{np.mean(b):.2f} ± {np.std(b, ddof=1):.2f}",
                    "second - first": np.mean(b) - np.mean(a),
                    "larger sd": spread,
                    "beyond the spread": "yes"
                    if abs(np.mean(b) - np.mean(a)) > spread
                    else "no",
                    "Welch p": ttest_ind(b, a, equal_var=False).pvalue,
                }
    table = pd.DataFrame(rows).T
    show(
        f"first: {paths[0]}\nsecond: {paths[1]}\n(mean ± sd over pretraining seeds, Spearman x 100)",
        table,
    )
    return table


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="pretrain this many seeds (0, 1, …) for the spread",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="override the recipe's steps (smoke runs)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a recipe field",
    )
    p.add_argument("--pooling", default="last-avg")
    p.add_argument(
        "--results",
        default=str(RESULTS_FILE),
        help="where --seeds N writes",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="RESULTS",
        help="only compare two --seeds result files",
    )
    args = p.parse_args(argv)
    if args.compare:
        compare_seed_files(args.compare)
        return
    changes = {"steps": args.steps, **parse_settings(args.set)}
    recipe = pretrain.with_overrides(**changes)
    print(f"recipe: {recipe}")
    recipes = [
        pretrain.with_overrides(**{**changes, "seed": seed})
        for seed in range(args.seeds)
    ]
    for r in recipes:
        pretrain.checkpoint(100, r)
    show(
        "BERT-likeness (seed 0)",
        pd.DataFrame([bert_likeness(recipe)]).T.rename(columns={0: "value"}),
    )
    show(
        f"STS-B test, {args.pooling}, Spearman x 100, through pretraining (seed 0)",
        sts_curve(recipe, args.pooling),
    )
    if args.seeds > 1:
        seed_spread(recipes, command_line("scratch_bert.py", argv), args.results)
    show(
        f"7 datasets, {args.pooling}, target fit, wmean (seed 0)",
        full_table(recipe, args.pooling),
    )
    show(
        "published, bert-base (Li et al. 2020; Su et al. 2021)",
        published_rows("bert-base-uncased", "last-avg"),
    )


if __name__ == "__main__":
    main()
