"""Self-checks for the chapters' exercises: ``bf.check("2.3", answer)`` says right or not yet.

A student computes an answer in their own cell and calls :func:`check`; it compares the answer with
the value the book's solution computes for the model in use, within a tolerance, and never prints
that value. Where that value comes from:

* an answer that does not depend on the model (a pen-and-paper result, a toy with a fixed seed) is
  stored once for every model (``answers.json``, model ``"*"``);
* the book's model has its answers stored (package data, so a check is instant); each chapter's
  solution cell is followed by a hidden cell calling :func:`confirm`, which fails the chapter when
  the solution no longer computes the stored value, so the key cannot silently go stale;
* any other model, or a quick run on a part of the data, gets its answer computed on the spot by
  the package calls the solution makes (:mod:`bertflow_mini.chapters.solvers`), once per session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from typing import Any

import numpy as np

from bertflow_mini.chapters import solvers
from bertflow_mini.chapters.chapter import claim, current_model
from bertflow_mini.data.pairs import max_pairs
from bertflow_mini.encoders.names import BOOK_MODEL
from bertflow_mini.encoders.sources import short_name

ANSWERS = "answers.json"
#: The model name under which an answer that is the same for every model is stored.
ANY_MODEL = "*"


@dataclass(frozen=True)
class Answer:
    """An exercise's expected value for one model, and how close a right answer must be."""

    value: Any  # a number, a list of numbers, or a string (exact)
    atol: float = 0.0
    rtol: float = 1e-6

    def accepts(self, answer: Any) -> bool:
        """Whether ``answer`` matches: same shape, every number within tolerance, strings equal.

        Where the solution itself computes NaN or ±inf (a singular covariance on some model), the
        answer must hold the same there."""
        if isinstance(self.value, str):
            return (
                isinstance(answer, str) and answer.strip().lower() == self.value.lower()
            )
        try:
            got = np.asarray(answer, dtype=float)
        except (TypeError, ValueError):
            return False
        want = np.asarray(self.value, dtype=float)
        finite = np.isfinite(want)
        if got.shape != want.shape or not np.array_equal(np.isfinite(got), finite):
            return False
        if not np.array_equal(got[~finite], want[~finite], equal_nan=True):
            return False
        gap = np.abs(got[finite] - want[finite])
        return bool(np.all(gap <= self.atol + self.rtol * np.abs(want[finite])))


@cache
def answer_key() -> dict[str, dict[str, Answer]]:
    """Every stored answer: exercise → model → :class:`Answer` (read once from package data)."""
    raw = json.loads(
        files("bertflow_mini.chapters").joinpath(ANSWERS).read_text("utf-8")
    )
    return {
        exercise: {model: Answer(**spec) for model, spec in by_model.items()}
        for exercise, by_model in raw.items()
        if not exercise.startswith("_")
    }


def stored(exercise: str, model: str | None = None) -> Answer | None:
    """The stored answer to ``exercise`` for ``model`` (default: the chapter's), or None.

    An answer stored for every model always applies; one stored for a model only on its full data
    (a quick run, ``$BERTFLOW_MAX_PAIRS``, scores other pairs)."""
    by_model = answer_key().get(exercise)
    if by_model is None:
        known = ", ".join(sorted(answer_key()))
        raise KeyError(
            f"no exercise {exercise!r} has a self-check; those that do: {known}"
        )
    if ANY_MODEL in by_model:
        return by_model[ANY_MODEL]
    if max_pairs() is not None:
        return None
    return by_model.get(short_name(model or current_model()))


def tolerance(exercise: str) -> Answer:
    """How close a right answer to ``exercise`` must be: the book model's stored tolerance (its
    value is the book model's too)."""
    by_model = answer_key()[exercise]
    return by_model.get(BOOK_MODEL) or next(iter(by_model.values()))


def expected(exercise: str, model: str | None = None) -> Answer | None:
    """The answer to ``exercise`` for ``model`` (default: the chapter's): stored, or computed by the
    solution's package calls (:func:`bertflow_mini.chapters.solvers.solve`); None when neither can be."""
    model = model or current_model()
    key = stored(exercise, model)
    if key is not None or exercise not in solvers.SOLVERS:
        return key
    value = solvers.solve(exercise, model)
    if not isinstance(value, str):
        value = np.asarray(value, dtype=float).tolist()
    return replace(tolerance(exercise), value=value)


def check(exercise: str, answer: Any) -> bool | None:
    """Say whether ``answer`` to ``exercise`` is right for the model in use, without revealing it.

    Returns True or False, or None when no answer can be had for this model.
    """
    model = current_model()
    if stored(exercise, model) is None and (note := solvers.slow(exercise, model)):
        print(f"Exercise {exercise}: computing the answer on {model} ({note}) ...")
    key = expected(exercise, model)
    if key is None:
        print(
            f"Exercise {exercise}: no answer for {model}; compare with the solution below."
        )
        return None
    if key.accepts(answer):
        print(f"Exercise {exercise}: right.")
        return True
    hint = "" if isinstance(key.value, str) else _shape_hint(key.value, answer)
    print(f"Exercise {exercise}: not yet{hint}. Look again, or open the solution.")
    return False


def _shape_hint(want: Any, answer: Any) -> str:
    """A hint that gives nothing away: only a mismatch of shape or a non-number."""
    try:
        got = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return " (the answer should be a number or an array of numbers)"
    if got.shape != np.shape(want):
        return f" (expected shape {np.shape(want)}, got {got.shape})"
    if np.all(np.isfinite(np.asarray(want, dtype=float))) and not np.all(
        np.isfinite(got)
    ):
        return " (the answer holds NaN or inf)"
    return ""


def confirm(exercise: str, solution: Any) -> bool:
    """The hidden check under a solution: the stored answer is what the solution computes.

    Strict for the book's model (the chapter fails when the key is stale); for another model a note
    only when an answer stored for every model disagrees. Nothing is computed here: a model's
    computed answers are the solvers', which the tests hold to the solutions.
    """
    key = stored(exercise)
    if key is None:
        return True
    value = solution if isinstance(solution, str) else np.asarray(solution).tolist()
    return claim(
        key.accepts(solution),
        f"the self-check of exercise {exercise} holds the solution's answer",
        f"stored {key.value!r}, the solution computes {value!r}",
    )


def solution(show: bool) -> None:
    """Let the rest of the running notebook cell show what it prints, displays and draws only when
    ``show``.

    The Colab edition opens each solution cell with it, ``show`` a tick box: *Run all* then computes
    what later cells read without printing the answer under the exercise. Unticked, the cell's
    output is captured (IPython's ``capture_output``) until the cell ends, and the figures it opened
    are closed. Outside an IPython kernel it does nothing.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if show or shell is None:
        return
    import matplotlib.pyplot as plt
    from IPython.utils.capture import capture_output

    before = set(plt.get_fignums())
    hidden = capture_output()
    hidden.__enter__()

    def restore(*_: object) -> None:
        hidden.__exit__(None, None, None)
        for number in set(plt.get_fignums()) - before:
            plt.close(number)
        shell.events.unregister("post_run_cell", restore)

    shell.events.register("post_run_cell", restore)
