"""The one place a model *name* becomes a folder of weights, and an :class:`Encoder`.

:func:`resolve_model` looks a name up and never trains: a folder or the mirror
(``$BERTFLOW_MODELS/<short name>``) first, then the grammar of :mod:`.spec` (the book's pretrained
``scratch-bert``, ``+simcse`` runs and ``@0`` controls in the cache, MultiBERTs and the miniatures
on the hub), else a hub id. A name built on this machine and not built yet is a
:class:`~bertflow_mini.encoders.runs.NotBuiltError` saying how to build it. :func:`build` is that
step: it pretrains, fine-tunes or initialises what a name needs, saying so and about how long.
:func:`load_encoder` loads any name, initialising a random-init control (seconds, no training)
when it is missing.

``scratch-bert@0`` is the pretraining run's own step 0, so the control of the book's model is the very
network its training started from; every other ``@0`` is built by
:mod:`bertflow_mini.encoders.random_init`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertflow_mini._device import default_device
from bertflow_mini.encoders import pretrain, simcse
from bertflow_mini.encoders.encoder import Encoder
from bertflow_mini.encoders.loading import load_from, load_glove_encoder, local_folder
from bertflow_mini.encoders.random_init import (  # noqa: F401 (parameter_count: re-exported)
    parameter_count,
    random_init,
    random_init_folder,
)
from bertflow_mini.encoders.runs import NotBuiltError
from bertflow_mini.encoders.spec import (  # noqa: F401 (MULTIBERTS_STEPS: re-exported)
    BERT_BASE,
    MULTIBERTS_STEPS,
    ModelSpec,
    multiberts,
    parse_name,
    short_name,
)
from bertflow_mini.encoders.spec import control_of as control_of

if TYPE_CHECKING:
    import numpy as np

#: The model the book's pages are computed with, and the paper's model (one switch away).
BOOK_MODEL = pretrain.NAME
PAPER_MODEL = BERT_BASE
#: A small BERT-style encoder fine-tuned for similarity: the book's contrast.
CONTRAST_MODEL = "all-MiniLM-L6-v2"
#: Set it to a model name to make that the default of every chapter and command.
MODEL_ENV = "BERTFLOW_MODEL_NAME"


def default_model() -> str:
    """The model a chapter or command uses when none is named: ``$BERTFLOW_MODEL_NAME`` when set,
    else the book's own ``scratch-bert`` (Colab included), the model the prose was written for."""
    return os.environ.get(MODEL_ENV) or BOOK_MODEL


def checkpoints_along_training(model: str | ModelSpec) -> list[tuple[str, str]]:
    """(label, name) of checkpoints of ``model`` along its pretraining, from random init to the end:
    scratch-bert's ``@0/@25/@50/@100``; for bert-base-uncased, MultiBERTs seed 0 at a handful of steps
    and the released model; for any other model, its ``@0`` control and itself."""
    spec = parse_name(model)
    if spec.short == BOOK_MODEL:
        return [(f"{p}%", f"{BOOK_MODEL}@{p}") for p in pretrain.PERCENTS]
    if spec.short == PAPER_MODEL:
        steps = (0, 20, 200, 2000)
        return [(f"MultiBERTs {k}k", multiberts(k)) for k in steps] + [
            (PAPER_MODEL, spec.name)
        ]
    return [("random init", control_of(spec.name)), ("pretrained", spec.name)]


# ---------------------------------------------------------------------------------------------- the map
def resolve_model(name: str | ModelSpec) -> str:
    """Where ``name`` loads from: a folder or a hub id. Never trains: a name built here and not
    built yet is a :class:`NotBuiltError` that says how to build it (:func:`build`)."""
    return _resolve(parse_name(name), initialise=False)


def source_of(name: str | ModelSpec) -> str:
    """:func:`resolve_model` for a loader: a missing random-init control is initialised first
    (seconds, no training); a model that needs training must be built (:func:`build`)."""
    return _resolve(parse_name(name), initialise=True)


def _resolve(spec: ModelSpec, initialise: bool) -> str:
    """:func:`resolve_model`; ``initialise`` builds a missing random-init control (no training)."""
    if spec.kind == "glove":
        raise ValueError(
            f"{spec.name} is the GloVe baseline, not a folder of weights: "
            f"use load_encoder({spec.name!r})"
        )
    # an explicit folder (a missing path is an error), then the mirror
    folder = local_folder(spec.name)
    if folder is not None:
        return str(folder)
    if spec.kind == "simcse":
        try:
            base_source = _resolve(spec.of, initialise=False)
        except NotBuiltError:
            raise NotBuiltError(
                f"{spec.name} is not built yet, nor is its base {spec.base}: "
                + simcse.how_to_build(spec.name, simcse.config_for(spec.seed))
            ) from None
        return str(simcse.built_folder(spec, base_source))
    if spec.kind == "scratch":
        return str(pretrain.checkpoint_folder(spec.percent))
    if spec.kind == "random":
        if initialise:
            return str(random_init(spec.base, spec.seed, spec.init))
        how = (
            f"{spec.name} is not built yet: build it with bf.build({spec.name!r}) "
            "(it draws the network's weights: seconds, no training)"
        )
        try:  # a lookup reads local files only: the config from the mirror or HF's cache
            found = random_init_folder(
                spec.base, spec.seed, spec.init, local_only=True
            )[0]
        except OSError:
            raise NotBuiltError(how) from None
        if not found.is_dir():
            raise NotBuiltError(how)
        return str(found)
    return spec.on_the_hub


