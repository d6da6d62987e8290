"""Layer 5 — chapters: what only the book needs.

``chapter``      every chapter's first cell: seed, style, which model on which device; ``glue``;
                 ``claim``, the check behind a sentence of prose
``plotting``     the book's figure style
``puzzle``, ``pmi``, ``mlm_probe``, ``synonyms``, ``flow_toys``: one chapter's experiments
``execute``, ``output_check``: running a chapter and comparing a fresh output with the committed one

May import every layer below.
"""
from bertflow_mini.chapters.chapter import claim, glue, seed_everything, setup

__all__ = ["claim", "glue", "seed_everything", "setup"]
