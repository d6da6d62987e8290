"""What every chapter's set-up cell does: seed everything, set the figure style, say where the
outputs come from (model, data, device), so a reader always knows what produced the page; and the
:class:`Chapter` it returns, whose methods are the chapter's checks for the model it runs."""

from __future__ import annotations

import os
import random
import warnings
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import torch

from bertflow_mini._device import default_device
from bertflow_mini.chapters import claims, exercises
from bertflow_mini.chapters.plotting import set_style
from bertflow_mini.data.pairs import MAX_PAIRS_ENV, max_pairs
from bertflow_mini.encoders.names import BOOK_MODEL, build_spec, default_model
from bertflow_mini.encoders.spec import parse_name

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
    # fetched from the release or built here: either way in the cache, whose path is no reader's concern
    return "this machine's cache"


@dataclass(frozen=True)
class Chapter:
    """The running chapter, as :func:`setup` returns it (``ch = bf.setup()``): the model its
    outputs come from and the seed it started from. Its methods are the chapter's checks, each
    for this model: :meth:`claim` behind a sentence of prose, :meth:`check` a student's answer to
    an exercise, :meth:`confirm` a solution against the exercise's answer key.

    A page that runs no model but states facts the book's prose relies on (the results page, the
    instructor's page) makes its own, ``bf.Chapter(bf.BOOK_MODEL)``: its claims are strict.
    """

    model: str
    seed: int = 0

    def claim(self, holds: bool, statement: str, detail: object = "") -> bool:
        """The check behind a sentence of prose: ``holds`` says whether ``statement`` is true of
        the outputs just printed. For the book's model a false claim fails the chapter
        (:class:`~bertflow_mini.chapters.claims.ClaimError`); for any other it prints a note under
        the cell and returns False (:func:`bertflow_mini.chapters.claims.claim`)."""
        return claims.claim(self.model, holds, statement, detail)

    def check(self, exercise: str, answer: Any) -> bool | None:
        """Say whether ``answer`` to ``exercise`` (``"2.3"``) is right for this chapter's model,
        without revealing the right one (:func:`bertflow_mini.chapters.exercises.check`)."""
        return exercises.check(exercise, answer, self.model)

    def confirm(self, exercise: str, solution: Any) -> bool:
        """The hidden check under a solution: the answer key holds what ``solution`` computes on
        this chapter's model (:func:`bertflow_mini.chapters.exercises.confirm`)."""
        return exercises.confirm(exercise, solution, self.model)


def setup(model: str | None = None, seed: int = 0) -> Chapter:
    """Seed, style, build the model when this machine makes it and has not yet (fetching the
    book's released weights, else training, saying so and about how long), and print which model
    runs, where it comes from and on which device; returns the :class:`Chapter`, whose ``model``
    is the model's name and whose methods check the chapter's claims and exercises on it.

    ``model=None`` is :func:`bertflow_mini.encoders.names.default_model`: the book's own
    ``scratch-bert`` (or ``$BERTFLOW_MODEL_NAME``), whose outputs the prose describes;
    ``setup("bert-base-uncased")`` runs the paper's model instead.
    """
    seed_everything(seed)
    # tqdm.auto (which transformers uses) warns once, on import, when ipywidgets is missing; text
    # bars are fine, so it is imported here with that warning silenced and the filters restored
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import tqdm.auto  # noqa: F401
    _inline_figures()
    set_style()
    model = model or default_model()
    spec = parse_name(model)
    # the chapter's build step: fetching, pretraining or fine-tuning happens here, never in a lookup
    source = build_spec(spec)
    origin = "GloVe word vectors" if source is None else where_from(source)
    why = (
        "the book's model: its outputs are the ones the text describes"
        if claims.is_book_model(model)
        else f"the text describes {BOOK_MODEL}'s outputs; a sentence that does not hold here says so"
    )
    print(f"model : {model}  ({why}) [{origin}]")
    data = (
        "local mirror ($BERTFLOW_DATA)"
        if os.environ.get("BERTFLOW_DATA")
        else "the hub / official URLs (cached)"
    )
    print(f"data  : {data}")
    if max_pairs() is not None:
        print(
            f"data  : only the first {max_pairs()} pairs of each split (${MAX_PAIRS_ENV}): "
            "not the book's numbers"
        )
    print(
        f"device: {default_device()}   torch {torch.__version__.split('+')[0]}   seed {seed}"
    )
    if spec.bert_base_sized and default_device() == "cpu":
        print(
            f"note  : {model} is bert-base's size; on a CPU a chapter may take an hour "
            "(in Colab: Runtime > Change runtime type > a GPU)"
        )
    return Chapter(model=model, seed=seed)


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
            show(value)  # type: ignore[no-untyped-call]  # unannotated in IPython
        return
    myst_glue(name, value, display=display)


def rounded(values: Table, decimals: int | dict[str, int]) -> Table:
    """``values`` (a DataFrame or Series) rounded for printing, without negative zeros.

    A value such as -0.0004 rounds to -0.0 and would print as "-0.00", a sign the data do not have.
    """
    out = values.round(decimals)
    # adding 0.0 turns -0.0 into 0.0 and leaves every other value as it is
    return out + 0.0
