"""Self-checks for the chapters' exercises: ``ch.check("2.3", answer)`` says right or not yet.

A student computes an answer in their own cell and calls the chapter's
:meth:`~bertflow_mini.chapters.chapter.Chapter.check` (``ch`` is what the set-up cell's
``bf.setup()`` returns), which calls :func:`check` with the chapter's model; it compares the answer
with the value the book's solution computes for that model, within a tolerance, and never prints
or returns that value. Where that value comes from:

* an answer that does not depend on the model (a pen-and-paper result, a toy with a fixed seed) is
  stored once for every model (``answers.json``, model ``"*"``);
* the book's model has its answers stored (package data, so a check is instant); each chapter's
  solution cell is followed by a hidden cell calling :func:`confirm` (``ch.confirm``), which fails
  the chapter when the solution no longer computes the stored value, so the key cannot silently go
  stale;
* any other model, or a quick run on a part of the data, gets its answer computed on the spot by
  the package calls the solution makes (:mod:`bertflow_mini.chapters.solvers`), once per session.
  So does the book's model where only a tolerance is stored (0.3): that answer asks for more digits
  than the book's model pretrained on two machines (two CPU families) agrees on, so it is computed
  from the weights the reader runs.

An exercise where the student *builds* something (``ch.check("2.5", whiten)``) has no stored
value: its check draws data of its own, runs the student's function on it and compares the result
with the package's implementation or with autograd, so there is nothing to copy.

Only :func:`check`, :func:`confirm` and :func:`solution` are public: nothing here hands out a key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from typing import Any

import numpy as np

from bertflow_mini.chapters import solvers
from bertflow_mini.chapters.claims import claim, is_book_model
from bertflow_mini.data.pairs import max_pairs
from bertflow_mini.encoders.names import BOOK_MODEL
from bertflow_mini.encoders.spec import short_name

_ANSWERS = "answers.json"
#: The model name under which an answer that is the same for every model is stored.
_ANY_MODEL = "*"


@dataclass(frozen=True)
class _Answer:
    """An exercise's expected value for one model, and how close a right answer must be."""

    value: Any = None  # a number, a list of numbers, a string (exact); None: computed
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
def _answer_key() -> dict[str, dict[str, _Answer]]:
    """Every stored answer: exercise → model → :class:`_Answer` (read once from package data)."""
    raw = json.loads(
        files("bertflow_mini.chapters").joinpath(_ANSWERS).read_text("utf-8")
    )
    return {
        exercise: {model: _Answer(**spec) for model, spec in by_model.items()}
        for exercise, by_model in raw.items()
        if not exercise.startswith("_")
    }


def _stored(exercise: str, model: str) -> _Answer | None:
    """The stored answer to ``exercise`` for ``model``, or None.

    An answer stored for every model always applies; one stored for a model only on its full data
    (a quick run, ``$BERTFLOW_MAX_PAIRS``, scores other pairs)."""
    by_model = _answer_key().get(exercise)
    if by_model is None:
        known = ", ".join(sorted([*_answer_key(), *_BUILDS]))
        raise KeyError(
            f"no exercise {exercise!r} has a self-check; those that do: {known}"
        )
    if _ANY_MODEL in by_model:
        return by_model[_ANY_MODEL]
    if max_pairs() is not None:
        return None
    key = by_model.get(short_name(model))
    return None if key is None or key.value is None else key


def _tolerance(exercise: str) -> _Answer:
    """How close a right answer to ``exercise`` must be: the book model's stored tolerance (its
    value is the book model's too)."""
    by_model = _answer_key()[exercise]
    return by_model.get(BOOK_MODEL) or next(iter(by_model.values()))


def _expected(exercise: str, model: str) -> _Answer | None:
    """The answer to ``exercise`` for ``model``: stored, or computed by the solution's package
    calls (:mod:`bertflow_mini.chapters.solvers`); None when neither can be."""
    key = _stored(exercise, model)
    if key is not None or exercise not in solvers._SOLVERS:
        return key
    value = solvers._solve(exercise, model)
    if not isinstance(value, str):
        value = np.asarray(value, dtype=float).tolist()
    return replace(_tolerance(exercise), value=value)


