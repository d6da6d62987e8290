"""A Glow-style normalizing flow for sentence vectors, built piece by piece (BERT-flow, Li et al. 2020).

Used by chapter 5 (the blocks, the fit) and chapter 6 (the STS table, through :class:`FlowTransform`).

A normalizing flow is an invertible map ``z = f(x)`` trained so that ``z`` looks like a standard
Gaussian. The change-of-variables formula gives the exact log-likelihood of a data point:

    log p(x) = log N(f(x); 0, I) + log |det ∂f/∂x|

Every block is a :class:`Flow`: ``forward(x)`` returns ``(z, logdet)`` and ``inverse(z)`` returns
``(x, logdet)``, one log-determinant per sample, the inverse's being minus the forward's (the
contract of ``normflows``). A stack's log-det is the sum of its blocks' — written out in
``FlowStep`` and ``Glow``, the only places it grows.

The configuration follows the authors' code (a 1×1×C "image", i.e. per-channel ops on a vector):

    FlowStep  = ActNorm → fixed channel reversal → additive coupling
    Glow      = `levels` × (`depth` FlowSteps, then factor out half the channels to N(0, I))
    coupling  = (Linear → ActNorm → ReLU) × 2 → zero-initialised Linear, width 32

Conventions: ``forward`` maps data → latent (``x → z``), ``inverse`` maps latent → data (``normflows``
names them the other way round; see ``tests/postprocess/test_flow.py``).
"""

from bertflow_mini.postprocess.flow.blocks import (
    LOG_2PI,
    ActNorm,
    AdditiveCoupling,
    AffineCoupling,
    Coupling,
    CouplingNet,
    Flow,
    InvertibleLinear,
    Permutation,
    Reverse,
    Shuffle,
    ValueAndLogdet,
    ZeroLinear,
)
from bertflow_mini.postprocess.flow.fit import (
    BertAdamW,
    FitResult,
    FlowConfig,
    FlowTransform,
    batches,
    build_flow,
    fit_flow,
    make_optimizer,
    missing_bias_correction,
    train_step,
)
from bertflow_mini.postprocess.flow.glow import (
    COUPLINGS,
    PERMUTATIONS,
    FlowStep,
    Glow,
    StandardNormal,
    log_likelihood,
)

__all__ = [
    "COUPLINGS",
    "LOG_2PI",
    "PERMUTATIONS",
    "ActNorm",
    "AdditiveCoupling",
    "AffineCoupling",
    "BertAdamW",
    "Coupling",
    "CouplingNet",
    "FitResult",
    "Flow",
    "FlowConfig",
    "FlowStep",
    "FlowTransform",
    "Glow",
    "InvertibleLinear",
    "Permutation",
    "Reverse",
    "Shuffle",
    "StandardNormal",
    "ValueAndLogdet",
    "ZeroLinear",
    "batches",
    "build_flow",
    "fit_flow",
    "log_likelihood",
    "make_optimizer",
    "missing_bias_correction",
    "train_step",
]
