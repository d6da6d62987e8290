"""The package's version is the one pyproject.toml declares."""

from __future__ import annotations

import re
from pathlib import Path

import bertflow_mini

PACKAGE = Path(bertflow_mini.__file__).parent


def test_version_agrees_with_pyproject():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    assert (
        re.search(r'^version = "([^"]+)"', text, re.M).group(1)
        == bertflow_mini.__version__
    )
