"""`python -m minitorch ...` runs the command-line interface (see minitorch/cli.py)."""

import sys

from .cli import main

sys.exit(main())
