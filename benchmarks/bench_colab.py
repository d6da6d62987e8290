"""Each chapter as a Colab reader runs it, timed: its Colab edition, unedited, on the book's model,
in the simulated runtime of ``tests/colab_mirror.py`` — the package's wheel in a fresh virtualenv,
``google.colab`` present, a new session's empty cache, ``scratch-bert`` and chapter 7's SimCSE runs
fetched from the release (packed from this machine's cache as ``make release`` packs it, served
from localhost), the data from the local mirror. Wall-clock minutes of the whole notebook, install
cell to last cell, on this machine's cores; run it on a quiet machine.

    python benchmarks/bench_colab.py                   # every chapter
    python benchmarks/bench_colab.py --chapters 02 06  # some chapters (the others kept from --out)
    python benchmarks/bench_colab.py --smoke           # a two-cell notebook: set-up, fetch, nothing kept

Writes ``colab-minutes.json`` into the package's results folder (``--out``): the README's table
and the teachers' page read it (``bf.colab_minutes()``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
EDITIONS = sorted(REPO.glob("book/colab/[0-9][0-9]-*.ipynb"))
RESULTS = REPO / "bertflow_mini" / "evaluation" / "results"


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def slowest(nb, n: int = 3) -> str:
    """The ``n`` slowest cells of an executed notebook: index and seconds."""
    from datetime import datetime

    def seconds(cell) -> float:
        timing = cell.get("metadata", {}).get("execution", {})
        start, end = (
            timing.get("iopub.execute_input"),
            timing.get("shell.execute_reply"),
        )
        if not (start and end):
            return 0.0
        parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
        return (parse(end) - parse(start)).total_seconds()

    times = sorted(((seconds(c), i) for i, c in enumerate(nb.cells)), reverse=True)[:n]
    return ", ".join(f"cell {i} {s:.0f} s" for s, i in times)


def smoke_notebook(root: Path) -> Path:
    """A notebook with a Colab set-up cell and nothing else (named as chapter 99)."""
    import nbformat
    import yaml

    repository = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    install = f'%pip install -q "bertflow_mini @ git+{repository}"'
    cells = [
        f'import sys\nif "google.colab" in sys.modules:\n    {install}',
        "import bertflow_mini as bf\nbf.setup()",
    ]
    path = root / "99-smoke.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
        path,
    )
    return path


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--chapters", nargs="*", help="two-digit numbers (default: all)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "colab-minutes.json")
    parser.add_argument("--smoke", action="store_true", help="time a set-up cell only")
    args = parser.parse_args(argv)
    from colab_mirror import book_runtime, qnli_fixture, run_chapter

    shared = Path(os.environ.get("BERTFLOW_SHARED", REPO.parent / "shared"))
    data = Path(os.environ.get("BERTFLOW_DATA") or shared / "data")
    old = json.loads(args.out.read_text()) if args.out.exists() else {"chapters": {}}
    chapters = dict(old["chapters"]) if args.chapters else {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runtime = book_runtime(root / "runtime", shared, data)
        editions = [smoke_notebook(root)] if args.smoke else EDITIONS
        for edition in editions:
            number = edition.name[:2]
            if args.chapters and number not in args.chapters:
                continue
            cache, work = root / number / "cache", root / number / "work"
            work.mkdir(parents=True)
            qnli_fixture(cache, data)
            env = {**runtime["env"], "BERTFLOW_CACHE": str(cache)}
            start = time.perf_counter()
            nb, _ = run_chapter(edition, work, env, timeout=3600, record_timing=True)
            minutes = (time.perf_counter() - start) / 60
            chapters[number] = round(minutes, 2)
            print(
                f"chapter {number}: {minutes:.1f} min; slowest cells: {slowest(nb)}",
                flush=True,
            )
    if args.smoke:
        return {"chapters": chapters}
    result = {
        "what": "wall-clock minutes of each chapter's Colab edition, from a new session's empty "
        "cache, the book's model fetched from the release (benchmarks/bench_colab.py)",
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count()},
        "chapters": dict(sorted(chapters.items())),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
