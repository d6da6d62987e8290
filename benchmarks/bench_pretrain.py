"""Does scratch-bert behave like BERT, and is our pretraining loop fast? Prints figures, asserts nothing.

    .venv/bin/python benchmarks/bench_pretrain.py                  # everything, default recipe, seed 0
    .venv/bin/python benchmarks/bench_pretrain.py --seeds 3        # + the spread over pretraining seeds
    .venv/bin/python benchmarks/bench_pretrain.py --only speed     # only ours vs transformers.Trainer
    .venv/bin/python benchmarks/bench_pretrain.py --only story --set layers=2 --set lr=1e-3   # another recipe
    .venv/bin/python benchmarks/bench_pretrain.py --only story --seeds 3 --set corpus=dictionary+sts \
        --results benchmarks/results/pretrain-seeds-dictionary.json                    # the corpus probe
    .venv/bin/python benchmarks/bench_pretrain.py --compare benchmarks/results/pretrain-seeds.json \
        benchmarks/results/pretrain-seeds-dictionary.json                              # the corpus decision

``--seeds N`` also writes benchmarks/results/pretrain-seeds.json (chapter 6 reads it): per seed, the
held-out loss and the 7-dataset table (raw / whitening / flow; last-avg and first-last-avg).

1. speed: tokens/s of our loop (decoder at the masked positions only, length-bucketed batches) vs
   ``transformers.Trainer`` + ``DataCollatorForLanguageModeling`` (logits at every position), same
   shape, sentences, batch size and number of steps;
2. BERT-likeness: held-out MLM loss vs the unigram entropy; random-pair cosine of last-avg sentence
   vectors; Spearman(corpus frequency, input-embedding norm) over tokens seen ≥ 5 times;
3. the STS story: STS-B raw / whitening / flow at 0% (random init: the control), 25%, 50%, 100% of
   the steps, the word-overlap baseline, and the 7-dataset table beside the paper's bert-base rows.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bertflow_mini.encoders import pretrain  # noqa: E402
from bertflow_mini.data.corpus import corpus_sentences, split_held_out  # noqa: E402
from bertflow_mini.data import TASKS, load_sts  # noqa: E402
from bertflow_mini.geometry.isotropy import mean_random_cosine  # noqa: E402
from bertflow_mini.encoders.mlm import length_batches, tokenize, train_step, adamw, warmup_linear  # noqa: E402
from bertflow_mini.encoders.encoder import encode
from bertflow_mini.encoders.names import load_encoder  # noqa: E402
from bertflow_mini.evaluation.reproduce import published_rows, reproduce  # noqa: E402
from bertflow_mini.evaluation.sts import score_similarities, word_overlap  # noqa: E402

METHODS = ("none", "whitening", "flow")


def show(title: str, df: pd.DataFrame) -> None:
    print(f"\n{title}")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(df.to_string(float_format=lambda v: f"{v:.2f}"))


# ---------------------------------------------------------------------------------------- 1. speed
def ours_tokens_per_second(recipe, data, steps: int) -> float:
    from transformers import BertForMaskedLM

    torch.manual_seed(0)
    model = BertForMaskedLM(pretrain.bert_config(recipe, data.vocab_size, data.pad_id)).train()
    gen = torch.Generator().manual_seed(0)
    batches = length_batches([len(s) for s in data.seqs], recipe.batch_size, gen)
    opt = adamw(model, recipe.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_linear(10, steps))
    tokens, start = 0, time.perf_counter()
    for _ in range(steps):
        index = next(batches)
        tokens += sum(len(data.seqs[i]) for i in index)
        train_step(model, opt, sched, data, index, gen)
    return tokens / (time.perf_counter() - start)


def trainer_tokens_per_second(recipe, data, tokenizer, steps: int) -> float:
    """The peer a user would pick: ``Trainer`` + ``DataCollatorForLanguageModeling``, grouped by length."""
    from transformers import BertForMaskedLM, DataCollatorForLanguageModeling, Trainer, TrainingArguments

    examples = [{"input_ids": s.tolist()} for s in data.seqs]
    torch.manual_seed(0)
    model = BertForMaskedLM(pretrain.bert_config(recipe, data.vocab_size, data.pad_id))
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(out, per_device_train_batch_size=recipe.batch_size, max_steps=steps,
                                 learning_rate=recipe.lr, warmup_steps=10, weight_decay=0.01, report_to=[],
                                 save_strategy="no", logging_strategy="no", use_cpu=True, seed=0,
                                 train_sampling_strategy="group_by_length", dataloader_num_workers=0, disable_tqdm=True)
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
        trainer = Trainer(model=model, args=args, train_dataset=examples, data_collator=collator)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    mean_len = float(np.mean([len(s) for s in data.seqs]))
    return steps * recipe.batch_size * mean_len / seconds


def speed(recipe, steps: int) -> None:
    tokenizer = pretrain.load_tokenizer()
    train, _ = split_held_out(corpus_sentences(recipe.corpus), recipe.held_out)
    data = tokenize(train, tokenizer, recipe.max_length)
    torch.set_num_threads(os.cpu_count() or 1)
    ours = ours_tokens_per_second(recipe, data, steps)
    theirs = trainer_tokens_per_second(recipe, data, tokenizer, steps)
    show(f"speed, {steps} steps of batch {recipe.batch_size}, {torch.get_num_threads()} threads "
         "(tokens/s, padding not counted)",
         pd.DataFrame({"tokens/s": [ours, theirs]}, index=["ours", "transformers.Trainer"]))
    print(f"ours / Trainer = {ours / theirs:.2f}x")


# ---------------------------------------------------------------------------------------- 2. BERT-likeness
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
        "held-out MLM loss": held, "unigram entropy": info["unigram_entropy"],
        "held-out perplexity": math.exp(held), "random-pair cosine (last-avg)": mean_random_cosine(X),
        "rho(frequency, norm), tokens seen >= 5": spearmanr(counts[seen], norms[seen]).statistic,
        "tokens seen >= 5": int(seen.sum()), "tokens never seen": int((counts == 0).sum()),
        "pretraining minutes": info["seconds"] / 60,
    }


# ---------------------------------------------------------------------------------------- 3. STS
def sts_curve(recipe, pooling: str) -> pd.DataFrame:
    rows = {}
    for pct in pretrain.PERCENTS:
        enc = load_encoder(str(pretrain.run_dir(recipe) / f"pct-{pct:03d}"))
        t = reproduce(enc, pooling, METHODS, tasks=["STSB"], progress=False)
        rows[f"{pct}% of the steps" + (" (random init)" if pct == 0 else "")] = t.mean["STSB"]
    pairs = load_sts("STSB", "test")
    rows["word overlap (no model)"] = pd.Series(
        {"none": score_similarities(pairs, word_overlap(pairs.sent1, pairs.sent2)).wmean})
    return pd.DataFrame(rows).T[list(METHODS)]


def full_table(recipe, pooling: str) -> pd.DataFrame:
    parts = []
    for pct, label in ((100, "scratch-bert"), (0, "random init")):
        enc = load_encoder(str(pretrain.run_dir(recipe) / f"pct-{pct:03d}"))
        t = reproduce(enc, pooling, METHODS, progress=False).mean
        parts.append(t.rename(index=lambda m: f"{label}: {m}"))
    overlap = {t: score_similarities(p, word_overlap(p.sent1, p.sent2)).wmean
               for t in TASKS for p in [load_sts(t, "test")]}
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
        out[pooling] = {m: {"STSB": round(t.loc[m, "STSB"], 2), "Avg.": round(t.loc[m, "Avg."], 2)} for m in METHODS}
    return out


RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "pretrain-seeds.json")


def seed_spread(recipes: list, command: str, path: str = RESULTS) -> None:
    """Print mean ± sd over pretraining seeds and write them (JSON) to ``path``."""
    seeds = {str(r.seed): seed_summary(r) for r in recipes}
    for pooling in ("last-avg", "first-last-avg"):
        cells = {(m, col): [seeds[s][pooling][m][col] for s in seeds] for m in METHODS for col in ("STSB", "Avg.")}
        table = pd.DataFrame({k: {"mean": np.mean(v), "sd": np.std(v, ddof=1)} for k, v in cells.items()}).T
        show(f"{pooling}, 100% checkpoints over seeds {', '.join(seeds)}: mean and sd", table.round(2))
    record = {"what": f"scratch-bert pretrained with seeds {', '.join(seeds)}; Spearman x 100 on STS-B test "
                      "and the 7-dataset mean (reproduce, fit=target)",
              "command": command, "recipe_key_seed0": recipes[0].key(), "seeds": seeds}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
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
                    "first": f"{np.mean(a):.2f} ± {np.std(a, ddof=1):.2f}", "second": f"{np.mean(b):.2f} ± {np.std(b, ddof=1):.2f}",
                    "second - first": np.mean(b) - np.mean(a), "larger sd": spread,
                    "beyond the spread": "yes" if abs(np.mean(b) - np.mean(a)) > spread else "no",
                    "Welch p": ttest_ind(b, a, equal_var=False).pvalue}
    table = pd.DataFrame(rows).T
    show(f"first: {paths[0]}\nsecond: {paths[1]}\n(mean ± sd over pretraining seeds, Spearman x 100)", table)
    return table


def parse_settings(items: list[str]) -> dict:
    """``["layers=2", "lr=1e-3"]`` → recipe overrides with the recipe's own field types."""
    kinds = {"int": int, "float": float, "str": str}
    fields = {f.name: kinds[str(f.type)] for f in dataclasses.fields(pretrain.Recipe)}
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in fields:
            raise SystemExit(f"--set {item}: no recipe field {key!r} (fields: {', '.join(fields)})")
        out[key] = fields[key](value)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=1, help="pretrain this many seeds (0, 1, …) for the spread")
    p.add_argument("--speed-steps", type=int, default=30)
    p.add_argument("--only", choices=["speed", "story"], default=None)
    p.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override a recipe field")
    p.add_argument("--pooling", default="last-avg")
    p.add_argument("--results", default=RESULTS, help="where --seeds N writes its JSON")
    p.add_argument("--compare", nargs="+", metavar="RESULTS", help="only compare two --seeds result files")
    args = p.parse_args(argv)
    if args.compare:
        compare_seed_files(args.compare)
        return
    changes = {"steps": args.steps, **parse_settings(args.set)}
    recipe = pretrain.with_overrides(**changes)
    print(f"recipe: {recipe}")
    if args.only != "story":
        speed(recipe, args.speed_steps)
    if args.only == "speed":
        return
    recipes = [pretrain.with_overrides(**{**changes, "seed": seed}) for seed in range(args.seeds)]
    for r in recipes:
        pretrain.checkpoint("scratch-bert", r)
    show("BERT-likeness (seed 0)", pd.DataFrame([bert_likeness(recipe)]).T.rename(columns={0: "value"}))
    show(f"STS-B test, {args.pooling}, Spearman x 100, through pretraining (seed 0)", sts_curve(recipe, args.pooling))
    if args.seeds > 1:
        command = "benchmarks/bench_pretrain.py " + " ".join(argv if argv is not None else sys.argv[1:])
        seed_spread(recipes, command, args.results)
    show(f"7 datasets, {args.pooling}, target fit, wmean (seed 0)", full_table(recipe, args.pooling))
    show("published, bert-base (Li et al. 2020; Su et al. 2021)", published_rows("bert-base-uncased", "last-avg"))


if __name__ == "__main__":
    main()
