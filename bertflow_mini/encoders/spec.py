"""The grammar of model names: a name parses into a :class:`ModelSpec`, data that says what the name
means. Parsing reads no file and trains nothing; :mod:`bertflow_mini.encoders.names` turns a spec
into a folder, and builds what is built here.

=================================  ==================================================================
name                               kind
=================================  ==================================================================
``glove-6B-50d``                   ``glove``: the GloVe baseline
``scratch-bert``, ``…@25``         ``scratch``: the book's own BERT at a percent of its pretraining
``<name>+simcse[-seed<k>]``        ``simcse``: ``<name>`` fine-tuned by SimCSE, training seed ``k``
``<name>@0[-trunc][-seed<k>]``     ``random``: ``<name>``'s network with fresh weights (init seed k;
                                   ``-trunc``: Google's truncated-normal initialiser)
``multiberts-seed_S-step_Kk``      ``multiberts``: Google's MultiBERTs checkpoints (hub)
``bert-tiny`` … ``bert-medium``    ``miniature``: Turc et al.'s BERT miniatures (hub)
anything else                      ``hub``: a Hugging Face hub id
=================================  ==================================================================

A folder (or a mirrored short name) wins over the grammar; that needs the file system, so it is
the resolver's first step, not the parser's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bertflow_mini.encoders.sources import is_glove, short_name

#: The book's own BERT and its checkpoints (percent of its pretraining steps).
SCRATCH = "scratch-bert"
PERCENTS = (0, 25, 50, 100)
SIMCSE_SUFFIX = "+simcse"
#: Turc et al. (2019)'s BERT miniatures: name -> (layers, hidden). Heads = hidden / 64,
#: FFN = 4 x hidden; everything else (vocabulary, positions) is bert-base-uncased's.
SHAPES: dict[str, tuple[int, int]] = {
    "bert-tiny": (2, 128),
    "bert-mini": (4, 256),
    "bert-small": (4, 512),
    "bert-medium": (8, 512),
}
#: The random-init controls' initialisers: Hugging Face's normal (``@0``) and Google's truncated
#: one (``@0-trunc``).
INITIALISERS = ("hf", "trunc")
#: MultiBERTs' checkpoints of each seed, in thousands of steps (Sellam et al. 2022, section 2).
MULTIBERTS_STEPS = tuple(range(0, 200, 20)) + tuple(range(200, 2001, 100))

Kind = Literal["glove", "scratch", "simcse", "random", "multiberts", "miniature", "hub"]

_SIMCSE = re.compile(
    rf"^(?P<base>.+){re.escape(SIMCSE_SUFFIX)}(?:-seed(?P<seed>[1-9][0-9]*))?$"
)
_RANDOM = re.compile(r"^(?P<base>.+)@0(?P<trunc>-trunc)?(?:-seed(?P<seed>\d+))?$")
_MULTIBERTS = re.compile(
    r"^(?:google/)?multiberts-seed_(?P<seed>\d+)-step_(?P<step>\d+)k$"
)


@dataclass(frozen=True)
class ModelSpec:
    """What a model name means. ``base`` is the model a SimCSE run or a random-init control is
    made from; ``seed`` the SimCSE, init or MultiBERTs seed; ``percent`` a scratch-bert
    checkpoint; ``step_k`` a MultiBERTs step in thousands."""

    name: str
    kind: Kind
    base: str = ""
    seed: int = 0
    percent: int = 100
    init: str = "hf"
    step_k: int = 0

    @property
    def trains(self) -> bool:
        """True when building it trains a network (minutes or more), not only initialises one."""
        return self.kind in ("scratch", "simcse")

    @property
    def hub_id(self) -> str | None:
        """The hub id of a MultiBERTs checkpoint or a miniature; None for other kinds."""
        if self.kind == "multiberts":
            return multiberts(self.step_k, self.seed, check=False)
        if self.kind == "miniature":
            layers, hidden = SHAPES[short_name(self.name)]
            return f"google/bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
        return None


def check_initialiser(init: str) -> None:
    """Raise a ``ValueError`` unless ``init`` is one of :data:`INITIALISERS`."""
    if init not in INITIALISERS:
        raise ValueError(
            f"init={init!r}: 'hf' (Hugging Face's normal) or 'trunc' (Google's truncated normal)"
        )


def check_simcse_seed(seed: int) -> int:
    """``seed`` when it is an integer >= 0, else a ``ValueError``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"a SimCSE seed is an integer >= 0, got {seed!r}")
    return seed


def parse_name(name: str) -> ModelSpec:
    """The :class:`ModelSpec` of ``name`` (see the module's table); a malformed SimCSE tail or
    scratch-bert checkpoint is a ``ValueError`` that says what is accepted."""
    name = str(name)
    short = short_name(name)
    if is_glove(name):
        return ModelSpec(name, "glove")
    match = _SIMCSE.match(name)
    if match is not None:
        return ModelSpec(name, "simcse", match["base"], int(match["seed"] or 0))
    head, sep, tail = name.rpartition(SIMCSE_SUFFIX + "-")
    if sep and head:
        raise ValueError(
            f"{name!r}: a SimCSE model is named <base>{SIMCSE_SUFFIX} (seed 0) or "
            f"<base>{SIMCSE_SUFFIX}-seed<k> with k >= 1, e.g. {simcse_name(head, 1)!r}; "
            f"got the tail {tail!r}"
        )
    base, _, pct = short.partition("@")
    if base == SCRATCH:
        if pct and (not pct.isdigit() or int(pct) not in PERCENTS):
            raise ValueError(
                f"{short!r}: the checkpoints of {SCRATCH} are "
                f"{', '.join(f'@{p}' for p in PERCENTS)}"
            )
        return ModelSpec(name, "scratch", percent=int(pct or 100))
    match = _RANDOM.match(name)
    if match is not None:
        init = "trunc" if match["trunc"] else "hf"
        return ModelSpec(
            name, "random", match["base"], int(match["seed"] or 0), init=init
        )
    match = _MULTIBERTS.match(name)
    if match is not None:
        return ModelSpec(
            name, "multiberts", seed=int(match["seed"]), step_k=int(match["step"])
        )
    if short in SHAPES:
        return ModelSpec(name, "miniature")
    return ModelSpec(name, "hub")


def simcse_name(base: str, seed: int = 0) -> str:
    """The name of ``base`` fine-tuned by SimCSE with training seed ``seed``: ``"scratch-bert+simcse"``
    (seed 0), ``"scratch-bert+simcse-seed2"``; :func:`parse_name` reads it back."""
    return f"{base}{SIMCSE_SUFFIX}" + (
        f"-seed{seed}" if check_simcse_seed(seed) else ""
    )


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


def multiberts(step_k: int, seed: int = 0, *, check: bool = True) -> str:
    """The hub name of MultiBERTs seed ``seed`` (0–4) after ``step_k`` thousand steps."""
    if check and (step_k not in MULTIBERTS_STEPS or seed not in range(5)):
        raise ValueError(
            f"MultiBERTs has seeds 0-4 and steps {MULTIBERTS_STEPS} (thousands); "
            f"got seed {seed}, step {step_k}k"
        )
    return f"google/multiberts-seed_{seed}-step_{step_k}k"
