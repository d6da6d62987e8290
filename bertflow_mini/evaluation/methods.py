"""The names of the table's methods, and the post-processor each one builds.

``none`` (raw cosine), ``flow``, ``whitening``, ``abtt`` (all-but-the-top); ``<name>-<k>`` passes
``k`` (``whitening-256`` keeps 256 directions, ``abtt-3`` removes 3); ``simcse[+<method>]`` runs
``<method>`` on the encoder fine-tuned by SimCSE. A new post-processor is one entry in
:data:`POSTPROCESSORS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np


class PostProcessor(Protocol):
    def fit(self, X: np.ndarray) -> PostProcessor: ...

    def transform(self, X: np.ndarray) -> np.ndarray: ...


def _flow(k: int | None, seed: int, progress: bool) -> PostProcessor:
    from bertflow_mini.postprocess.flow import FlowTransform

    if k is not None:
        raise ValueError(f"the flow keeps every dimension; 'flow-{k}' is not a method")

    return FlowTransform(seed=seed, progress=progress)


def _whitening(k: int | None, seed: int, progress: bool) -> PostProcessor:
    from bertflow_mini.postprocess.whitening import Whitening

    return Whitening(k=k)


def _abtt(k: int | None, seed: int, progress: bool) -> PostProcessor:
    from bertflow_mini.postprocess.whitening import AllButTheTop

    return AllButTheTop(k)


#: Method name → factory ``(k, seed, progress) -> post-processor`` (``None`` = raw cosine).
#: ``"<name>-<k>"`` passes ``k``: ``whitening-256`` keeps 256 directions, ``abtt-3`` removes 3.
POSTPROCESSORS: dict[str, Callable[[int | None, int, bool], PostProcessor | None]] = {
    "none": lambda k, seed, progress: None,
    "flow": _flow,
    "whitening": _whitening,
    "abtt": _abtt,
}
#: Methods whose fit depends on the seed (the others are closed-form): only these get several seeds.
STOCHASTIC = {"flow"}
# the paper's, for bert-base (768-d)
METHODS = (
    "none",
    "flow",
    "whitening",
    "whitening-256",
    "abtt",
)


def parse_method(method: str) -> tuple[str, int | None]:
    """``"whitening-256"`` → ``("whitening", 256)``; ``"flow"`` → ``("flow", None)``."""
    if method in POSTPROCESSORS:
        return method, None
    name, _, k = method.rpartition("-")
    if name in POSTPROCESSORS and k.isdigit() and int(k) > 0:
        return name, int(k)
    raise ValueError(
        f"unknown method {method!r}; use one of {tuple(POSTPROCESSORS)} or <name>-<k>"
    )


def split_method(method: str) -> tuple[bool, str]:
    """``"simcse+whitening"`` → ``(True, "whitening")``, ``"simcse"`` → ``(True, "none")``,
    ``"flow"`` → ``(False, "flow")``: whether a table method runs on the SimCSE encoder
    (:mod:`bertflow_mini.encoders.simcse`), and the post-processor after it."""
    head, _, rest = method.partition("+")
    if head == "simcse":
        return True, rest or "none"
    return False, method


def make_postprocessor(
    method: str, seed: int = 0, progress: bool = False
) -> PostProcessor | None:
    """A fresh, unfitted post-processor for ``method`` (see :data:`POSTPROCESSORS`)."""
    name, k = parse_method(method)
    return POSTPROCESSORS[name](k, seed, progress)


def truncated_whitening(dim: int) -> str:
    """The whitening paper's truncation scaled to the model, as a method name: it kept 256
    of bert-base's 768 dimensions and 384 of bert-large's 1024; other widths keep a third
    (a multiple of 8)."""
    k = {768: 256, 1024: 384}.get(dim, max(8, dim // 3 // 8 * 8))
    return f"whitening-{k}"


def default_methods(dim: int) -> tuple[str, ...]:
    """:data:`METHODS` with the truncation of :func:`truncated_whitening` for width
    ``dim``."""
    return ("none", "flow", "whitening", truncated_whitening(dim), "abtt")
