"""bertflow_mini — the small, tested package behind the BERT-flow teaching book.

One idea per module, in folders that are the layers of the pipeline (each imports only the layers
before it; ``tests/test_package.py`` checks it from the import graph)::

    data/         1  STS12–16, STS-B, SICK-R, GloVe, the pretraining corpus
    postprocess/  1  whitening and the flow: maps fitted on vectors
    encoders/     2  a model name → weights → sentence vectors (the one name map, the cache, pretraining)
    evaluation/   3  STS scoring, the paper's table, bootstrap, published numbers, baselines
    geometry/     4  isotropy, frequency, degeneration, holes, neighbours, other similarities
    chapters/     5  set-up, figures and the experiments only one chapter needs
    cli.py        6  ``python -m bertflow_mini pretrain|sts|reproduce|encode …``

``_checks``, ``_io``, ``_progress`` and ``_threads`` are the shared helpers every layer may use.
"""
__version__ = "0.1.0"
