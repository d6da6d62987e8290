"""``python -m bertflow_mini …`` — see :mod:`bertflow_mini.cli`."""

from bertflow_mini.cli import main

raise SystemExit(main())
