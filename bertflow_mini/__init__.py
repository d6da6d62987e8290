"""bertflow_mini — the small, tested package behind the BERT-flow teaching book.

One module per idea; the chapters import them::

    data        STS12–16, STS-B, SICK-R and GloVe: loaders, local mirror or official download
    models      load_encoder / encode: poolings (and the layer-indexing pitfall), embedding cache
    corpus      the unlabelled pretraining text: WordNet glosses + the STS/SICK sentences
    mlm         masked language modelling as BERT does it: masking, loss at the masked positions, loop
    pretrain    scratch-bert, the book's own BERT: the recipe, its checkpoints, name resolution
    sts         cosine scores, Spearman, ``wmean`` and ``all`` aggregation
    flow        the Glow-style flow of BERT-flow, built piece by piece, and ``fit_flow``
    whitening   whitening (batch and streaming) and all-but-the-top
    isotropy    how anisotropic is a cloud of vectors?
    frequency   word frequency vs norm and neighbourhood density (the paper's Table 1)
    pmi         the MLM–PMI link, made executable
    degeneration  representation degeneration (Gao et al. 2019): hull test, toy models, tiny MLM
    reproduce   the paper's STS table, end to end
    published   the papers' own numbers
"""
__version__ = "0.1.0"
