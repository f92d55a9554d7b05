"""torch.utils's part that training scripts use: data (Dataset, TensorDataset, DataLoader,
random_split)."""

from . import data  # noqa: F401

__all__ = ["data"]
