"""A bigram character model, in the manner of the first script of a lecture on building GPT
from scratch: hyperparameters as globals, the whole text as one tensor, random chunks as
batches, an embedding table read as next-character logits, AdamW, a periodic estimate of the
train and val losses, and a sample at the end.

    python lecture_bigram.py input.txt [--max_iters=3000 --seed=1337 ...]
Additions for checking it on two libraries: --numpy_batches=True draws chunk offsets with
NumPy, --init_weights=FILE loads the initial state_dict (--save_init=FILE writes it),
--loss_log=FILE records each evaluation with full precision, --dtype=float64."""

import sys

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size = 32  # sequences per step
block_size = 8  # context length
max_iters = 3000
eval_interval = 300
learning_rate = 1e-2
device = "cuda" if torch.cuda.is_available() else "cpu"
eval_iters = 200
seed = 1337
numpy_batches = False
init_weights = ""
save_init = ""
loss_log = ""
dtype = "float32"  # "float64": the default dtype for the whole run
# python lecture_bigram.py TEXT --name=value ...: each value converted to its default's type
for arg in sys.argv[2:]:
    name, value = arg[2:].split("=", 1)
    old = globals()[name]
    globals()[name] = value == "True" if isinstance(old, bool) else type(old)(value)

torch.manual_seed(seed)
if dtype == "float64":
    torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(seed)

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
chars = sorted(list(set(text)))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
encode = lambda s: [stoi[c] for c in s]  # noqa: E731  (a string -> a list of ids)
decode = lambda ids: "".join([itos[i] for i in ids])  # noqa: E731

data = torch.tensor(encode(text), dtype=torch.long)
n = int(0.9 * len(data))
train_data = data[:n]
val_data = data[n:]


def get_batch(split):
    data = train_data if split == "train" else val_data
    if numpy_batches:
        ix = torch.tensor(rng.integers(0, len(data) - block_size, size=batch_size))
    else:
        ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


class BigramLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)  # row i: logits after i

    def forward(self, idx, targets=None):
        logits = self.token_embedding_table(idx)  # (B, T, C)
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        logits = logits.view(B * T, C)
        targets = targets.view(B * T)
        return logits, F.cross_entropy(logits, targets)

    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, loss = self(idx)
            probs = F.softmax(logits[:, -1, :], dim=-1)  # (B, C)
            idx_next = torch.multinomial(probs, num_samples=1)  # (B, 1)
            idx = torch.cat((idx, idx_next), dim=1)  # (B, T+1)
        return idx


model = BigramLanguageModel(vocab_size)
m = model.to(device)
if init_weights:
    model.load_state_dict(torch.load(init_weights))
if save_init:
    torch.save(model.state_dict(), save_init)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

for iter in range(max_iters):
    if iter % eval_interval == 0 or iter == max_iters - 1:
        losses = estimate_loss()
        print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if loss_log:
            with open(loss_log, "a") as f:
                print(iter, repr(losses["train"].item()), repr(losses["val"].item()), file=f)
    xb, yb = get_batch("train")
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

context = torch.zeros((1, 1), dtype=torch.long, device=device)
print(decode(m.generate(context, max_new_tokens=200)[0].tolist()))
