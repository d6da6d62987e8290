"""One style for the package, its tests, the scripts and the chapters' code: ``ruff format`` and
``ruff check`` (rules in pyproject.toml) report nothing. Fix with ``ruff format . && ruff check --fix .``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREES = [
    p
    for p in ("bertflow_mini", "tests", "benchmarks", "experiments", "book")
    if (REPO / p).exists()
]


def ruff(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("ruff")
    command = [str(exe)] if exe.exists() else [shutil.which("ruff") or "ruff"]
    return subprocess.run(
        [*command, *args, *TREES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_code_is_formatted_and_lint_clean():
    fmt = ruff("format", "--check")
    assert fmt.returncode == 0, (
        "run `ruff format .`:\n" + fmt.stdout[-3000:] + fmt.stderr[-2000:]
    )
    lint = ruff("check")
    assert lint.returncode == 0, (
        "run `ruff check --fix .`:\n" + lint.stdout[-3000:] + lint.stderr[-2000:]
    )


#: The guide's limit for one module of the package (one job per module).
MAX_MODULE_LINES = 400


def test_no_package_module_is_longer_than_the_limit():
    too_long = {
        str(path.relative_to(REPO)): n
        for path in sorted((REPO / "bertflow_mini").rglob("*.py"))
        if (n := len(path.read_text("utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"split these modules (lines > {MAX_MODULE_LINES}): {too_long}"