def build(name: str | ModelSpec, *, progress: bool = True) -> str | None:
    """Build ``name`` where this machine makes it: ``scratch-bert`` and its ``+simcse`` runs are
    fetched from the book's release (:mod:`bertflow_mini.encoders.release`), else pretrained or
    fine-tuned here (the base first); an ``@0`` control is initialised. Each says what it does and
    about how long. A name already built, mirrored or on the hub returns at once. Returns where it
    loads from (:func:`resolve_model`'s answer), or ``None`` for GloVe (no network to build).
    A reader's call, with a name; a caller that has parsed it already calls :func:`build_spec`."""
    return build_spec(parse_name(name), progress=progress)


def build_spec(spec: ModelSpec, *, progress: bool = True) -> str | None:
    """:func:`build` for a parsed name (``setup`` and the CLI parse once, at their boundary)."""
    if spec.kind == "glove":
        return None
    # the name's lineage from the top (a SimCSE run, then its base) down to the first step that is
    # in a folder or the mirror: that one is where building starts, and nothing below it is built
    source = ""
    todo: list[ModelSpec] = []
    for step in reversed(spec.lineage):
        folder = local_folder(step.name)
        if folder is not None:
            source = str(folder)
            break
        todo.insert(0, step)
    for step in todo:  # base first
        if step.kind == "scratch":
            source = str(pretrain.checkpoint(step.percent, progress=progress))
        elif step.kind == "random":
            source = str(random_init(step.base, step.seed, step.init))
        elif step.kind == "simcse":
            source = str(simcse.build(step, source, progress=progress))
        else:
            source = step.on_the_hub
    return source


def load_encoder(name: str | ModelSpec, device: str | None = None) -> Encoder:
    """Load ``name`` (any name :func:`resolve_model` takes) ready for
    :func:`bertflow_mini.encoders.encoder.encode`, on ``device`` (default: a GPU when there is one).
    A missing random-init control is initialised first; a model that needs training is not
    trained here (:func:`build`)."""
    spec = parse_name(name)
    if spec.kind == "glove":
        return load_glove_encoder(spec.name)
    source = _resolve(spec, initialise=True)
    return load_from(source, spec.name, device or default_device())


#: SimCSE training seeds the book runs for its own model and that model's control (chapter 7)
SIMCSE_SEEDS = (0, 1, 2)


def simcse_seeds(model: str) -> tuple[int, ...]:
    """The SimCSE seeds the book fine-tunes ``model`` with: :data:`SIMCSE_SEEDS` for the book's own
    model and its random-init control (about two CPU minutes a run), seed 0 alone for any other
    model (``bert-base-uncased``: a run wants a GPU)."""
    return (
        SIMCSE_SEEDS
        if short_name(model) in (BOOK_MODEL, control_of(BOOK_MODEL))
        else (0,)
    )


@lru_cache(maxsize=4)
def _tuned(
    name: str, fingerprint: str, config: simcse.SimCSEConfig, device: str
) -> Encoder:
    tuned = parse_name(simcse.simcse_name(name, config.seed))
    build_spec(tuned)
    return load_encoder(tuned, device)


def simcse_encoder(encoder: Encoder, seed: int = 0) -> Encoder:
    """The SimCSE-fine-tuned twin of a loaded ``encoder``, training seed ``seed``: built (fine-tuned,
    with a message) when it is not cached, then loaded once."""
    encoder.require_transformer("SimCSE (it fine-tunes the weights)")
    config = simcse.config_for(seed)
    return _tuned(encoder.name, encoder.fingerprint, config, encoder.device)


def training_log_of(
    name: str | ModelSpec,
) -> tuple[np.ndarray, dict[str, Any]] | tuple[list[dict[str, float]], dict[str, Any]]:
    """The training log of a trained checkpoint name: scratch-bert's curve and facts, or a SimCSE
    model's loss per step and facts. A lookup: a run not built yet is a :class:`NotBuiltError`
    that says how to build it (:func:`build`)."""
    spec = parse_name(name)
    if spec.kind == "simcse":
        return simcse.read_training_log(Path(_resolve(spec, initialise=False)))
    if spec.kind == "scratch":
        return pretrain.training_log()
    raise ValueError(f"{spec.name!r} was not trained by this package: no training log")
