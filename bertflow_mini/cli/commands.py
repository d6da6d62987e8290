"""The commands behind ``python -m bertflow_mini …``: each takes the parsed arguments and returns
the exit status (the parser and its argument types are in :mod:`bertflow_mini.cli`)."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

if TYPE_CHECKING:
    import numpy as np

    from bertflow_mini.encoders.encoder import Encoder
    from bertflow_mini.encoders.spec import ModelSpec

MODEL_FORMS = (
    "a short name (scratch-bert, scratch-bert@0/@25/@50, <name>@0 for random weights, <name>+simcse, "
    "all-MiniLM-L6-v2, glove-6B-50d, bert-base-uncased), a Hugging Face hub id, or a folder that exists"
)


def _default_pooling(encoder: Encoder) -> str:
    """Averaged word vectors for GloVe; the paper's first-last average for transformers."""
    return "first-last-avg" if encoder.is_transformer else "avg"


def _load(name: str | ModelSpec) -> Encoder:
    """The encoder called ``name`` (parsed once, here), built first when this machine makes it
    (pretraining, SimCSE). An error about the name itself (it names it: no such folder, not on the
    hub, no such checkpoint) also says what ``--model`` takes; others (missing data while
    training) pass unchanged."""
    from bertflow_mini.encoders.names import build_spec, load_encoder
    from bertflow_mini.encoders.spec import ModelSpec, parse_name

    given = name.name if isinstance(name, ModelSpec) else name
    try:
        spec = parse_name(name)
        build_spec(spec)
        return load_encoder(spec)
    except (OSError, ValueError) as err:
        if repr(given) not in str(err):
            raise
        raise ValueError(f"{err}\n--model takes {MODEL_FORMS}") from None


#: What --model defaults to, said without deciding it: deciding may probe the network, which only
#: a command that needs a model does (never ``import`` or ``--help``).
def _print_table(df: pd.DataFrame) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(df.to_string(float_format=lambda v: f"{v:.2f}"))


def cmd_sts(args: argparse.Namespace) -> int:
    """Raw cosine of one model and pooling on each dataset, both aggregations: the ``none`` row of
    ``reproduce``, scored through the same :class:`~bertflow_mini.evaluation.reproduce.Evaluation`."""
    from bertflow_mini.evaluation.reproduce import Evaluation
    from bertflow_mini.evaluation.sts import results_table, subset_table

    model = args.model
    encoder = _load(model)
    pooling = args.pooling or _default_pooling(encoder)
    evaluation = Evaluation(
        encoder, max_length=args.max_length, batch_size=args.batch_size
    )
    results = [evaluation.score(t, pooling) for t in args.tasks]
    if args.json:
        print(
            json.dumps(
                {
                    "model": model,
                    "pooling": pooling,
                    "results": [asdict(r) for r in results],
                },
                indent=2,
            )
        )
        return 0
    print(
        f"model: {model}   pooling: {pooling}   max_length: {args.max_length}   (Spearman x 100)\n"
    )
    table = pd.concat(
        [results_table(results, "wmean", "wmean"), results_table(results, "all", "all")]
    )
    _print_table(table)
    print("\nper subset:")
    _print_table(subset_table(results).set_index(["task", "subset"]))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from bertflow_mini.encoders.spec import parse_name
    from bertflow_mini.evaluation.methods import default_methods
    from bertflow_mini.evaluation.reproduce import (
        published_rows,
        reproduce,
        word_overlap_row,
    )

    model = args.model
    encoder = _load(model)
    pooling = args.pooling or _default_pooling(encoder)
    methods = args.methods or default_methods(encoder.dim)
    table = reproduce(
        encoder, pooling, methods, args.fit, args.tasks, args.seeds, args.aggregation
    )
    controls = {"word overlap": word_overlap_row(args.tasks, args.aggregation)}
    spec = parse_name(encoder.name)
    scratch = spec.kind == "scratch"
    # scratch-bert: the same network before any training
    if scratch and spec.percent != 0:
        control = reproduce(
            _load("scratch-bert@0"),
            pooling,
            methods,
            args.fit,
            args.tasks,
            args.seeds,
            args.aggregation,
        )
        controls["random init"] = control.formatted().rename(
            index=lambda m: f"scratch-bert@0 (random init): {m}"
        )
    # scratch-bert has no published figures of its own: the paper's bert-base rows give the scale
    published = published_rows(
        "bert-base-uncased" if scratch else encoder.name,
        pooling,
        args.tasks,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "model": model,
                    "pooling": pooling,
                    "fit": args.fit,
                    "aggregation": args.aggregation,
                    "seeds": args.seeds,
                    "mean": table.mean.to_dict(orient="index"),
                    "std": table.std.to_dict(orient="index"),
                    "published": published.to_dict(orient="index"),
                    "controls": {
                        k: v.to_dict(orient="index") for k, v in controls.items()
                    },
                },
                indent=2,
            )
        )
        return 0
    print(
        f"model: {model}   pooling: {pooling}   fit: {args.fit}   aggregation: {args.aggregation}"
        f"   seeds: {args.seeds}   (Spearman x 100)\n"
    )
    _print_table(table.formatted())
    print("\ncontrols (no semantics: how much of a score needs no pretraining at all):")
    _print_table(pd.concat([v.astype(object) for v in controls.values()]))
    if not published.empty:
        which = "bert-base-uncased, for scale: " if scratch else ""
        print(f"\npublished ({which}Li et al. 2020; Su et al. 2021; SBERT; SimCSE):")
        _print_table(published)
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    """Fill the embedding cache for every dataset (so the chapters run on a warm cache)."""
    from bertflow_mini.evaluation.reproduce import embed_task

    encoder = _load(args.model)
    for task in args.tasks:
        emb = embed_task(encoder, task, _default_pooling(encoder))
        print(f"{encoder.name} {task}: {len(emb.sentences)} sentences encoded (cached)")
    return 0


