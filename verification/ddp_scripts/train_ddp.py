"""A PyTorch DDP training script in the manner of nanoGPT's train.py (test code): torchrun's
environment, init_process_group, DDP(model, device_ids=[local_rank]), gradient accumulation with
require_backward_grad_sync, raw_model = model.module, AdamW, clipping, a DistributedSampler
loader, checkpoints from rank 0, dist.all_reduce(AVG) of the logged loss. It runs under real
torch (torchrun, gloo) and under `minitorch run` unchanged. --fault plants a failure on rank 1.

    python train_ddp.py --out DIR [--iters 4 --accum 4 --batch 4 --shuffle 1 --fault NAME]
"""

import argparse
import datetime
import json
import math
import os
import signal

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--iters", type=int, default=4)
parser.add_argument("--accum", type=int, default=4)  # micro-steps per iteration, all ranks
parser.add_argument("--batch", type=int, default=4)  # rows per micro-step
parser.add_argument("--shuffle", type=int, default=1)
parser.add_argument("--fault", default="")
parser.add_argument("--timeout", type=float, default=60.0)
args = parser.parse_args()

# -----------------------------------------------------------------------------
ddp = int(os.environ.get("RANK", -1)) != -1  # is this a ddp run?
if ddp:
    dist.init_process_group(backend="gloo", timeout=datetime.timedelta(seconds=args.timeout))
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    ddp_world_size = int(os.environ["WORLD_SIZE"])
    master_process = ddp_rank == 0
else:
    ddp_rank, ddp_local_rank, ddp_world_size, master_process = 0, 0, 1, True
assert args.accum % ddp_world_size == 0
gradient_accumulation_steps = args.accum // ddp_world_size
torch.set_default_dtype(torch.float64)
vocab, block, width = 11, 8, 16


class TinyLM(nn.Module):
    """Token and position embeddings, a LayerNorm'd GELU MLP, a head tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(block, width)
        self.ln = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying: two gradients into one parameter
        self.register_buffer("pos", torch.arange(block))

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(self.pos[: idx.shape[1]])  # (B, T, C)
        x = x + self.proj(F.gelu(self.fc(self.ln(x))))  # (B, T, C)
        logits = self.lm_head(x)  # (B, T, vocab)
        loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        return logits, loss


model = TinyLM()
# Every rank starts from different weights: DDP must give all of them rank 0's.
rng = np.random.default_rng(1234 + ddp_rank)
with torch.no_grad():
    for _, p in sorted(model.named_parameters()):
        p.copy_(torch.from_numpy(rng.normal(0.0, 0.3, size=tuple(p.shape))))
if ddp:
    # device_ids as nanoGPT passes them on GPUs; torch refuses them for a CPU module
    model = DDP(model, device_ids=[ddp_local_rank] if torch.cuda.is_available() else None)
raw_model = model.module if ddp else model  # unwrap DDP container if needed
optimizer = torch.optim.AdamW(raw_model.parameters(), lr=1e-2, weight_decay=0.1)

data_rng = np.random.default_rng(7)
n_rows = args.iters * args.accum * args.batch
x = torch.from_numpy(data_rng.integers(0, vocab, size=(n_rows, block)))
y = torch.from_numpy(data_rng.integers(0, vocab, size=(n_rows, block)))
sampler = DistributedSampler(TensorDataset(x, y), num_replicas=ddp_world_size, rank=ddp_rank,
                             shuffle=bool(args.shuffle), seed=3)
sampler.set_epoch(0)
loader = iter(DataLoader(TensorDataset(x, y), batch_size=args.batch, sampler=sampler))

losses = []
for iter_num in range(args.iters):
    total = torch.zeros(())
    for micro_step in range(gradient_accumulation_steps):
        if ddp:  # sync gradients at the last micro-step only
            model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        X, Y = next(loader)
        logits, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps  # scale the loss to account for accumulation
        total = total + loss.detach()
        if args.fault == "kill" and ddp_rank == 1 and iter_num == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if args.fault == "raise" and ddp_rank == 1 and iter_num == 1:
            raise RuntimeError("planted: rank 1 fails alone")
        loss.backward()
    torch.nn.utils.clip_grad_norm_(raw_model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if ddp:
        if args.fault == "shape" and ddp_rank == 1 and iter_num == 1:
            total = torch.zeros(2)
        if not (args.fault == "skip" and ddp_rank == 1 and iter_num == 1):
            dist.all_reduce(total, op=dist.ReduceOp.AVG)  # the global batch's loss
    losses.append(float(total.item()))
    if master_process:
        checkpoint = {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
                      "iter_num": iter_num}
        torch.save(checkpoint, os.path.join(args.out, "ckpt.pt"))

if master_process:
    weights = {k: v.detach().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)
               for k, v in raw_model.state_dict().items()}
    np.savez(os.path.join(args.out, "weights.npz"), **weights)
    with open(os.path.join(args.out, "losses.json"), "w") as f:
        json.dump({"losses": losses, "world_size": ddp_world_size,
                   "finite": all(math.isfinite(v) for v in losses)}, f)
if ddp:
    dist.barrier()
    dist.destroy_process_group()
