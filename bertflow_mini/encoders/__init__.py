"""Layer 2 — encoders: a model name becomes weights, and sentences become vectors.

``sources``      where a model's files are: an explicit folder, ``$BERTFLOW_MODELS``, or the hub
``names``        **the one map from a name to a folder**: mirror → cache → train on demand → hub;
                 ``scratch-bert@25``, ``<any model>@0`` (random init; ``@0-trunc``: Google's), ``+simcse``,
                 MultiBERTs
``pooling``      how hidden states become one vector (and the layer-indexing pitfall)
``encoder``      the :class:`Encoder`, batched encoding and the embedding cache
``glove``        GloVe word vectors averaged into sentences: the static baseline
``checkpoints``  a checkpoint's MLM head and its corpus' token counts
``mlm``          masked language modelling as BERT does it
``pretrain``     ``scratch-bert``, the book's own BERT: the recipe and its checkpoints
``simcse``       unsupervised SimCSE (Gao et al. 2021)

Imports :mod:`bertflow_mini.data` and nothing above it.
"""
from bertflow_mini.encoders.encoder import Encoder, encode, encode_layers, encode_with_dropout
from bertflow_mini.encoders.names import (
    BOOK_MODEL,
    CONTRAST_MODEL,
    PAPER_MODEL,
    checkpoints_along_training,
    control_of,
    default_model,
    load_encoder,
    parameter_count,
    resolve_model,
    simcse_encoder,
)
from bertflow_mini.encoders.pooling import POOLINGS, Pooling, pool, pooling_grid, pooling_layers

__all__ = [
    "BOOK_MODEL", "CONTRAST_MODEL", "PAPER_MODEL", "POOLINGS", "Encoder", "Pooling",
    "checkpoints_along_training", "control_of", "default_model", "encode", "encode_layers",
    "encode_with_dropout", "load_encoder", "parameter_count", "pool", "pooling_grid", "pooling_layers", "resolve_model",
    "simcse_encoder",
]
