"""``python -m s2s``: the command line (see :mod:`s2s.cli`)."""

import sys

from .cli import main

sys.exit(main())
