"""torch.backends' switches and queries that device-picking and seeding code touches:
`backends.mps.is_available()` is False, and `backends.cudnn.deterministic = True` or
`backends.cuda.matmul.allow_tf32 = True` are accepted and change nothing (minitorch has no GPU
backend; its float32 GEMMs are always full precision)."""

from __future__ import annotations

from types import SimpleNamespace

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                        is_available=lambda: False)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=lambda: False)
