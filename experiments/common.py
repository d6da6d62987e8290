"""What the experiments share: where results go, how a cell is scored and saved, recipe overrides.

Each experiment appends its results to a JSON file in the package's results folder
(``bertflow_mini/evaluation/results/``, shipped in the wheel and read by
:mod:`bertflow_mini.evaluation.measured`), one record per scored cell, as soon as the cell is
scored: atomically (:func:`bertflow_mini._io.atomic_path`) and under a lock, so several runs can
share a file; a cell already there is not scored again.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the checkout's package, installed or not
    sys.path.insert(0, str(REPO))

from bertflow_mini._io import atomic_path  # noqa: E402
from bertflow_mini.data.pairs import canonical_task  # noqa: E402
from bertflow_mini.encoders import pretrain  # noqa: E402

#: Where the experiments write what the package ships.
RESULTS = REPO / "bertflow_mini" / "evaluation" / "results"
POOLINGS = ("last-avg", "first-last-avg")
METHODS = ("none", "whitening", "flow")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock for ``path``, held in a file outside the repository."""
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    with open(
        Path(tempfile.gettempdir()) / f"experiment-results-{name}.lock", "w"
    ) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclasses.dataclass(frozen=True)
class ResultsFile:
    """A results file: ``{**head, "records": [...]}``, one record per ``key``."""

    path: Path
    key: tuple[str, ...]
    head: dict

    def read(self) -> dict:
        """The file's content, or an empty one with :attr:`head`."""
        if self.path.is_file():
            return json.loads(self.path.read_text())
        return {**self.head, "records": []}

    def done(self) -> set[tuple]:
        """The keys of the cells already saved."""
        return {tuple(r[k] for k in self.key) for r in self.read()["records"]}

    def save(self, records: list[dict]) -> None:
        """Add ``records`` (replacing cells with the same key), atomically, under a lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path):
            record = self.read()
            cells = {
                tuple(r[k] for k in self.key): r for r in record["records"] + records
            }
            rows = sorted(
                cells.values(), key=lambda r: tuple(str(r[k]) for k in self.key)
            )
            meta = {k: v for k, v in record.items() if k != "records"}
            # one record per line: short diffs when cells are added
            text = json.dumps(meta)[:-1] + ', "records": [\n'
            text += ",\n".join(json.dumps(r) for r in rows) + "\n]}\n"
            with atomic_path(self.path) as tmp:
                tmp.write_text(text)


def score_cells(
    evaluation,
    results: ResultsFile,
    prefix: tuple,
    tasks: Iterable[str],
    poolings: Iterable[str],
    methods: Iterable[str],
    extra: dict,
    command: str,
    skip: Callable[[str], bool] = lambda method: False,
) -> None:
    """Score every (task, pooling, method) cell of ``evaluation`` (an
    :class:`~bertflow_mini.evaluation.reproduce.Evaluation`) not yet in ``results``, and save
    each at once: its key is ``prefix + (pooling, method, task)``, then ``extra``, the score
    (Spearman × 100, ``wmean`` and ``all``, post-processor fitted on the target), the seconds
    it took and the ``command``. ``skip(method)``: leave that method out."""
    for task in tasks:
        for pooling in poolings:
            for method in methods:
                key = (*prefix, pooling, method, canonical_task(task))
                if skip(method) or key in results.done():
                    continue
                start = time.perf_counter()
                score = evaluation.score(task, pooling, method)
                seconds = time.perf_counter() - start
                results.save([{
                    **dict(zip(results.key, key)), **extra, "score": round(score.wmean, 4),
                    "all": round(score.all, 4), "fit": "target", "aggregation": "wmean",
                    "seconds": round(seconds, 1), "command": command,
                }])  # fmt: skip
                print(f"{key}: {score.wmean:.2f}  ({seconds:.0f} s)", flush=True)


def parse_settings(items: list[str]) -> dict:
    """``["layers=2", "lr=1e-3"]`` → recipe overrides with the recipe's own field types."""
    kinds = {"int": int, "float": float, "str": str}
    fields = {f.name: kinds[str(f.type)] for f in dataclasses.fields(pretrain.Recipe)}
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in fields:
            known = ", ".join(fields)
            raise SystemExit(f"--set {item}: no recipe field {key!r} (fields: {known})")
        out[key] = fields[key](value)
    return out


def command_line(script: str, argv: list[str] | None) -> str:
    """How this run was started, for the record: ``experiments/<script> <arguments>``."""
    return f"experiments/{script} " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
