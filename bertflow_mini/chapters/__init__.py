"""Layer 5 — chapters: what only the book needs.

``chapter``      every chapter's first cell: seed, style, which model on which device, and the
                 ``Chapter`` it returns (``ch = bf.setup()``), whose methods check the chapter's
                 claims and exercises on that model; ``glue``
``claims``       ``claim``, the check behind a sentence of prose, as a function of the model
``plotting``     the book's figure style and its one colour per concept (``COLORS``)
``exercises``    ``check``, the exercises' self-checks, and ``confirm``, which keeps their key honest
                 (each for a model it is given; the chapter's ``ch.check``/``ch.confirm`` call them);
                 ``solvers`` computes their answers on any model, as the solutions do
``strength``     how well trained a model is, printed wherever pretraining is judged
``puzzle``, ``pmi``, ``cooccurrence``, ``mlm_probe``, ``synonyms``, ``flow_toys``: one chapter's
                 experiments

Only what the chapters' cells call lives here (toy corpora, protocols on the book's own data); a
measurement a reader could apply to their own vectors lives in its layer below, and the book's
build tooling (editions, execution, output comparison) in ``tools/bookbuild``, outside the wheel.

May import every layer below.
"""

import lazy_loader

from bertflow_mini.chapters.chapter import Chapter, glue, seed_everything, setup

# one chapter's experiments (bf.pmi, bf.puzzle, …), imported on first use
__getattr__, _, _ = lazy_loader.attach(
    __name__,
    submodules=["cooccurrence", "flow_toys", "mlm_probe", "pmi", "puzzle", "synonyms"],
)

__all__ = ["Chapter", "glue", "seed_everything", "setup"]
