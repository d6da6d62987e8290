"""Command line: ``python -m bertflow_mini pretrain|simcse|sts|reproduce|encode …``.

Every command but ``simcse`` (which takes ``--models``) takes ``--model``: a short name
(``scratch-bert``, the default: the book's own BERT, pretrained here on first use; ``scratch-bert@0``
… ``@50`` its earlier checkpoints; ``scratch-bert+simcse`` it fine-tuned by SimCSE, trained here on
first use (each command builds its model: :func:`bertflow_mini.encoders.names.build`); ``all-MiniLM-L6-v2``; ``glove-6B-50d``; ``bert-base-uncased`` where the hub is
reachable), a hub id or a folder.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bertflow_mini.cli.commands import (
    MODEL_FORMS,
    cmd_encode,
    cmd_pretrain,
    cmd_reproduce,
    cmd_simcse,
    cmd_sts,
)
from bertflow_mini.data import TASKS
from bertflow_mini.data.corpus import CORPORA
from bertflow_mini.data.pairs import canonical_task
from bertflow_mini.encoders.names import default_model


def _pooling(text: str) -> str | tuple[int, ...]:
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
    from bertflow_mini.evaluation.methods import (
        POSTPROCESSORS,
        parse_method,
        split_method,
    )

    methods = [m.strip() for m in text.split(",") if m.strip()]
    accepted = f"{', '.join(POSTPROCESSORS)}, <method>-<k> (e.g. whitening-256), simcse, simcse+<method>"
    if not methods:
        raise argparse.ArgumentTypeError(f"no method given; accepted: {accepted}")
    for method in methods:
        try:
            parse_method(split_method(method)[1])
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"unknown method {method!r}; accepted: {accepted}"
            ) from None
    return methods


DEFAULT_MODEL_HELP = (
    "$BERTFLOW_MODEL_NAME; else scratch-bert with a local mirror or offline, "
    "bert-base-uncased online"
)


def _model(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", default=None, help=f"{MODEL_FORMS} (default: {DEFAULT_MODEL_HELP})"
    )


def _common(p: argparse.ArgumentParser) -> None:
    _model(p)
    p.add_argument(
        "--pooling",
        type=_pooling,
        default=None,
        help="cls | last-avg | first-last-avg | last2avg | max | min | <cls|mean|max|min>-last<k>-<avg|concat> "
        "| comma-separated hidden_states indices (GloVe: avg); checked once the model is loaded",
    )
    p.add_argument(
        "--tasks",
        type=_tasks,
        default=list(TASKS),
        help=f"some of {' '.join(TASKS)} (default: all)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bertflow_mini", description=__doc__
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "pretrain", help="pretrain scratch-bert, the book's own BERT (MLM, offline)"
    )
    for flag, kind in (
        ("layers", int),
        ("hidden", int),
        ("heads", int),
        ("intermediate", int),
        ("batch-size", int),
        ("lr", float),
        ("seed", int),
    ):
        p.add_argument(
            f"--{flag}",
            type=kind,
            default=None,
            help="change the recipe (default: the book's)",
        )
    p.add_argument(
        "--corpus",
        choices=CORPORA,
        default=None,
        help="wordnet+sts (default: gloss parts + the STS/SICK sentences); dictionary+sts (one synset per "
        "sequence, headwords first); wordnet or dictionary alone: no evaluation sentences, even unlabelled",
    )
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "--steps",
        type=int,
        default=None,
        help="change the recipe (default: the book's)",
    )
    length.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="train about this long on a 2-core CPU (converted to --steps before training)",
    )
    p.set_defaults(func=cmd_pretrain)
    p = sub.add_parser(
        "sts", help="cosine-similarity STS evaluation of one model and pooling"
    )
    _common(p)
    p.add_argument(
        "--max-length",
        type=int,
        default=64,
        help="tokens per sentence (the paper's 64)",
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.set_defaults(func=cmd_sts)
    p = sub.add_parser(
        "reproduce",
        help="the paper's table: post-processors fitted without labels, then STS",
    )
    _common(p)
    p.add_argument(
        "--methods",
        type=_methods,
        default=None,
        help="comma-separated: none, flow, whitening, whitening-<k>, abtt, simcse, "
        "simcse+<method> (default: the first five, "
        "k = 256 for bert-base, 384 for bert-large, a third of the width otherwise)",
    )
    p.add_argument(
        "--fit",
        choices=["target", "train", "other"],
        default="target",
        help="fit on the dataset's own sentences (the paper), its training sentences, or "
        "other datasets' training sentences only (the role of the paper's NLI fit)",
    )
    p.add_argument(
        "--seeds", type=int, default=1, help="repeat the flow with N seeds: mean ± std"
    )
    p.add_argument("--aggregation", choices=["wmean", "all"], default="wmean")
    p.set_defaults(func=cmd_reproduce)
    p = sub.add_parser(
        "simcse",
        help="fine-tune with unsupervised SimCSE (cached), then encode every dataset",
    )
    p.add_argument(
        "--models",
        nargs="+",
        default=None,
        help=f"base models (default: the default model, {DEFAULT_MODEL_HELP}, and its "
        "random-init control @0)",
    )
    p.add_argument("--tasks", type=_tasks, default=list(TASKS))
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads for encoding (default: every core); the fine-tuning itself always "
        "uses 2, since the thread count changes the trained weights",
    )
    p.set_defaults(func=cmd_simcse)
    p = sub.add_parser(
        "encode", help="encode every dataset once, filling the embedding cache"
    )
    _model(p)
    p.add_argument("--tasks", type=_tasks, default=list(TASKS))
    p.set_defaults(func=cmd_encode)
    return parser


def _fill_default_models(args: argparse.Namespace) -> None:
    """``--model`` / ``--models`` left out: the default model (:func:`default_model`), decided now."""
    if getattr(args, "model", "") is None:
        args.model = default_model()
    if getattr(args, "models", "") is None:
        args.models = [default_model(), f"{default_model()}@0"]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _fill_default_models(args)
    try:
        status: int = args.func(args)
        return status
    # missing data/model, bad input: one clear line, no traceback
    except (
        OSError,
        ValueError,
    ) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
