"""Compare a checked notebook cell's fresh output with its committed output: the words exactly, the
numbers within a stated tolerance.

Another CPU (or another BLAS kernel, or another thread count) computes trained numbers slightly
differently, so such cells cannot be checked by exact text. The test machinery lives in the cell's
metadata, where a reader never sees it (Jupyter: View → Cell toolbar → Edit metadata / Tags):

    "tags": ["nbval-check-output"]            nbval's own tag: checked, exactly
    "tolerance": "atol=0.1 rtol=0"            checked by :func:`compare_cell`, under this tolerance
    "tolerance_why": "a trained number"       the reason, for the maintainer

nbval runs the chapters and calls :func:`compare_cell` for checked cells with a tolerance
(``book/conftest.py``). The cell's output is split into numbers and the text between them. The text
must be identical (a run of whitespace counts as one space, and whitespace beside a number is
ignored, since a table's columns shift when a number gains a digit or a sign). Each number must be
within

    max(atol, rtol·|committed|, ulps·step)

of the committed one, where ``step`` is one unit in the committed number's last printed digit
(0.01 for ``0.58``, 1e-06 for ``1.776e-03``): rounding alone can move a printed number by one step.
Options left out take :data:`DEFAULT`'s values. Integers (``338``, ``1,000,000``) are counts and must
match exactly unless the cell sets ``ints``; percentages (``16%``) are rounded ratios and get the
float tolerance.

``python -m bookbuild.output_check COMMITTED.ipynb FRESH.ipynb`` compares two whole
notebooks (``make refresh`` prints it for each chapter it rewrote): every number that moved, and
every checked cell that no longer matches; ``--max-share 0.5`` also fails on a number that used more
than half its tolerance, and ``--unchecked`` lists how the unchecked cells' outputs changed.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

CHECK_TAG = "nbval-check-output"  # nbval's own tag: the cell's output is checked
TOLERANCE_KEY = "tolerance"  # cell metadata: "atol=0.1 rtol=0"
#: What must not appear in a cell's source any more: the markers a reader would see.
SOURCE_MARKERS = re.compile(r"NBVAL_|^\s*#\s*tolerance:", re.M)

NUMBER = re.compile(
    r"""(?<![\w.])                  # not inside a name (STS12, x1, log10) or after a decimal point
        [-+]?
        (?P<int> \d{1,3}(?:,\d{3})+ | \d+ )   # 1,000,000 or 42
        (?P<frac> \.\d+ )?
        (?: [eE] (?P<exp> [-+]?\d+ ) )?
        (?P<pct> % )?""",
    re.X,
)


@dataclass(frozen=True)
class Number:
    """One number as printed: its text, its value and one unit in its last printed digit."""

    text: str
    value: float
    step: float
    is_int: bool


@dataclass(frozen=True)
class Tolerance:
    """How far a fresh number may drift from the committed one (see the module docstring)."""

    rtol: float = (
        0.02  # relative to |committed|: ratios, losses, Spearman x 100 (±1.6 at 80)
    )
    atol: float = 0.0  # absolute, in the number's own units
    ulps: float = 1.0  # units in the committed number's last printed digit
    ints: float = 0.0  # absolute drift allowed for integers (counts): exact by default

    def bound(self, committed: Number) -> float:
        """The largest |fresh - committed| this tolerance accepts for ``committed``."""
        if committed.is_int:
            return self.ints
        return max(
            self.atol, self.rtol * abs(committed.value), self.ulps * committed.step
        )


DEFAULT = Tolerance()
#: A checked cell without a tolerance line: the same text, every digit.
EXACT = Tolerance(rtol=0.0, atol=0.0, ulps=0.0)


@dataclass(frozen=True)
class Drift:
    """A number whose printed form changed, and how far it may move."""

    where: str
    committed: Number
    fresh: Number
    allowed: float

    @property
    def size(self) -> float:
        """|fresh - committed|."""
        return abs(self.fresh.value - self.committed.value)

    @property
    def ok(self) -> bool:
        """Same form (integer or not) and within the allowed drift, up to float noise in the difference."""
        return (
            self.committed.is_int == self.fresh.is_int
            and self.size <= self.allowed * (1 + 1e-9)
        )

    @property
    def share(self) -> float:
        """The drift as a share of what is allowed: above 1 fails."""
        if self.allowed > 0:
            return self.size / self.allowed
        return 0.0 if self.size == 0 else float("inf")

    @property
    def detail(self) -> str:
        """What moved and how far, in words."""
        return f"{self.committed.text} is now {self.fresh.text} (drift {self.size:.3g}, allowed {self.allowed:.3g})"

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


@dataclass(frozen=True)
class Mismatch:
    """Why a fresh output differs from the committed one, in words."""

    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


def parse_tolerance(options: str) -> Tolerance:
    """A :class:`Tolerance` from ``"atol=0.1 rtol=0"``; options left out take :data:`DEFAULT`'s.

    An unknown option is an error, so a typo cannot silently fall back to another tolerance.
    """
    known = {f.name for f in fields(Tolerance)}
    values: dict[str, float] = {}
    for word in options.split():
        key, sep, value = word.partition("=")
        if not sep or key not in known:
            raise ValueError(
                f"tolerance: unknown option {word!r}; expected key=value with key in "
                f"{sorted(known)}"
            )
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError(f"tolerance: {word!r} is not a number") from None
    return replace(DEFAULT, **values)


def cell_tolerance(cell: dict[str, Any]) -> Tolerance | None:
    """The tolerance a checked cell states in its metadata, or None when the cell is not checked.

    A cell is checked when its tags hold nbval's ``nbval-check-output``; its numbers may then drift
    by what its ``tolerance`` metadata states, and without one its output must be identical
    (:data:`EXACT`). Markers left in the source (``# NBVAL_…``, ``# tolerance:``) are an error:
    readers would see them.
    """
    source = _joined(cell.get("source", ""))
    marker = SOURCE_MARKERS.search(source)
    if marker:
        raise ValueError(
            "test markers belong in the cell's metadata, not its source: "
            f"{marker.group(0)!r}"
        )
    metadata = cell.get("metadata", {})
    if CHECK_TAG not in metadata.get("tags", []):
        if TOLERANCE_KEY in metadata:
            raise ValueError(
                f"a tolerance without the {CHECK_TAG!r} tag checks nothing"
            )
        return None
    if TOLERANCE_KEY not in metadata:
        return EXACT
    return parse_tolerance(metadata[TOLERANCE_KEY])


def parse_number(match: re.Match[str]) -> Number:
    """A :class:`Number` from a match of :data:`NUMBER`."""
    text = match.group(0)
    frac, exp, pct = match.group("frac"), match.group("exp"), match.group("pct")
    value = float(text.rstrip("%").replace(",", ""))
    decimals = len(frac) - 1 if frac else 0
    step = 10.0 ** (int(exp or 0) - decimals)
    return Number(text, value, step, is_int=not (frac or exp or pct))


def split_numbers(text: str) -> tuple[list[str], list[Number]]:
    """The text around the numbers (whitespace normalised) and the numbers, in order.

    ``"rho = 0.58 (n=1,379)"`` gives the words ``["rho =", "(n=", ")"]`` and the numbers 0.58 and 1379.
    """
    words: list[str] = []
    numbers: list[Number] = []
    start = 0
    for match in NUMBER.finditer(text):
        words.append(_normalise(text[start : match.start()]))
        numbers.append(parse_number(match))
        start = match.end()
    words.append(_normalise(text[start:]))
    return words, numbers


def _normalise(words: str) -> str:
    """Runs of whitespace as one space, none at either end."""
    return " ".join(words.split())


def compare_text(
    committed: str, fresh: str, tolerance: Tolerance = DEFAULT, where: str = "output"
) -> tuple[list[Mismatch], list[Drift]]:
    """Mismatches between two printed outputs under ``tolerance``, and every number that changed."""
    words_c, numbers_c = split_numbers(committed)
    words_f, numbers_f = split_numbers(fresh)
    if len(numbers_c) != len(numbers_f):
        return [
            Mismatch(where, f"{len(numbers_c)} numbers committed, {len(numbers_f)} now")
        ], []
    mismatches = [
        Mismatch(where, f"text {c!r} is now {f!r}")
        for c, f in zip(words_c, words_f)
        if c != f
    ]
    drifts = [
        Drift(where, c, f, tolerance.bound(c))
        for c, f in zip(numbers_c, numbers_f)
        if c.text != f.text
    ]
    mismatches += [Mismatch(where, d.detail) for d in drifts if not d.ok]
    return mismatches, drifts


def output_texts(outputs: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, text) for each output that prints text: streams by name, results by their text/plain.

    Figures are left out: their pixels are not compared. Errors are kept, so an error that appears
    (or disappears) is a mismatch.
    """
    texts = []
    for out in outputs:
        kind = out["output_type"]
        if kind == "stream":
            texts.append((out["name"], _joined(out["text"])))
        elif kind == "error":
            texts.append(("error", f"{out['ename']}: {out['evalue']}"))
        elif "text/plain" in out.get("data", {}) and not any(
            k.startswith("image/") for k in out["data"]
        ):
            texts.append((kind, _joined(out["data"]["text/plain"])))
    return texts


def _joined(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)


def compare_cell(
    committed: dict[str, Any], fresh: dict[str, Any], where: str
) -> tuple[list[Mismatch], list[Drift]]:
    """Compare one checked code cell's outputs, under the tolerance its metadata states."""
    tolerance = cell_tolerance(committed) or DEFAULT
    texts_c, texts_f = (
        output_texts(committed.get("outputs", [])),
        output_texts(fresh.get("outputs", [])),
    )
    if [k for k, _ in texts_c] != [k for k, _ in texts_f]:
        return [
            Mismatch(
                where,
                f"outputs {[k for k, _ in texts_c]} are now {[k for k, _ in texts_f]}",
            )
        ], []
    mismatches: list[Mismatch] = []
    drifts: list[Drift] = []
    for (kind, c), (_, f) in zip(texts_c, texts_f):
        m, d = compare_text(c, f, tolerance, f"{where} ({kind})")
        mismatches += m
        drifts += d
    return mismatches, drifts


def compare_notebook(
    committed: dict[str, Any], fresh: dict[str, Any]
) -> tuple[list[Mismatch], list[Drift]]:
    """Compare every checked cell of a notebook with the same notebook executed afresh.

    Fresh error outputs in any cell, checked or not, are mismatches too.
    """
    cells_c, cells_f = committed["cells"], fresh["cells"]
    if len(cells_c) != len(cells_f):
        return [
            Mismatch(
                "notebook", f"{len(cells_c)} cells committed, {len(cells_f)} executed"
            )
        ], []
    mismatches: list[Mismatch] = []
    drifts: list[Drift] = []
    for i, (c, f) in enumerate(zip(cells_c, cells_f)):
        if c["cell_type"] != "code":
            continue
        where = f"cell {i} [{c.get('execution_count')}]"
        mismatches += [
            Mismatch(where, f"error {t}")
            for k, t in output_texts(f.get("outputs", []))
            if k == "error"
        ]
        if cell_tolerance(c) is not None:
            m, d = compare_cell(c, f, where)
            mismatches += m
            drifts += d
    return mismatches, drifts


def drift_report(name: str, drifts: list[Drift], top: int = 3) -> str:
    """One line per notebook: how many numbers moved, then the ``top`` largest shares of tolerance."""
    largest = sorted(drifts, key=lambda d: d.share, reverse=True)[:top]
    return "\n    ".join(
        [f"{name}: {len(drifts)} numbers moved" + (", largest:" if largest else "")]
        + [f"{d.share:.2f} of tolerance: {d}" for d in largest]
    )


def unchecked_changes(
    committed: dict[str, Any], fresh: dict[str, Any]
) -> list[Mismatch]:
    """How each *unchecked* code cell's output differs from the committed one, compared exactly
    (:func:`compare_cell` under :data:`EXACT`): what a sentence quoting it would get wrong on
    another run."""
    changes: list[Mismatch] = []
    for i, (c, f) in enumerate(zip(committed["cells"], fresh["cells"])):
        if c["cell_type"] == "code" and cell_tolerance(c) is None:
            exact = {**c, "metadata": {"tags": [CHECK_TAG]}}
            changes += compare_cell(exact, f, f"cell {i}")[0]
    return changes


def main(argv: list[str] | None = None) -> int:
    """Print every number that moved in the checked cells and every mismatch; 1 if any mismatch,
    or (``--max-share``) any number moved beyond that share of its tolerance."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m bookbuild.output_check",
        description="Compare a notebook executed afresh with its committed outputs.",
    )
    parser.add_argument("committed")
    parser.add_argument("fresh")
    parser.add_argument(
        "--max-share",
        type=float,
        help="fail when a checked number moved by more than this share of its tolerance",
    )
    parser.add_argument(
        "--unchecked",
        action="store_true",
        help="also list how unchecked cells' outputs changed (for reviewing the prose)",
    )
    args = parser.parse_args(argv)
    committed, fresh = (
        json.loads(Path(p).read_text(encoding="utf-8"))
        for p in (args.committed, args.fresh)
    )
    mismatches, drifts = compare_notebook(committed, fresh)
    print(drift_report(Path(args.committed).name, drifts, top=len(drifts)))
    for m in mismatches:
        print(f"MISMATCH {m}")
    over = [
        d for d in drifts if args.max_share is not None and d.share > args.max_share
    ]
    for d in over:
        print(f"OVER {args.max_share:g} OF TOLERANCE ({d.share:.2f}) {d}")
    if args.unchecked and len(committed["cells"]) == len(fresh["cells"]):
        for change in unchecked_changes(committed, fresh):
            print(f"UNCHECKED {change}")
    return 1 if mismatches or over else 0


if __name__ == "__main__":
    sys.exit(main())
