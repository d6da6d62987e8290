"""What every chapter's set-up cell does: seed everything, set the figure style, say where the
outputs come from (model, data, device), so a reader always knows what produced the page."""

from __future__ import annotations

import os
import random
import re
import textwrap
import warnings
from typing import TypeVar

import numpy as np
import pandas as pd
import torch

from bertflow_mini._device import default_device
from bertflow_mini.chapters.plotting import set_style
from bertflow_mini.data.pairs import MAX_PAIRS_ENV, max_pairs
from bertflow_mini.encoders.names import (
    BOOK_MODEL,
    build,
    default_model,
    is_glove,
    resolve_model,
    why_default,
)
from bertflow_mini.encoders.sources import short_name
from bertflow_mini.evaluation.measured import colab_budget

#: Set to 1 (or true, yes) for a quick run, as ``setup(quick=True)``.
QUICK_ENV = "BERTFLOW_QUICK"
#: The model the Colab budget (``bf.colab_budget()``) was counted for.
BUDGET_MODEL = "bert-base-uncased"

#: A table :func:`rounded` accepts and returns.
Table = TypeVar("Table", pd.DataFrame, pd.Series)


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (CPU and GPU) so a chapter prints the same numbers every run."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _inline_figures() -> None:
    """In a notebook, draw figures inline even when ``MPLBACKEND`` names a non-interactive backend."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python
        return
    shell = get_ipython()
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        shell.run_line_magic("matplotlib", "inline")


def where_from(source: str) -> str:
    """Where a resolved model comes from: the local mirror, this machine's cache, or the hub."""
    mirror = os.environ.get("BERTFLOW_MODELS")
    if not os.path.isdir(source):
        return f"Hugging Face hub ({source})"
    if mirror and os.path.realpath(source).startswith(
        os.path.realpath(mirror) + os.sep
    ):
        return "local mirror ($BERTFLOW_MODELS)"
    return "built on this machine"  # where in the cache is no reader's concern


#: The model of the running chapter (set by :func:`setup`), which :func:`claim` checks against.
_STATE: dict[str, str] = {"model": BOOK_MODEL}
#: The claims that did not hold on a model other than the book's: statement -> detail, in order.
_NOTES: dict[str, str] = {}
#: Whether claims keep their notes for :func:`claims_summary` instead of printing them.
_GATHER: dict[str, bool] = {"on": False}


