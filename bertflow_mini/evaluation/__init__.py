"""Layer 3 — evaluation: scoring sentence vectors against human judgements.

``sts``         cosine scores, Spearman, ``wmean`` and ``all`` aggregation
``reproduce``   the paper's STS table, end to end (encoder → post-processor → score)
``bootstrap``   is a difference between two STS scores real? a paired bootstrap
``published``   the papers' own numbers
``earned``      what pretraining earns: pretrained minus its random-init control, one shared table
``lexical``     word overlap, IDF overlap, edit distance, bags of random vectors: no semantics
``entailment``  the paper's unsupervised question-answering test, and an offline analogue

Imports :mod:`bertflow_mini.data`, :mod:`bertflow_mini.encoders` and :mod:`bertflow_mini.postprocess`.
"""
