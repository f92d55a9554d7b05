"""Root pytest configuration: fix BLAS threads before numpy loads.

Tests here measure correctness, not speed; one BLAS thread keeps them fast and deterministic on a
shared 2-core machine. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are deliberately left alone.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