def quick_requested(quick: bool | None = None) -> bool:
    """Whether this run is a quick one: ``quick`` when given, else ``$BERTFLOW_QUICK``."""
    if quick is not None:
        return bool(quick)
    raw = os.environ.get(QUICK_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise ValueError(f"${QUICK_ENV} must be 1/true/yes or 0/false/no, got {raw!r}")


def quick_pairs() -> int:
    """Pairs per split a quick run keeps: the cap the Colab budget chose so that every chapter
    fits 30 minutes on Colab's CPU with bert-base (``bf.colab_budget().attrs["quick"]``)."""
    return int(colab_budget().attrs["quick"]["pairs"])


def chapter_number() -> str | None:
    """The running notebook's two-digit chapter number, where the front end tells the kernel its
    file (Jupyter Server's ``$JPY_SESSION_NAME``, ``__session__``, VS Code); else None."""
    names = [os.environ.get("JPY_SESSION_NAME", "")]
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # plain Python
        shell = None
    if shell is not None:
        names += [
            str(shell.user_ns.get(k, "")) for k in ("__session__", "__vsc_ipynb_file__")
        ]
    for name in names:
        if found := re.match(r"(\d\d)-", os.path.basename(name)):
            return found.group(1)
    return None


def running_time(cap: int | None, chapter: str | None = None) -> str:
    """The set-up's line on time for bert-base on a CPU: this chapter's (or every chapter's)
    estimated minutes on Colab's CPU for a full run (``cap`` None) or a quick one, from the shipped
    budget; a cap other than the quick run's has no estimate."""
    budget = colab_budget()
    chapter = chapter if chapter in budget.index else None
    rows = budget.loc[[chapter]] if chapter else budget
    where = f"chapter {int(chapter)}" if chapter else "a chapter"

    def span(column: str) -> str:
        low, high = round(rows[column].min()), round(rows[column].max())
        return f"{high}" if low == high else f"{low}-{high}"

    if cap is None:
        return (
            f"time  : {where} takes about {span('Colab CPU (min)')} min on Colab's CPU with "
            f"{BUDGET_MODEL} (estimated; a T4 GPU about {span('T4 (min)')});\n"
            f"        bf.setup(quick=True) runs the first {quick_pairs()} pairs of each split in "
            f"about {span('quick CPU (min)')} min"
        )
    if cap == quick_pairs():
        return (
            f"time  : quick run (bf.setup(quick=True)): {where} takes about "
            f"{span('quick CPU (min)')} min on Colab's CPU\n"
            f"        with {BUDGET_MODEL} (estimated; the full run about {span('Colab CPU (min)')})"
        )
    return f"time  : no estimate for a cap of {cap} pairs (the quick run keeps {quick_pairs()})"


def setup(
    model: str | None = None,
    seed: int = 0,
    quick: bool | None = None,
    chapter: str | None = None,
) -> str:
    """Seed, style, build the model when this machine makes it and has not yet (saying so and
    about how long), and print which model runs, why, where it comes from and on which device;
    returns the model name.

    ``model=None`` picks :func:`bertflow_mini.encoders.names.default_model`: ``$BERTFLOW_MODEL_NAME`` if
    set, else the book's ``scratch-bert`` where a local mirror is configured or the hub is out of
    reach, else (Colab) the paper's ``bert-base-uncased``. A name given here always wins.

    ``quick=True`` (or ``$BERTFLOW_QUICK=1``) makes a quick run for a CPU lab session: it sets
    ``$BERTFLOW_MAX_PAIRS`` to :func:`quick_pairs`, so every data set keeps its first pairs and
    the self-checks answer for that cap; the set-up says the numbers are a quick run's. With
    bert-base on a CPU the set-up also prints the estimated minutes of ``chapter`` (its two-digit
    number, as the Colab edition passes it; else :func:`chapter_number`, else every chapter's).
    """
    if quick_requested(quick):
        os.environ[MAX_PAIRS_ENV] = str(quick_pairs())
    seed_everything(seed)
    # transformers imports tqdm.auto, which warns when ipywidgets is missing; text bars are fine
    warnings.filterwarnings("ignore", message="IProgress not found")
    _inline_figures()
    set_style()
    why = "named in the chapter" if model else why_default()
    model = model or default_model()
    _STATE["model"] = model
    _NOTES.clear()
    # the chapter's build step: pretraining or fine-tuning happens here, never in a lookup
    build(model)
    source = (
        "GloVe word vectors" if is_glove(model) else where_from(resolve_model(model))
    )
    print(f"model : {model}  ({why}) [{source}]")
    data = (
        "local mirror ($BERTFLOW_DATA)"
        if os.environ.get("BERTFLOW_DATA")
        else "the hub / official URLs (cached)"
    )
    print(f"data  : {data}")
    if max_pairs() is not None:
        print(
            f"data  : only the first {max_pairs()} pairs of each split (${MAX_PAIRS_ENV}): a quick run, "
            "not the book's numbers"
        )
    print(
        f"device: {default_device()}   torch {torch.__version__.split('+')[0]}   seed {seed}"
    )
    if short_name(model) == BUDGET_MODEL and default_device() == "cpu":
        print(running_time(max_pairs(), chapter or chapter_number()))
    return model


def current_model() -> str:
    """The model the running chapter set up (the book's model before any :func:`setup`)."""
    return _STATE["model"]


class ClaimError(AssertionError):
    """A sentence of the book's prose no longer holds for the model it was written for."""


def claim(holds: bool, statement: str, detail: object = "") -> bool:
    """The check behind a sentence of prose: ``holds`` says whether ``statement`` is true of the
    outputs just printed.

    For the book's own model (the one the prose was written for) a false claim fails the chapter
    with :class:`ClaimError`; for any other model it prints a visible note (or, after
    :func:`gather_claims`, keeps it for :func:`claims_summary`) and the chapter goes on.
    Returns ``holds``, so a cell can choose its wording from it.
    """
    holds = bool(holds)
    if holds:
        return True
    model = _STATE["model"]
    message = f"{statement}{f' ({detail})' if detail else ''}"
    if short_name(model) == BOOK_MODEL:
        raise ClaimError(
            f"the prose says: {message} — and for {model} it no longer holds"
        )
    _NOTES[statement] = str(detail)  # chapters pass dicts and tables too
    if _GATHER["on"]:
        return False
    print(
        f"NOTE: the text says '{statement}', written for {BOOK_MODEL}; on {model} this does not hold"
        + (f": {detail}" if detail else "")
        + "."
    )
    return False


def gather_claims(on: bool = True) -> None:
    """Keep the notes of claims that fail on another model for :func:`claims_summary` instead of
    printing each where it fails: the Colab edition reads as one text, then lists what differs."""
    _GATHER["on"] = on


def claims_summary(max_lines: int = 12) -> None:
    """Print, once, which sentences of the text (written for the book's model) do not hold on the
    model this run set up, each with what was measured (at most ``max_lines`` lines of it)."""
    model = _STATE["model"]
    if short_name(model) == BOOK_MODEL:
        print(
            f"This run uses {model}, the model the text was written for: every sentence "
            "the hidden checks guard held (one that did not would have stopped the chapter)."
        )
        return
    if not _NOTES:
        print(f"Every sentence the hidden checks guard holds on {model} as well.")
        return
    n = len(_NOTES)
    print(
        f"What differs on {model}: {n} sentence{'s' * (n > 1)} of the text, written for "
        f"{BOOK_MODEL}, {'do' if n > 1 else 'does'} not hold here."
    )
    for i, (statement, detail) in enumerate(_NOTES.items(), 1):
        print(f"\n{i}. {statement}")
        # each measured line wrapped to the width of a notebook's output
        lines = [
            part
            for line in detail.splitlines()
            for part in textwrap.wrap(line, 96, subsequent_indent="  ") or [""]
        ]
        for line in lines[:max_lines]:
            print(f"   {line}")
        if (more := len(lines) - max_lines) > 0:
            print(f"   ... ({more} more line{'s' * (more > 1)})")


def glue(name: str, value: object, display: bool = True) -> None:
    """Paste ``value`` into the chapter's prose as ``{glue}`name``` (myst-nb's ``glue``).

    myst-nb comes with the book's build tools, not with the package; in Colab or a plain Jupyter
    kernel without it the value is only shown (when ``display``), so a chapter runs everywhere.
    """
    # np.float64(0.5) would reach the page as its repr
    if isinstance(value, np.generic):
        value = value.item()
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            try:
                from IPython.display import display as show
            except ImportError:
                # plain Python
                show = print  # type: ignore[assignment]
            show(value)
        return
    myst_glue(name, value, display=display)


def rounded(values: Table, decimals: int | dict[str, int]) -> Table:
    """``values`` (a DataFrame or Series) rounded for printing, without negative zeros.

    A value such as -0.0004 rounds to -0.0 and would print as "-0.00", a sign the data do not have.
    """
    out = values.round(decimals)
    # adding 0.0 turns -0.0 into 0.0 and leaves every other value as it is
    return out + 0.0
