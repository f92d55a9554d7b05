"""torch.utils.data.distributed: DistributedSampler, each rank's share of one ordering of the
dataset per epoch (torch's rules: the ordering seeded by seed + epoch, padded by repeating its
start or cut for drop_last, then every num_replicas-th index from the rank's own)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from ...engine import Generator, randperm
from .sampler import Sampler


class DistributedSampler(Sampler[int]):
    """Indices of `dataset` for one rank of `num_replicas`: the shares of all ranks are
    disjoint and together cover the (padded or cut) epoch.

    Args:
        dataset: anything with __len__.
        num_replicas, rank: default the process group's world size and rank.
        shuffle: a permutation seeded by seed + epoch (minitorch's randperm stream, so the
            order differs from torch's while the shares follow the same rules); else 0..n-1.
        seed: the same on every rank.
        drop_last: cut the tail so every rank gets the same count (else pad by repeating).
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            if not dist.is_initialized():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:  # the largest count every rank can have
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            order = randperm(n, generator=g).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[:self.total_size]
        else:
            short = self.total_size - len(order)
            order += (order * math.ceil(short / len(order)))[:short] if short else []
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose ordering the next iteration gives (call it before each epoch)."""
        self.epoch = epoch
