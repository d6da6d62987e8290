"""Command line: ``python -m bertflow_mini pretrain|simcse|sts|reproduce|encode …``.

Every command but ``simcse`` (which takes ``--models``) takes ``--model``: a short name
(``scratch-bert``, the default: the book's own BERT, pretrained here on first use; ``scratch-bert@0``
… ``@50`` its earlier checkpoints; ``scratch-bert+simcse`` it fine-tuned by SimCSE, trained here on
first use; ``all-MiniLM-L6-v2``; ``glove-6B-50d``; ``bert-base-uncased`` where the hub is
reachable), a hub id or a folder.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict

import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.data.datasets import canonical_task
from bertflow_mini.data.corpus import CORPORA
from bertflow_mini.encoders.names import default_model


def _pooling(text: str):
    """``"first-last-avg"`` stays a name; ``"1,12"`` becomes the layer tuple ``(1, 12)``."""
    if text and all(part.strip().lstrip("-").isdigit() for part in text.split(",")):
        return tuple(int(p) for p in text.split(","))
    return text


def _tasks(text: str) -> list[str]:
    """``"STS-B, sick sts12"`` → ``["STSB", "SICK-R", "STS12"]``; an unknown task names the known ones."""
    try:
        tasks = [canonical_task(t) for t in text.replace(",", " ").split()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not tasks:
        raise argparse.ArgumentTypeError(f"no task given; expected some of {TASKS}")
    return tasks


def _methods(text: str) -> list[str]:
    """``"none, whitening-128,simcse+flow"`` → the list; an unknown method names the accepted forms."""
    from bertflow_mini.encoders.simcse import split_method
    from bertflow_mini.evaluation.reproduce import POSTPROCESSORS, parse_method

    methods = [m.strip() for m in text.split(",") if m.strip()]
    accepted = f"{', '.join(POSTPROCESSORS)}, <method>-<k> (e.g. whitening-256), simcse, simcse+<method>"
    if not methods:
        raise argparse.ArgumentTypeError(f"no method given; accepted: {accepted}")
    for method in methods:
        try:
            parse_method(split_method(method)[1])
        except ValueError:
            raise argparse.ArgumentTypeError(f"unknown method {method!r}; accepted: {accepted}") from None
    return methods


def _load(name: str):
    """The encoder called ``name``. An error about the name itself (it names it: no such folder, not
    on the hub, no such checkpoint) also says what ``--model`` takes; others (missing data while
    training on demand) pass unchanged."""
    from bertflow_mini.encoders.names import load_encoder

    try:
        return load_encoder(name)
    except (OSError, ValueError) as err:
        if repr(name) not in str(err):
            raise
        raise ValueError(f"{err}\n--model takes {MODEL_FORMS}") from None


DEFAULT_MODEL = default_model()
MODEL_FORMS = ("a short name (scratch-bert, scratch-bert@0/@25/@50, <name>@0 for random weights, <name>+simcse, "
               "all-MiniLM-L6-v2, glove-6B-50d, bert-base-uncased), a Hugging Face hub id, or a folder that exists")


def _default_pooling(encoder) -> str:
    """Averaged word vectors for GloVe; the paper's first-last average for transformers."""
    return "first-last-avg" if encoder.is_transformer else "avg"


def _model(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"{MODEL_FORMS} (default: {DEFAULT_MODEL})")


