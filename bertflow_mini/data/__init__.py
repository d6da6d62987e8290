"""Layer 1 — data: what the book reads from disk (or downloads once).

``datasets``  STS12–16, STS-B, SICK-R and GloVe word vectors: loaders, the local mirror, the official URLs
``corpus``    the unlabelled pretraining text: WordNet glosses and the STS/SICK sentences

Imports nothing of the package above ``bertflow_mini._*`` (the shared helpers).
"""
from bertflow_mini.data.datasets import (
    TASKS,
    DataNotFoundError,
    GloVe,
    STSPairs,
    load_glove,
    load_sts,
    task_sentences,
)

__all__ = ["TASKS", "DataNotFoundError", "GloVe", "STSPairs", "load_glove", "load_sts", "task_sentences"]
