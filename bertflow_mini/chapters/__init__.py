"""Layer 5 — chapters: what only the book needs.

``chapter``      every chapter's first cell: seed, style, which model on which device; ``glue``;
                 ``claim``, the check behind a sentence of prose
``plotting``     the book's figure style and its one colour per concept (``COLORS``)
``exercises``    ``check``, the exercises' self-checks, and ``confirm``, which keeps their key honest;
                 ``solvers`` computes their answers on any model, as the solutions do
``strength``     how well trained a model is, printed wherever pretraining is judged
``puzzle``, ``pmi``, ``cooccurrence``, ``mlm_probe``, ``synonyms``, ``flow_toys``: one chapter's
                 experiments
``teaching``     the instructor's page: words of prose, exercises and self-checks, student links
``execute``, ``output_check``: running a chapter and comparing a fresh output with the committed one
``editions``     the Colab and student editions of every chapter (``make editions``), each built by
                 ``colab_edition``, whose text ``myst_markdown`` turns from MyST into plain Markdown;
                 ``launch_button``, the HTML book's Colab button, opens them

Only what stages the book lives here (toy corpora, protocols on the book's own data, the pages'
machinery); a measurement a reader could apply to their own vectors lives in its layer below.

May import every layer below.
"""

from bertflow_mini.chapters.chapter import claim, glue, seed_everything, setup

__all__ = ["claim", "glue", "seed_everything", "setup"]
