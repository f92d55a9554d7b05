"""Text generation from a trained GPT: seeded sampling with temperature and top-k."""

from .sample import generate

__all__ = ["generate"]
