"""Self-checks for the chapters' exercises: ``bf.check("2.3", answer)`` says right or wrong.

A student computes an answer in their own cell and calls :func:`check`; it compares the answer with
the value the book's solution computes for the model in use, within a tolerance, and never prints
that value. The expected values are package data (``answers.json``: exercise → model → value and
tolerance), so the check works from a pip install. Each chapter's solution cell is followed by a
hidden cell calling :func:`confirm`, which fails the chapter (for the book's model) when the
solution no longer computes the stored value — the stored key cannot silently go stale.

For a model with no stored answer (another model than the one the book's pages were computed with),
:func:`check` says so and points at the solution instead of guessing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

import numpy as np

from bertflow_mini.chapters.chapter import claim, current_model

ANSWERS = "answers.json"


@dataclass(frozen=True)
class Answer:
    """An exercise's expected value for one model, and how close a right answer must be."""

    value: Any  # a number, a list of numbers, or a string (exact)
    atol: float = 0.0
    rtol: float = 1e-6

    def accepts(self, answer: Any) -> bool:
        """Whether ``answer`` matches: same shape, every number within tolerance, strings equal."""
        if isinstance(self.value, str):
            return (
                isinstance(answer, str) and answer.strip().lower() == self.value.lower()
            )
        try:
            got = np.asarray(answer, dtype=float)
        except (TypeError, ValueError):
            return False
        want = np.asarray(self.value, dtype=float)
        if got.shape != want.shape or not np.all(np.isfinite(got)):
            return False
        return bool(np.all(np.abs(got - want) <= self.atol + self.rtol * np.abs(want)))


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


def expected(exercise: str, model: str | None = None) -> Answer | None:
    """The stored answer to ``exercise`` for ``model`` (default: the chapter's), or None."""
    by_model = answer_key().get(exercise)
    if by_model is None:
        known = ", ".join(sorted(answer_key()))
        raise KeyError(
            f"no exercise {exercise!r} has a self-check; those that do: {known}"
        )
    return by_model.get(model or current_model())


def check(exercise: str, answer: Any) -> bool | None:
    """Say whether ``answer`` to ``exercise`` is right for the model in use, without revealing it.

    Returns True or False, or None when no answer is stored for this model.
    """
    model = current_model()
    key = expected(exercise, model)
    if key is None:
        print(
            f"Exercise {exercise}: no stored answer for {model} (the key holds the book's "
            "model); compare with the solution below."
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
    if not np.all(np.isfinite(got)):
        return " (the answer holds NaN or inf)"
    return ""


def confirm(exercise: str, solution: Any) -> bool:
    """The hidden check under a solution: the stored answer is what the solution computes.

    Strict for the book's model (the chapter fails when the key is stale); a note for another model
    only if a key is stored for it and disagrees.
    """
    key = expected(exercise)
    if key is None:
        return True
    value = solution if isinstance(solution, str) else np.asarray(solution).tolist()
    return claim(
        key.accepts(solution),
        f"the self-check of exercise {exercise} holds the solution's answer",
        f"stored {key.value!r}, the solution computes {value!r}",
    )
