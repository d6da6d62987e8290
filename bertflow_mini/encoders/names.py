"""The one place a model *name* becomes a folder of weights, and an :class:`Encoder`.

Every chapter, command and test asks for models by name; this module alone decides where the name
leads, in this order:

=================================  ==================================================================
name                               resolves to
=================================  ==================================================================
``/a/folder``, ``./x``, ``~/x``    that folder (a missing one is an error naming the path)
``glove-6B-50d``                   the GloVe baseline (:mod:`bertflow_mini.encoders.glove`)
any short name                     ``$BERTFLOW_MODELS/<short name>`` when the mirror has it
``scratch-bert``, ``…@25``         the book's own BERT, pretrained on demand (:mod:`.pretrain`)
``<name>+simcse``                  ``<name>`` fine-tuned by SimCSE on demand (:mod:`.simcse`)
``<name>+simcse-seed2``            the same with SimCSE training seed 2 (:func:`simcse_seeds`)
``<name>@0``, ``<name>@0-seed3``   ``<name>``'s own config with *random* weights (init seed 0 or 3):
                                   the control for every gain; nothing pretrained is downloaded
``<name>@0-trunc``, ``…-trunc-seed3``  the same with Google's initialiser (truncated normal)
``bert-tiny`` … ``bert-medium``    Turc et al.'s BERT miniatures (hub), whose shapes ``@0`` builds offline
``multiberts-seed_S-step_Kk``      Google's MultiBERTs checkpoints (Sellam et al. 2022, hub)
anything else                      a Hugging Face hub id (``bert-base-uncased``, ``org/model``)
=================================  ==================================================================

``scratch-bert@0`` is the pretraining run's own step 0, so the control of the book's model is the very
network its training started from; every other ``@0`` is built by
:mod:`bertflow_mini.encoders.random_init`.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from bertflow_mini._device import default_device
from bertflow_mini.encoders import pretrain, simcse
from bertflow_mini.encoders.cache import weights_fingerprint
from bertflow_mini.encoders.encoder import Encoder
from bertflow_mini.encoders.loading import load_from, load_glove_encoder
from bertflow_mini.encoders.random_init import (  # noqa: F401 (INITIALISERS, parameter_count: re-exported)
    INITIALISERS,
    SHAPES,
    check_initialiser,
    parameter_count,
    random_init,
)
from bertflow_mini.encoders.sources import (
    MODELS_ENV,
    hub_id,
    hub_reachable,
    is_glove,
    local_folder,
    short_name,
)

#: The model the book's pages are computed with, and the paper's model (where the hub is reachable).
BOOK_MODEL = pretrain.NAME
PAPER_MODEL = "bert-base-uncased"
#: A small BERT-style encoder fine-tuned for similarity: the book's contrast.
CONTRAST_MODEL = "all-MiniLM-L6-v2"
#: Set it to a model name to make that the default of every chapter and command.
MODEL_ENV = "BERTFLOW_MODEL"

#: ``<name>@0[-trunc][-seed<k>]``: the random-init controls (:func:`control_of` writes the names).
_RANDOM = re.compile(r"^(?P<base>.+)@0(?P<trunc>-trunc)?(?:-seed(?P<seed>\d+))?$")
_MULTIBERTS = re.compile(
    r"^(?:google/)?multiberts-seed_(?P<seed>\d+)-step_(?P<step>\d+)k$"
)
#: MultiBERTs' checkpoints of each seed, in thousands of steps (Sellam et al. 2022, section 2).
MULTIBERTS_STEPS = tuple(range(0, 200, 20)) + tuple(range(200, 2001, 100))


def multiberts(step_k: int, seed: int = 0) -> str:
    """The hub name of MultiBERTs seed ``seed`` (0–4) after ``step_k`` thousand steps."""
    if step_k not in MULTIBERTS_STEPS or seed not in range(5):
        raise ValueError(
            f"MultiBERTs has seeds 0-4 and steps {MULTIBERTS_STEPS} (thousands); "
            f"got seed {seed}, step {step_k}k"
        )
    return f"google/multiberts-seed_{seed}-step_{step_k}k"


def default_model() -> str:
    """The model a chapter or command uses when none is named.

    ``$BERTFLOW_MODEL`` when set; else the book's own ``scratch-bert`` where a local mirror is
    configured (the project's machines, CI) or the hub cannot be reached; else — Colab, a laptop
    online — the paper's ``bert-base-uncased``.
    """
    if os.environ.get(MODEL_ENV):
        return os.environ[MODEL_ENV]
    if os.environ.get(MODELS_ENV) or not hub_reachable():
        return BOOK_MODEL
    return PAPER_MODEL


def why_default() -> str:
    """One line saying why :func:`default_model` chose what it chose."""
    if os.environ.get(MODEL_ENV):
        return f"${MODEL_ENV} names it"
    if os.environ.get(MODELS_ENV):
        return f"a local mirror is configured (${MODELS_ENV}): the book's own model"
    if not hub_reachable():
        return "the Hugging Face hub is unreachable: the book's own model, trained here"
    return "the hub is reachable and no mirror is configured: the paper's model"


def control_of(model: str, seed: int = 0, init: str = "hf") -> str:
    """The random-init control of ``model``: the same network, untrained (``<model>@0``), drawn with
    init seed ``seed`` (``@0-seed3``) and Hugging Face's or, with ``init="trunc"``, Google's
    initialiser (``@0-trunc``, ``@0-trunc-seed3``)."""
    if is_glove(model):
        raise ValueError(
            f"{model} has no random-init control: GloVe vectors are not a network"
        )
    check_initialiser(init)
    return (
        f"{model}@0"
        + ("-trunc" if init == "trunc" else "")
        + (f"-seed{seed}" if seed else "")
    )


def checkpoints_along_training(model: str) -> list[tuple[str, str]]:
    """(label, name) of checkpoints of ``model`` along its pretraining, from random init to the end:
    scratch-bert's ``@0/@25/@50/@100``; for bert-base-uncased, MultiBERTs seed 0 at a handful of steps
    and the released model; for any other model, its ``@0`` control and itself."""
    if short_name(model) == BOOK_MODEL:
        return [(f"{p}%", f"{BOOK_MODEL}@{p}") for p in pretrain.PERCENTS]
    if short_name(model) == PAPER_MODEL:
        steps = (0, 20, 200, 2000)
        return [(f"MultiBERTs {k}k", multiberts(k)) for k in steps] + [
            ("bert-base-uncased", model)
        ]
    return [("random init", control_of(model)), ("pretrained", model)]


# ---------------------------------------------------------------------------------------------- the map
def resolve_model(name: str) -> str:
    """Where ``name`` loads from: a folder (training or initialising it first when needed) or a hub
    id. See the module's table for the order."""
    name = str(name)
    if is_glove(name):
        raise ValueError(
            f"{name} is the GloVe baseline, not a folder of weights: use load_encoder({name!r})"
        )
    folder = local_folder(
        name
    )  # an explicit folder (a missing path is an error), then the mirror
    if folder is not None:
        return str(folder)
    short = short_name(name)
    tuned = simcse.parse_name(short)
    if tuned is not None:  # "<base>+simcse[-seed<k>]": fine-tuned on demand
        base, seed = tuned
        config = simcse.config_for(seed)
        base_source = resolve_model(base)
        folder = simcse.run_dir(base, _fingerprint(base_source), config)
        if not folder.is_dir():
            simcse.train_and_save(load_from(base_source, base), config)
        return str(folder)
    if (
        pretrain.parse_name(short) is not None
    ):  # scratch-bert, scratch-bert@<pct>: pretrained on demand
        return str(pretrain.checkpoint(short))
    match = _RANDOM.match(name)
    if match is not None:
        return str(
            random_init(
                match["base"],
                int(match["seed"] or 0),
                "trunc" if match["trunc"] else "hf",
            )
        )
    match = _MULTIBERTS.match(name)
    if match is not None:
        return f"google/multiberts-seed_{match['seed']}-step_{match['step']}k"
    if short in SHAPES:
        layers, hidden = SHAPES[short]
        return f"google/bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
    return hub_id(name)


def _fingerprint(source: str) -> str:
    """The weights' fingerprint, from the files when ``source`` is a folder (no model is loaded)."""
    if Path(source).is_dir():
        return weights_fingerprint(Path(source))
    return load_from(source).fingerprint


def load_encoder(name: str, device: str | None = None) -> Encoder:
    """Load ``name`` (any name of the table above) ready for :func:`bertflow_mini.encoders.encoder`,
    on ``device`` (default: a GPU when there is one)."""
    if is_glove(name):
        return load_glove_encoder(name)
    return load_from(resolve_model(name), name, device or default_device())


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
    return load_encoder(simcse.simcse_name(name, config.seed), device)


def simcse_encoder(encoder: Encoder, seed: int = 0) -> Encoder:
    """The SimCSE-fine-tuned twin of a loaded ``encoder``, training seed ``seed`` (trained on first
    use, loaded once)."""
    encoder.require_transformer("SimCSE (it fine-tunes the weights)")
    config = simcse.config_for(seed)
    return _tuned(encoder.name, encoder.fingerprint, config, encoder.device)


def training_log_of(name: str):
    """The training log of a trained checkpoint name: scratch-bert's curve and facts, or a SimCSE
    model's loss per step and facts."""
    if simcse.parse_name(short_name(name)) is not None:
        return simcse.read_training_log(Path(resolve_model(name)))
    if pretrain.parse_name(short_name(name)) is not None:
        return pretrain.training_log()
    raise ValueError(f"{name!r} was not trained by this package: no training log")
