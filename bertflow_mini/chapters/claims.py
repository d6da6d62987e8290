"""The check behind a sentence of prose, for the model a chapter runs: the book's prose was written
for the book's model, so there a false sentence fails the chapter; on any other model it is a note.

:class:`~bertflow_mini.chapters.chapter.Chapter` calls it for the chapter's claims
(``ch.claim(...)``), :mod:`~bertflow_mini.chapters.exercises` for its hidden checks of the answer
key (``ch.confirm(...)``); both pass the model explicitly.
"""

from __future__ import annotations

from bertflow_mini.encoders.names import BOOK_MODEL
from bertflow_mini.encoders.spec import short_name


class ClaimError(AssertionError):
    """A sentence of the book's prose no longer holds for the model it was written for."""


def is_book_model(model: str) -> bool:
    """Whether ``model`` is the book's own model (by its short name), the one the prose describes."""
    return short_name(model) == BOOK_MODEL


def claim(model: str, holds: bool, statement: str, detail: object = "") -> bool:
    """The check behind a sentence of prose: ``holds`` says whether ``statement`` is true of the
    outputs ``model`` just printed.

    For the book's own model (the one the prose was written for) a false claim fails the chapter
    with :class:`ClaimError`; for any other model it prints a note right under the cell and the
    chapter goes on.
    Returns ``holds``, so a cell can choose its wording from it.
    """
    holds = bool(holds)
    if holds:
        return True
    message = f"{statement}{f' ({detail})' if detail else ''}"
    if is_book_model(model):
        raise ClaimError(
            f"the prose says: {message} — and for {model} it no longer holds"
        )
    print(
        f"NOTE: the text says '{statement}', written for {BOOK_MODEL}; on {model} this does not hold"
        + (f": {detail}" if detail else "")
        + "."
    )
    return False
