"""Layer 3 — evaluation: scoring sentence vectors against human judgements.

``vectors``     unit rows, cosine, k-NN: the one home of the vector primitives (a zero row raises)
``sts``         Spearman against the gold scores, ``wmean`` and ``all`` aggregation
``methods``     the table's method names (``flow``, ``whitening-256``, ``simcse+flow``, …) → post-processors
``reproduce``   the paper's STS table, end to end (encoder → post-processor → score)
``bootstrap``   is a difference between two STS scores real? a paired bootstrap
``published``   the papers' own numbers
``measured``    the measurements shipped with the package (``results/``): loaded, never computed
``controls``    a random-init control cell: mean and init-seed spread; the 7-dataset mean
``earned``      what pretraining earns: pretrained minus its random-init control, one shared table
``scale``       scratch-bert's scale curve as gaps: each run length minus its own step 0
``harness``     how far the papers' harnesses disagree, and which margins exceed that
``lexical``     word overlap, IDF overlap, edit distance, bags of random vectors: no semantics
``entailment``  the paper's unsupervised question-answering test, and an offline analogue

Imports :mod:`bertflow_mini.data`, :mod:`bertflow_mini.encoders` and :mod:`bertflow_mini.postprocess`.
"""

import lazy_loader

# bf.bootstrap, bf.lexical, imported on first use
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__, submodules=["bootstrap", "lexical"]
)
