"""Layer 5 — chapters: what only the book needs.

``chapter``      every chapter's first cell: seed, style, which model on which device; ``glue``;
                 ``claim``, the check behind a sentence of prose
``plotting``     the book's figure style and its one colour per concept (``COLORS``)
``exercises``    ``check``, the exercises' self-checks, and ``confirm``, which keeps their key honest;
                 ``solvers`` computes their answers on any model, as the solutions do
``strength``     how well trained a model is, printed wherever pretraining is judged
``puzzle``, ``pmi``, ``cooccurrence``, ``mlm_probe``, ``synonyms``, ``flow_toys``: one chapter's
                 experiments

Only what the chapters' cells call lives here (toy corpora, protocols on the book's own data); a
measurement a reader could apply to their own vectors lives in its layer below, and the book's
build tooling (editions, execution, output comparison) in ``tools/bookbuild``, outside the wheel.

May import every layer below.
"""

from bertflow_mini.chapters import (  # one chapter's experiments: bf.pmi, bf.puzzle, …
    cooccurrence,
    flow_toys,
    mlm_probe,
    pmi,
    puzzle,
    synonyms,
)
from bertflow_mini.chapters.chapter import claim, glue, seed_everything, setup

__all__ = [
    "claim",
    "cooccurrence",
    "flow_toys",
    "glue",
    "mlm_probe",
    "pmi",
    "puzzle",
    "seed_everything",
    "setup",
    "synonyms",
]
