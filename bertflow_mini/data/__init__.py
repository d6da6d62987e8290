"""Layer 1 — data: what the book reads from disk (or downloads once).

``datasets``  STS12–16, STS-B, SICK-R and GloVe word vectors: loaders, the local mirror, the hub's
              copies, the official URLs, and ``$BERTFLOW_MAX_PAIRS`` (a cap for quick runs)
``corpus``    the unlabelled pretraining text: WordNet glosses and the STS/SICK sentences

Imports nothing of the package above ``bertflow_mini._*`` (the shared helpers).
"""
from bertflow_mini.data.datasets import (
    TASKS,
    DataNotFoundError,
    GloVe,
    MAX_PAIRS_ENV,
    STSPairs,
    load_glove,
    load_hub_copy,
    load_sts,
    max_pairs,
    task_sentences,
)

__all__ = ["TASKS", "DataNotFoundError", "GloVe", "MAX_PAIRS_ENV", "STSPairs", "load_glove", "load_hub_copy",
           "load_sts", "max_pairs", "task_sentences"]