def check(exercise: str, answer: Any, model: str) -> bool | None:
    """Say whether ``answer`` to ``exercise`` is right for ``model``, without revealing it.

    Returns True or False, or None when no answer can be had for this model.
    """
    if exercise in _BUILDS:
        problem = _BUILDS[exercise](answer)
        _say(exercise, not problem, problem)
        return not problem
    if _stored(exercise, model) is None and (note := solvers._slow(exercise, model)):
        print(f"Exercise {exercise}: computing the answer on {model} ({note}) ...")
    key = _expected(exercise, model)
    if key is None:
        print(
            f"Exercise {exercise}: no answer for {model}; compare with the solution below."
        )
        return None
    right = key.accepts(answer)
    _say(
        exercise, right, "" if isinstance(key.value, str) else _hint(key.value, answer)
    )
    return right


def _say(exercise: str, right: bool, hint: str) -> None:
    if right:
        print(f"Exercise {exercise}: right.")
    else:
        print(f"Exercise {exercise}: not yet{hint}. Look again, or open the solution.")


def _hint(want: Any, answer: Any) -> str:
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


def confirm(exercise: str, solution: Any, model: str) -> bool:
    """The hidden check under a solution: the stored answer is what the solution computes on
    ``model`` (for an exercise that builds something: the solution's function passes its own
    check).

    Strict for the book's model (the chapter fails when the key is stale, or, where only a
    tolerance is stored, when the solver no longer computes what the solution does); for another
    model a note only when an answer stored for every model disagrees. Nothing else is computed
    here: other models' answers are the solvers', which the tests hold to the solutions.
    """
    if exercise in _BUILDS:
        problem = _BUILDS[exercise](solution)
        return claim(
            model,
            not problem,
            f"the solution to exercise {exercise} passes its self-check",
            problem.strip(),
        )
    key = _stored(exercise, model)
    if key is None and max_pairs() is None and is_book_model(model):
        # only a tolerance is stored: the solver's answer
        key = _expected(exercise, model)
    if key is None:
        return True
    value = solution if isinstance(solution, str) else np.asarray(solution).tolist()
    return claim(
        model,
        key.accepts(solution),
        f"the self-check of exercise {exercise} holds the solution's answer",
        f"the solution computes {value!r}, which the stored key does not accept",
    )


# ------------------------------------------------------------ exercises that build something
def _fresh_rng() -> np.random.Generator:
    """A generator seeded from the operating system: each check draws new data, and the
    notebook's own random state (NumPy's, torch's) is left alone."""
    return np.random.default_rng()


def _whiten_problem(whiten: Any) -> str:
    """Exercise 2.5: ``whiten(X) -> (mu, W)`` with ``(X - mu) @ W`` of zero mean and identity
    covariance, on a cloud this check draws (off-centre, correlated, variances 0.04 to 25).

    Any whitening passes (PCA, ZCA, Cholesky: ``W Wᵀ = Σ⁻¹`` is what they share, whatever the
    rotation), the covariance divided by n or by n − 1; "" when right, else a hint."""
    from bertflow_mini.postprocess.whitening import Whitening

    if not callable(whiten):
        return " (pass your function itself: ch.check(..., whiten))"
    rng = _fresh_rng()
    n, d = 2000, 6
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    X = (rng.normal(size=(n, d)) * np.geomspace(0.2, 5, d)) @ rotation.T
    X += rng.normal(3, 1, d)
    try:
        mu, W = whiten(X.copy())
        mu, W = np.asarray(mu, dtype=float), np.asarray(W, dtype=float)
    except NotImplementedError:
        return " (whiten is not written yet)"
    except Exception as error:  # a student's code: any failure is a hint, not a crash
        return f" (whiten raised {type(error).__name__}: {error})"
    if mu.shape != (d,) or W.shape != (d, d):
        return (
            f" (for X of shape {X.shape}, mu should have shape ({d},) and W ({d}, {d}))"
        )
    ref = Whitening().fit(X)
    assert ref.mean is not None and ref.W is not None  # fitted
    if not np.allclose(mu, ref.mean, rtol=0, atol=1e-6 * np.abs(ref.mean).max()):
        return " (mu is not the data's mean)"
    precision = ref.W @ ref.W.T  # Σ⁻¹, shared by every whitening of these data
    gap = np.linalg.norm(W @ W.T - precision) / np.linalg.norm(precision)
    if not gap < 0.01:
        return " ((X - mu) @ W does not have identity covariance)"
    return ""


