"""Layer 2 — encoders: a model name becomes weights, and sentences become vectors.

``spec``         the grammar of model names, its one home: a name parses into a :class:`ModelSpec`
                 (parsed once, where a name comes in; the spec travels from there), and where a
                 name's files are on this machine: an explicit folder or ``$BERTFLOW_MODELS``
``names``        **the one map from a name to a folder** (mirror → cache → hub; never trains),
                 and :func:`build`, the explicit step that builds a name's lineage, base first:
                 pretrains, fine-tunes or initialises
``runs``         the cache of trained artefacts: a config's hash names its folder
``random_init``  the ``@0`` controls: a model's network with fresh weights (``@0-trunc``: Google's
                 initialiser), and parameter counts from a config alone
``pooling``      how hidden states become one vector (and the layer-indexing pitfall)
``encoder``      the :class:`Encoder` and batched encoding: forward passes, poolings read off them
``cache``        weights fingerprints and the disk cache of sentence vectors
``loading``      an :class:`Encoder` from a folder or hub id (offline options, the error that
                 names the mirror and the hub), or the GloVe baseline
``glove``        GloVe word vectors averaged into sentences: the static baseline
``checkpoints``  a checkpoint's MLM head and its corpus' token counts
``mlm``          masked language modelling as BERT does it
``pretrain``     ``scratch-bert``, the book's own BERT: the recipe and its checkpoints
``simcse``       unsupervised SimCSE (Gao et al. 2021)

Imports :mod:`bertflow_mini.data` and nothing above it.
"""

from bertflow_mini.encoders import (  # bf.mlm, bf.pretrain, bf.simcse
    mlm,
    pretrain,
    simcse,
)
from bertflow_mini.encoders.encoder import (
    Encoder,
    encode,
    encode_layers,
    encode_with_dropout,
)
from bertflow_mini.encoders.names import (
    BOOK_MODEL,
    CONTRAST_MODEL,
    PAPER_MODEL,
    build,
    checkpoints_along_training,
    control_of,
    default_model,
    load_encoder,
    resolve_model,
    simcse_encoder,
)
from bertflow_mini.encoders.pooling import (
    POOLINGS,
    Pooling,
    pool,
    pooling_grid,
    pooling_layers,
)
from bertflow_mini.encoders.random_init import parameter_count

__all__ = [
    "mlm",
    "pretrain",
    "simcse",
    "BOOK_MODEL",
    "CONTRAST_MODEL",
    "PAPER_MODEL",
    "POOLINGS",
    "Encoder",
    "Pooling",
    "build",
    "checkpoints_along_training",
    "control_of",
    "default_model",
    "encode",
    "encode_layers",
    "encode_with_dropout",
    "load_encoder",
    "parameter_count",
    "pool",
    "pooling_grid",
    "pooling_layers",
    "resolve_model",
    "simcse_encoder",
]