def _common(p: argparse.ArgumentParser) -> None:
    _model(p)
    p.add_argument("--pooling", type=_pooling, default=None,
                   help="cls | last-avg | first-last-avg | last2avg | max | min | <cls|mean|max|min>-last<k>-<avg|concat> "
                        "| comma-separated hidden_states indices (GloVe: avg); checked once the model is loaded")
    p.add_argument("--tasks", type=_tasks, default=list(TASKS), help=f"some of {' '.join(TASKS)} (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _print_table(df: pd.DataFrame) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(df.to_string(float_format=lambda v: f"{v:.2f}"))


def cmd_sts(args: argparse.Namespace) -> int:
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.evaluation.sts import evaluate, results_table, subset_table

    model = args.model
    encoder = _load(model)
    pooling = args.pooling or _default_pooling(encoder)
    embed = lambda s: encode(encoder, s, pooling, max_length=args.max_length, batch_size=args.batch_size)  # noqa: E731
    results = evaluate(embed, args.tasks)
    if args.json:
        print(json.dumps({"model": model, "pooling": pooling, "results": [asdict(r) for r in results]}, indent=2))
        return 0
    print(f"model: {model}   pooling: {pooling}   max_length: {args.max_length}   (Spearman x 100)\n")
    table = pd.concat([results_table(results, "wmean", "wmean"), results_table(results, "all", "all")])
    _print_table(table)
    print("\nper subset:")
    _print_table(subset_table(results).set_index(["task", "subset"]))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from bertflow_mini.encoders.pretrain import parse_name
    from bertflow_mini.evaluation.reproduce import (
        default_methods,
        published_rows,
        reproduce,
        word_overlap_row,
    )

    model = args.model
    encoder = _load(model)
    pooling = args.pooling or _default_pooling(encoder)
    methods = args.methods or default_methods(encoder.dim)
    table = reproduce(encoder, pooling, methods, args.fit, args.tasks, args.seeds, args.aggregation)
    controls = {"word overlap": word_overlap_row(args.tasks, args.aggregation)}
    if parse_name(encoder.name) not in (None, 0):  # scratch-bert: the same network before any training
        control = reproduce(_load("scratch-bert@0"), pooling, methods, args.fit, args.tasks, args.seeds,
                            args.aggregation)
        controls["random init"] = control.formatted().rename(index=lambda m: f"scratch-bert@0 (random init): {m}")
    # scratch-bert has no published figures of its own: the paper's bert-base rows give the scale
    published = published_rows("bert-base-uncased" if parse_name(encoder.name) is not None else encoder.name,
                               pooling, args.tasks)
    if args.json:
        print(json.dumps({
            "model": model, "pooling": pooling, "fit": args.fit, "aggregation": args.aggregation,
            "seeds": args.seeds, "mean": table.mean.to_dict(orient="index"), "std": table.std.to_dict(orient="index"),
            "published": published.to_dict(orient="index"),
            "controls": {k: v.to_dict(orient="index") for k, v in controls.items()},
        }, indent=2))
        return 0
    print(f"model: {model}   pooling: {pooling}   fit: {args.fit}   aggregation: {args.aggregation}"
          f"   seeds: {args.seeds}   (Spearman x 100)\n")
    _print_table(table.formatted())
    print("\ncontrols (no semantics: how much of a score needs no pretraining at all):")
    _print_table(pd.concat([v.astype(object) for v in controls.values()]))
    if not published.empty:
        which = "bert-base-uncased, for scale: " if parse_name(encoder.name) is not None else ""
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
    fields = ("layers", "hidden", "heads", "intermediate", "steps", "batch_size", "lr", "corpus", "seed")
    recipe = with_overrides(**{f: getattr(args, f) for f in fields})
    checkpoint("scratch-bert", recipe)
    rows, info = training_log(recipe)
    held = rows[-1]["held_out_loss"]
    print(f"recipe  : {recipe}")
    print(f"folder  : {run_dir(recipe)}  (checkpoints pct-000 pct-025 pct-050 pct-100)")
    print(f"corpus  : {info['train_sentences']} training sentences ({info['train_tokens']} wordpieces), "
          f"{info['held_out_sentences']} held out")
    print(f"held-out MLM loss {held:.3f} nats (perplexity {math.exp(held):.1f}); unigram entropy "
          f"{info['unigram_entropy']:.3f} nats (perplexity {math.exp(info['unigram_entropy']):.1f}); "
          f"trained in {info['seconds'] / 60:.1f} min")
    return 0


def cmd_simcse(args: argparse.Namespace) -> int:
    """Fine-tune each model with unsupervised SimCSE unless cached, then encode every dataset with it
    and with the base model (what chapter 7 reads)."""
    import torch

    from bertflow_mini.encoders.names import training_log_of
    from bertflow_mini.encoders.simcse import SUFFIX
    from bertflow_mini.evaluation.reproduce import embed_task

    for model in args.models:
        name = model if model.endswith(SUFFIX) else model + SUFFIX
        if args.threads:
            torch.set_num_threads(args.threads)  # simcse.train_and_save keeps this setting
        encoder = _load(name)  # trains on first use (bertflow_mini.encoders.names.resolve_model)
        losses, info = training_log_of(name)
        print(f"{name}: {len(losses)} steps, loss {losses[:10].mean():.3f} -> {losses[-10:].mean():.3f}, "
              f"trained in {info['seconds'] / 60:.1f} min  [{encoder.source}]")
        base = _load(name[: -len(SUFFIX)])  # chapter 7 compares the two
        for task in args.tasks:
            for enc in (base, encoder):
                embed_task(enc, task, _default_pooling(enc), progress=False)
        print(f"{name}: {len(args.tasks)} datasets encoded (cached), and with {base.name}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bertflow_mini", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pretrain", help="pretrain scratch-bert, the book's own BERT (MLM, offline)")
    for flag, kind in (("layers", int), ("hidden", int), ("heads", int), ("intermediate", int),
                       ("batch-size", int), ("lr", float), ("seed", int)):
        p.add_argument(f"--{flag}", type=kind, default=None, help="change the recipe (default: the book's)")
    p.add_argument("--corpus", choices=CORPORA, default=None,
                   help="wordnet+sts (default: gloss parts + the STS/SICK sentences); dictionary+sts (one synset per "
                        "sequence, headwords first); wordnet or dictionary alone: no evaluation sentences, even unlabelled")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=None, help="change the recipe (default: the book's)")
    length.add_argument("--minutes", type=float, default=None,
                        help="train about this long on a 2-core CPU (converted to --steps before training)")
    p.set_defaults(func=cmd_pretrain)
    p = sub.add_parser("sts", help="cosine-similarity STS evaluation of one model and pooling")
    _common(p)
    p.add_argument("--max-length", type=int, default=64, help="tokens per sentence (the paper's 64)")
    p.add_argument("--batch-size", type=int, default=64)
    p.set_defaults(func=cmd_sts)
    p = sub.add_parser("reproduce", help="the paper's table: post-processors fitted without labels, then STS")
    _common(p)
    p.add_argument("--methods", type=_methods, default=None,
                   help="comma-separated: none, flow, whitening, whitening-<k>, abtt, simcse, "
                        "simcse+<method> (default: the first five, "
                        "k = 256 for bert-base, 384 for bert-large, a third of the width otherwise)")
    p.add_argument("--fit", choices=["target", "train", "other"], default="target",
                   help="fit on the dataset's own sentences (the paper), its training sentences, or "
                        "other datasets' training sentences only (the role of the paper's NLI fit)")
    p.add_argument("--seeds", type=int, default=1, help="repeat the flow with N seeds: mean ± std")
    p.add_argument("--aggregation", choices=["wmean", "all"], default="wmean")
    p.set_defaults(func=cmd_reproduce)
    p = sub.add_parser("simcse", help="fine-tune with unsupervised SimCSE (cached), then encode every dataset")
    p.add_argument("--models", nargs="+", default=[DEFAULT_MODEL, f"{DEFAULT_MODEL}@0"],
                   help=f"base models (default: {DEFAULT_MODEL} and its random-init control @0)")
    p.add_argument("--tasks", type=_tasks, default=list(TASKS))
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: every core; 1 is faster on a machine busy with other work)")
    p.set_defaults(func=cmd_simcse)
    p = sub.add_parser("encode", help="encode every dataset once, filling the embedding cache")
    _model(p)
    p.add_argument("--tasks", type=_tasks, default=list(TASKS))
    p.set_defaults(func=cmd_encode)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (OSError, ValueError) as err:  # missing data/model, bad input: one clear line, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2