def cmd_pretrain(args: argparse.Namespace) -> int:
    """Pretrain scratch-bert (or a changed recipe) unless the cache already holds it; print its summary."""
    from bertflow_mini.encoders.pretrain import (
        checkpoint,
        run_dir,
        steps_for_minutes,
        training_log,
        with_overrides,
    )

    if args.minutes is not None:
        args.steps = steps_for_minutes(args.minutes)
    fields = (
        "layers",
        "hidden",
        "heads",
        "intermediate",
        "steps",
        "batch_size",
        "lr",
        "corpus",
        "seed",
    )
    recipe = with_overrides(**{f: getattr(args, f) for f in fields})
    checkpoint(100, recipe)
    rows, info = training_log(recipe)
    held = rows[-1]["held_out_loss"]
    print(f"recipe  : {recipe}")
    print(f"folder  : {run_dir(recipe)}  (checkpoints pct-000 pct-025 pct-050 pct-100)")
    print(
        f"corpus  : {info['train_sentences']} training sentences ({info['train_tokens']} wordpieces), "
        f"{info['held_out_sentences']} held out"
    )
    print(
        f"held-out MLM loss {held:.3f} nats (perplexity {math.exp(held):.1f}); unigram entropy "
        f"{info['unigram_entropy']:.3f} nats (perplexity {math.exp(info['unigram_entropy']):.1f}); "
        f"trained in {info['seconds'] / 60:.1f} min"
    )
    return 0


def cmd_simcse(args: argparse.Namespace) -> int:
    """Fine-tune each model with unsupervised SimCSE unless cached, then encode every dataset with it
    and with the base model (what chapter 7 reads). A base model gets every seed the book runs for it
    (:func:`bertflow_mini.encoders.names.simcse_seeds`: 0-2 for scratch-bert and its control); a
    SimCSE name (``<base>+simcse-seed1``) is that one run."""
    import torch

    from bertflow_mini.encoders.names import simcse_seeds, training_log_of
    from bertflow_mini.encoders.spec import parse_name, simcse_name
    from bertflow_mini.evaluation.reproduce import embed_task

    if args.threads:
        torch.set_num_threads(args.threads)
    runs: list[tuple[str, int]] = []  # (base model, SimCSE seed)
    for model in args.models:
        spec = parse_name(model)
        if spec.kind == "simcse":
            runs.append((spec.base, spec.seed))
        else:
            runs += [(model, seed) for seed in simcse_seeds(model)]
    for base_name, seed in runs:
        run = parse_name(simcse_name(base_name, seed))
        name = run.name
        # built (fine-tuned) on first use
        encoder = _load(run)
        # a SimCSE run's log: the loss per step
        losses, info = cast("tuple[np.ndarray, dict[str, Any]]", training_log_of(run))
        print(
            f"{name}: {len(losses)} steps, loss {losses[:10].mean():.3f} -> {losses[-10:].mean():.3f}, "
            f"trained in {info['seconds'] / 60:.1f} min  [{encoder.source}]"
        )
        base = _load(base_name)  # chapter 7 compares the two
        for task in args.tasks:
            for enc in (base, encoder):
                embed_task(enc, task, _default_pooling(enc), progress=False)
        print(
            f"{name}: {len(args.tasks)} datasets encoded (cached), and with {base.name}"
        )
    return 0
