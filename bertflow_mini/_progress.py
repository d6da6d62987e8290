"""Progress bars: notebook widgets where ipywidgets is installed (Colab), plain text bars elsewhere.

``tqdm.auto`` would warn "IProgress not found" in a notebook without ipywidgets; this picks the text
bar quietly instead, which is also what the built (static, offline) HTML book can show.
"""

try:
    import ipywidgets  # noqa: F401
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover - depends on the environment
    from tqdm import tqdm

__all__ = ["tqdm"]
