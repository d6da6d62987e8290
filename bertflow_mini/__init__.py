"""bertflow_mini — the small, tested package behind the BERT-flow teaching book.

One idea per module, in folders that are the layers of the pipeline (each imports only the layers
before it; ``lint-imports`` checks it)::

    data/         1  STS12–16, STS-B, SICK-R, GloVe, the pretraining corpus, downloads
    postprocess/  1  whitening and the flow: maps fitted on vectors
    encoders/     2  a model name → weights → sentence vectors (the one name map, the cache, pretraining)
    evaluation/   3  STS scoring, the paper's table, bootstrap, published numbers, baselines
    geometry/     4  isotropy, frequency, degeneration, holes, neighbours, other similarities
    chapters/     5  set-up, figures and the experiments only one chapter needs
    cli/          6  ``python -m bertflow_mini pretrain|sts|reproduce|encode …``

``import bertflow_mini as bf`` gives the names the chapters and the README use (``bf.setup``,
``bf.load_encoder``, ``bf.Whitening``, …), listed once in ``__init__.pyi``: lazy_loader imports each
from its module on first use (importing the package is cheap and touches no network), and type
checkers and editors read the same file as the package's interface.
"""

import lazy_loader

from bertflow_mini._version import __version__ as __version__

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
