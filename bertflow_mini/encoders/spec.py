"""The grammar of model names: a name parses into a :class:`ModelSpec`, data that says what the name
means. Parsing reads no file and trains nothing; where a name's files are on this machine is
:func:`bertflow_mini.encoders.loading.local_folder`'s job, and
:mod:`bertflow_mini.encoders.names` turns a spec into a folder, and builds what is built here.

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

The boundary (:func:`bertflow_mini.chapters.chapter.setup`, the CLI, ``load_encoder``) parses a
name once; from there the :class:`ModelSpec` travels, with the values derived from it (its short
name, its base's spec, its hub id).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

#: The book's own BERT and its checkpoints (percent of its pretraining steps).
SCRATCH = "scratch-bert"
#: The paper's model: Google's bert-base-uncased (its vocabulary is scratch-bert's too).
BERT_BASE = "bert-base-uncased"
#: The mirror's folder holding bert-base-uncased's tokenizer and config alone, no weights.
BERT_BASE_TOKENIZER = f"{BERT_BASE}-tokenizer"
PERCENTS = (0, 25, 50, 100)
SIMCSE_SUFFIX = "+simcse"
#: Turc et al. (2019)'s BERT miniatures: name -> (layers, hidden). Heads = hidden / 64,
#: FFN = 4 x hidden; everything else (vocabulary, positions) is :data:`BERT_BASE`'s.
SHAPES: dict[str, tuple[int, int]] = {
    "bert-tiny": (2, 128),
    "bert-mini": (4, 256),
    "bert-small": (4, 512),
    "bert-medium": (8, 512),
}
#: The random-init controls' initialisers: Hugging Face's normal (``@0``) and Google's truncated
#: one (``@0-trunc``).
INITIALISERS = ("hf", "trunc")
#: Short names the book uses, and the hub id each one falls back to when no mirror has it.
HUB_IDS: dict[str, str] = {
    BERT_BASE: BERT_BASE,
    "bert-large-uncased": "bert-large-uncased",
    "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    BERT_BASE_TOKENIZER: BERT_BASE,  # the tokenizer only (scratch-bert's vocabulary)
}
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


def short_name(name: str) -> str:
    """``"sentence-transformers/all-MiniLM-L6-v2"`` → ``"all-MiniLM-L6-v2"``; a path → its folder name."""
    return Path(str(name).rstrip("/")).name


def is_glove(name: str) -> bool:
    """``glove-6B-50d`` and friends: the static word-vector baseline, not a network."""
    return short_name(name).lower().startswith("glove")


def hub_alias(name: str) -> str:
    """The hub id a short name falls back to (:data:`HUB_IDS`; itself when the book has no alias)."""
    return HUB_IDS.get(short_name(name), name)


def looks_like_path(name: str) -> bool:
    """A name meant as a folder on disk (``/x``, ``./x``, ``../x``, ``~/x``), not a hub id (``org/x``)."""
    return str(name).startswith(("/", "./", "../", "~")) or str(name) in (".", "..")


@dataclass(frozen=True)
class ModelSpec:
    """What a model name means. ``base`` is the model a SimCSE run or a random-init control is
    made from; ``seed`` the SimCSE, init or MultiBERTs seed; ``percent`` a scratch-bert
    checkpoint; ``step_k`` a MultiBERTs step in thousands. ``short`` (the name's last part) is
    derived from ``name``."""

    name: str
    kind: Kind
    base: str = ""
    seed: int = 0
    percent: int = 100
    init: str = "hf"
    step_k: int = 0
    short: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "short", short_name(self.name))

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
            layers, hidden = SHAPES[self.short]
            return f"google/bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
        return None

    @property
    def on_the_hub(self) -> str:
        """The hub id the name loads from when no folder holds it: :attr:`hub_id`, else the book's
        alias of its short name (:data:`HUB_IDS`), else the name itself."""
        return self.hub_id or hub_alias(self.name)

    @property
    def of(self) -> ModelSpec:
        """The spec of :attr:`base`, the model a SimCSE run or a random-init control is made from."""
        return parse_name(self.base)

    @property
    def lineage(self) -> tuple[ModelSpec, ...]:
        """The specs a SimCSE run is made from, base first, then this one: ``(scratch-bert,
        scratch-bert+simcse)``; any other spec alone (a random-init control is drawn from its base's
        config, never its weights)."""
        return (*self.of.lineage, self) if self.kind == "simcse" else (self,)

    @property
    def bert_base_sized(self) -> bool:
        """A network of bert-base's size: bert-base-uncased, MultiBERTs, or a model made from them."""
        multiberts = _MULTIBERTS.match(self.short) is not None
        return multiberts or BERT_BASE in (self.short, short_name(self.base))


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


def parse_name(name: str | ModelSpec) -> ModelSpec:
    """The :class:`ModelSpec` of ``name`` (see the module's table; a spec is itself); a malformed
    SimCSE tail or scratch-bert checkpoint is a ``ValueError`` that says what is accepted."""
    if isinstance(name, ModelSpec):
        return name
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
