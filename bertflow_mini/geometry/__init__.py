"""Layer 4 — geometry: measurements of the spaces the lower layers produce.

``isotropy``        how anisotropic is a cloud of vectors? (normalised I(W), IsoScore, mean cosine)
``frequency``       word frequency vs norm and neighbourhood density (the paper's Table 1)
``corpus_counts``   how often each token occurred in a model's pretraining corpus (exact or estimated)
``degeneration``    representation degeneration (Gao et al. 2019): hull, unseen tokens, bias
``rare_tokens``     a rare token's optimum and the lower bound on its norm (their Theorem 3)
``token_geometry``  a checkpoint's output layer: a cone? where are the unseen tokens?
``masked_inputs``   the softmax inputs at the positions pretraining's masking predicts
``contextual``      contextual token vectors, layer by layer
``bases``           cosine in a basis that is not orthonormal
``holes``           are mixtures of sentence vectors in emptier places than real ones?
``neighbours``      exact k-NN; does a post-processor keep each sentence's nearest neighbours?
``similarity``      another similarity instead of another space (Mahalanobis cosine, BERTScore)
``alignment``       alignment and uniformity (Wang & Isola 2020)

May import every layer below (data, encoders, post-processors, evaluation).
"""

import lazy_loader

# the modules a chapter uses whole (bf.isotropy, …), imported on first use
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=[
        "bases",
        "contextual",
        "corpus_counts",
        "degeneration",
        "frequency",
        "holes",
        "isotropy",
        "rare_tokens",
        "similarity",
        "token_geometry",
    ],
)
