"""Layer 5 — chapters: what only the book needs.

``chapter``      every chapter's first cell: seed, style, which model on which device; ``glue``;
                 ``claim``, the check behind a sentence of prose
``plotting``     the book's figure style and its one colour per concept (``COLORS``)
``exercises``    ``check``, the exercises' self-checks, and ``confirm``, which keeps their key honest
``strength``     how well trained a model is, printed wherever pretraining is judged
``puzzle``, ``pmi``, ``cooccurrence``, ``mlm_probe``, ``synonyms``, ``flow_toys``: one chapter's
                 experiments
``execute``, ``output_check``: running a chapter and comparing a fresh output with the committed one
``editions``     the Colab and student editions of every chapter (``make editions``), each built by
                 ``colab_edition``, whose text ``myst_markdown`` turns from MyST into plain Markdown

Where code lives (one rule for the whole package): a measurement a reader could apply to their own
model or vectors — a function of vectors, an encoder or a dataset — lives in its layer
(``geometry/``, ``evaluation/``, …), even when one chapter is its only caller today. This folder
holds only what stages the book itself: toy corpora and distributions built for one argument
(``pmi``, ``flow_toys``), a protocol on the book's own data that means nothing outside it
(``puzzle``, ``synonyms``, ``mlm_probe``), and the machinery of the pages. By chapter:

====  ===========================================  ============================================
ch.   built for it, in this folder                 measurements it uses from the layers below
====  ===========================================  ============================================
0     ``puzzle``                                   ``evaluation.bootstrap``, ``evaluation.harness``
1     ``pmi``, ``cooccurrence``, ``mlm_probe``     ``data.corpus``, ``encoders.mlm``
2     —                                            ``geometry.bases``, ``geometry.isotropy``
3     ``synonyms``, ``puzzle``                     ``geometry.contextual``, ``geometry.frequency``
4     —                                            ``geometry.token_geometry``, ``degeneration``,
                                                   ``rare_tokens``
5     ``flow_toys``                                ``postprocess.flow``, ``geometry.neighbours``
6     —                                            ``evaluation`` (``reproduce``, ``controls``,
                                                   ``measured``, ``scale``, ``published``)
7     —                                            ``geometry.holes``, ``similarity``,
                                                   ``alignment``; ``encoders.simcse``
====  ===========================================  ============================================

May import every layer below.
"""

from bertflow_mini.chapters.chapter import claim, glue, seed_everything, setup

__all__ = ["claim", "glue", "seed_everything", "setup"]
