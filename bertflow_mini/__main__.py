"""``python -m bertflow_mini …`` — see :mod:`bertflow_mini.cli`."""
from .cli import main

raise SystemExit(main())
