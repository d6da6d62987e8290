"""Layer 3 — evaluation: scoring sentence vectors against human judgements.

``sts``         cosine scores, Spearman, ``wmean`` and ``all`` aggregation
``reproduce``   the paper's STS table, end to end (encoder → post-processor → score)
``bootstrap``   is a difference between two STS scores real? a paired bootstrap
``published``   the papers' own numbers
``lexical``     word overlap and edit distance: the baselines with no model
``entailment``  the paper's unsupervised question-answering test, and an offline analogue

Imports :mod:`bertflow_mini.data`, :mod:`bertflow_mini.encoders` and :mod:`bertflow_mini.postprocess`.
"""