def _coupling_problem(answer: Any) -> str:
    """Exercise 5.5: ``[coupling, coupling_inverse]`` for the affine coupling
    ``y_a = x_a, y_b = (x_b + t(x_a)) * exp(s(x_a))`` (first half a, second half b):
    ``coupling(x, t, s) -> (y, logdet)``, ``coupling_inverse(y, t, s) -> x``.

    Checked on a small batch in float64 with random ``t`` and ``s`` this check draws: ``y`` against
    the definition, ``coupling_inverse(coupling(x)) == x``, and each sample's ``logdet`` against
    ``log|det J|`` of the Jacobian autograd computes, to float32's precision (a slip is off by far
    more); "" when right, else a hint."""
    import torch
    from torch.autograd.functional import jacobian

    try:
        forward, inverse = answer
    except (TypeError, ValueError):
        return " (pass both functions: ch.check(..., [coupling, coupling_inverse]))"
    if not (callable(forward) and callable(inverse)):
        return " (pass both functions: ch.check(..., [coupling, coupling_inverse]))"
    g = torch.Generator().manual_seed(int(_fresh_rng().integers(2**31)))
    n, d, half = 5, 6, 3

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    Wt, bt, Ws, bs = draw(half, half), draw(half), 0.5 * draw(half, half), draw(half)

    def t(xa: torch.Tensor) -> torch.Tensor:
        return torch.tanh(xa @ Wt + bt)

    def s(xa: torch.Tensor) -> torch.Tensor:
        return 0.5 * torch.tanh(xa @ Ws + bs)

    x = draw(n, d)
    want = torch.cat(
        [x[:, :half], (x[:, half:] + t(x[:, :half])) * s(x[:, :half]).exp()], 1
    )
    try:
        y, logdet = forward(x.clone(), t, s)
        back = inverse(want.clone(), t, s)
        jacobians = [
            jacobian(  # type: ignore[no-untyped-call]  # torch leaves it unannotated
                lambda v: forward(v[None], t, s)[0][0], v
            )
            for v in x
        ]
    except NotImplementedError:
        return " (the coupling or its inverse is not written yet)"
    except Exception as error:  # a student's code: any failure is a hint, not a crash
        return f" (your functions raised {type(error).__name__}: {error})"
    y, logdet, back = (
        torch.as_tensor(v, dtype=torch.float64) for v in (y, logdet, back)
    )
    if y.shape != x.shape or logdet.shape != (n,) or back.shape != x.shape:
        return (
            f" (for x of shape {tuple(x.shape)}, y and the inverse's output have that "
            f"shape and logdet ({n},): one value per row)"
        )
    if not torch.allclose(y, want, atol=1e-5):
        return " (y is not (x_a, (x_b + t(x_a)) * exp(s(x_a))))"
    if not torch.allclose(back, x, atol=1e-5):
        return " (coupling_inverse(coupling(x)) is not x)"
    brute = torch.stack([torch.linalg.slogdet(j)[1] for j in jacobians])
    if not torch.allclose(logdet, brute, atol=1e-5):
        return " (logdet is not log|det| of the Jacobian)"
    return ""


#: Exercises that build something: exercise → its judge ("" when right, else a hint).
_BUILDS: dict[str, Callable[[Any], str]] = {
    "2.5": _whiten_problem,
    "5.5": _coupling_problem,
}


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
