"""Sphinx extension: the HTML book's Colab launch button opens a chapter's Colab edition.

sphinx-book-theme's button opens the page's own notebook, whose MyST (glued numbers, glossary
roles, dropdowns, hidden claim cells) Colab cannot render; ``book/colab/<name>.ipynb``, generated
from it by :mod:`bookbuild.editions`, is what a Colab reader should get. Listed under
``sphinx.extra_extensions`` in ``_config.yml``. The student HTML book (``make student-html``) sets
``sphinx.config.bertflow_colab_edition: student``: its button opens the student edition instead.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from bookbuild import editions


@functools.cache
def _edition_urls(root: Path, edition: str = "colab") -> dict[str, str]:
    """Each page with an edition (``book/<name>``) and where its ``edition`` ("colab" or
    "student") opens: read once per build, not once per page (the book's site reads every
    notebook)."""
    site = editions.book_site(root)
    return {
        f"book/{path.stem}": site.colab(path.name, edition)
        for path in editions.sources(root)
    }


def _open_edition(
    app: Any, pagename: str, _template: str, context: dict, _doctree: Any
) -> None:
    """Point the page's Colab button at its Colab edition; a page without one (the teachers'
    page) loses the button rather than open its MyST source in Colab."""
    edition = app.config.bertflow_colab_edition
    url = _edition_urls(Path(app.srcdir), edition).get(pagename)
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        colab = [b for b in group["buttons"] if b.get("text") == "Colab"]
        for button in colab:
            if url is None:
                group["buttons"].remove(button)
            else:
                button["url"] = url
                button["tooltip"] = (
                    "Open this chapter's student edition in Colab"
                    if edition == "student"
                    else "Open this chapter's Colab edition"
                )
    context["header_buttons"] = [
        g
        for g in context.get("header_buttons", [])
        if g.get("label") != "launch-buttons" or g["buttons"]
    ]


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("bertflow_colab_edition", "colab", "html")
    # after sphinx-book-theme adds its launch buttons (priority 501)
    app.connect("html-page-context", _open_edition, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
