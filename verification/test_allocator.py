"""The opt-in allocator tuning is accepted by this platform's glibc, and never applied at
import."""

import subprocess
import sys

from minitorch.allocator import tune_allocator


def test_allocator_tuning_accepted():
    assert tune_allocator() is True


def test_allocator_not_tuned_at_import():
    """Importing minitorch must not touch the host program's allocator."""
    code = ("import sys, minitorch, minitorch.nn, minitorch.optim; "
            "sys.exit(int('minitorch.allocator' in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
