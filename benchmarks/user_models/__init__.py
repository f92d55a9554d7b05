"""Models written as public PyTorch scripts write them, once, against a module `L` that is torch
or minitorch (benchmarks/bench_user_models.py times them). Each `build(L)` returns a training
step: a zero-argument callable that runs one iteration and returns its loss."""
