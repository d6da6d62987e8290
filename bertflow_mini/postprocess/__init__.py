"""Layer 1 — post-processors: maps fitted on sentence vectors, no labels, no encoder.

``whitening``  whitening (batch and streaming), its top-k variant, and all-but-the-top
``flow``       the Glow-style flow of BERT-flow, built piece by piece, and ``fit_flow``

Imports only the shared helpers (``bertflow_mini._*``): a post-processor sees arrays, never a model.
"""

import lazy_loader

# bf.flow, the flow's blocks, imported on first use
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submodules=["flow"])
