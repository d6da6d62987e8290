"""The package's two word splits of a sentence, each written once.

* :func:`tokenize_words` — GloVe's: lower-case, then GloVe's own contractions (``"do n't"``,
  ``"it 's"``: GloVe was trained on Stanford-tokenized text), runs of ASCII letters/digits that
  keep inner apostrophes (``"o'ree"``), and any other non-space character on its own (``","``,
  ``"$"``, accented letters: ``"café"`` → ``"caf"``, ``"é"``). The ASCII runs are the split the
  local mirror's GloVe subset was built with, so on the STS/SICK data its averages match the full
  file's (bar ~20 sentences where a rare name precedes 's, e.g. "herzberg's"). Typographic ’
  counts as '.
* :func:`word_set` — the overlap baselines': the set of lower-cased runs of letters and digits
  (punctuation and ``_`` ignored).
"""

from __future__ import annotations

import re

_GLOVE_WORD = re.compile(
    r"""
      n't\b                                                # the negation clitic of don't / can't
    | '(?:s|re|ve|ll|d|m)\b                                 # 's 're 've 'll 'd 'm
    | [a-z0-9]+?(?=n't\b)                                   # the stem before n't: do, ca, wo
    | [a-z0-9]+(?:'(?!(?:s|re|ve|ll|d|m|t)\b)[a-z0-9]+)*    # a word, inner apostrophes kept
    | \S                                                    # anything else, one at a time
""",
    re.VERBOSE,
)
_ALNUM_RUN = re.compile(r"[^\W_]+")


def tokenize_words(sentence: str) -> list[str]:
    """GloVe's word split: ``"Don't stop."`` → ``['do', "n't", 'stop', '.']``."""
    return _GLOVE_WORD.findall(sentence.lower().replace("\u2019", "'"))


def word_set(sentence: str) -> set[str]:
    """The lower-cased runs of letters and digits: ``"A cat, a CAT_2!"`` → ``{'a', 'cat', '2'}``."""
    return set(_ALNUM_RUN.findall(sentence.lower()))
