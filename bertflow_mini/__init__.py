"""bertflow_mini — the small, tested package behind the BERT-flow teaching book.

One module per idea; the chapters import them::

    data          STS12–16, STS-B, SICK-R and GloVe: loaders, local mirror or official download
    models        load_encoder / encode: poolings (and the layer-indexing pitfall), embedding cache
    corpus        the unlabelled pretraining text: WordNet glosses + the STS/SICK sentences
    mlm           masked language modelling as BERT does it: masking, loss at the masked positions, loop
    pretrain      scratch-bert, the book's own BERT: the recipe, its checkpoints, name resolution
    sts           cosine scores, Spearman, ``wmean`` and ``all`` aggregation
    flow          the Glow-style flow of BERT-flow, built piece by piece, and ``fit_flow``
    flow_toys     the flow's workbench: 2-D toy data, block checks against autograd, pictures
    whitening     whitening (batch and streaming) and all-but-the-top
    isotropy      how anisotropic is a cloud of vectors?
    contextual    contextual token vectors, layer by layer (what Ethayarajh 2019 measured)
    frequency     word frequency vs norm and neighbourhood density (the paper's Table 1)
    pmi           the MLM–PMI link, made executable
    mlm_probe     log p(x) and log p(x|c) read off a real MLM head
    degeneration  representation degeneration (Gao et al. 2019): hull, unseen token ± bias, LayerNorm
    token_geometry  a checkpoint's output layer: a cone? where are the unseen tokens?
    puzzle        chapter 0: how far apart are the cosines of related and unrelated pairs?
    bases         cosine in a basis that is not orthonormal
    holes         are convex combinations of sentence vectors in emptier places than real ones?
    synonyms      swap a word for a synonym of another frequency: how far does the sentence move?
    lexical       word-level edit distance of a pair (Li et al. 2020, section 4.4)
    alignment     alignment and uniformity (Wang & Isola 2020)
    similarity    another similarity instead of another space: Mahalanobis cosine, …
    entailment    the paper's unsupervised question-answering test, and an offline analogue
    simcse        unsupervised SimCSE on the book's own BERT
    neighbours    does a post-processor keep each sentence's nearest neighbours?
    reproduce     the paper's STS table, end to end
    bootstrap     is a difference between two STS scores real? a paired bootstrap
    published     the papers' own numbers
    plotting      the book's figure style
    chapter       what every chapter's set-up cell does
    cli           ``python -m bertflow_mini pretrain|sts|reproduce|encode …``

Build tools (``make book``, ``make test``): ``execute`` runs a chapter in a fresh kernel,
``output_check`` compares a checked cell's fresh output with the committed one.
"""
__version__ = "0.1.0"
