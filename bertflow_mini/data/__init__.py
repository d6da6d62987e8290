"""Layer 1 — data: what the book reads from disk (or downloads once, checked).

``pairs``       what a loaded dataset is: :class:`STSPairs`, the task names and splits,
                ``$BERTFLOW_MAX_PAIRS`` (a cap for quick runs)
``sts``         STS12–16, STS-B and SICK-R: the official files' parsers (one SICK parser) and
                :func:`load_sts`, which finds them, or the hub's copy, or downloads them
``entailment``  pairs with a binary label: SICK's entailment labels and GLUE's QNLI
``hub_copies``  the Hugging Face hub's copies (MTEB's STS jsonl, matched block by block to
                SentEval's subsets; the parquet copies of SICK and QNLI)
``glove``       GloVe word vectors: the reader, the checked hub copy, Stanford's zip
``words``       the two word splits (GloVe's tokens, the overlap baselines' word sets)
``layout``      where the data is: the layout, ``$BERTFLOW_DATA``, the cache, one clear error
``downloads``   fetching (pooch), unpacking, checking and moving archives into place; hub files
``checksums``   the SHA-256 of every official file the loaders read; WordNet's synset counts and
                content digests
``wordnet``     WordNet 3.0's data files: their synset lines, and the check of a copy's content
``corpus``      the unlabelled pretraining text: WordNet glosses and the STS/SICK sentences

Imports nothing of the package above ``bertflow_mini._*`` (the shared helpers), and touches no
network at import time.
"""

from bertflow_mini.data.entailment import LabelledPairs, load_qnli, load_sick_entailment
from bertflow_mini.data.glove import GloVe, load_glove
from bertflow_mini.data.hub_copies import load_hub_copy
from bertflow_mini.data.layout import DataNotFoundError
from bertflow_mini.data.pairs import MAX_PAIRS_ENV, TASKS, STSPairs, max_pairs
from bertflow_mini.data.sts import load_sts, task_sentences
from bertflow_mini.data.words import tokenize_words, word_set

__all__ = [
    "TASKS",
    "DataNotFoundError",
    "GloVe",
    "LabelledPairs",
    "MAX_PAIRS_ENV",
    "STSPairs",
    "load_glove",
    "load_hub_copy",
    "load_qnli",
    "load_sick_entailment",
    "load_sts",
    "max_pairs",
    "task_sentences",
    "tokenize_words",
    "word_set",
]
