"""Two PyTorch training scripts of the kind tutorials teach, written here, run unchanged on
torch and on minitorch (`L` is the library, as `import minitorch as torch` would bind it): a
character MLP with a hand-written batch norm, retain_grad and the `p.data += -lr * p.grad`
update, then an nn.Sequential with SGD and StepLR; and a small transformer language model with
register_buffer, masked_fill, Dropout, apply(init), @no_grad, eval/train, AdamW, generation
with multinomial, and save/load of its state_dict. Random streams differ between the
libraries, so what is compared is everything else: counts, shapes, learning rates, round trips
(the losses are checked finite; their values depend on the draws)."""

# ruff: noqa: E702, E731, E741  (written as tutorial scripts are: `a; b`, lambdas, `l`)
from __future__ import annotations

import numpy as np
import pytest
import torch as _torch

import minitorch as _minitorch


def _mlp_script(L):
    torch = L
    F = L.nn.functional
    nn = L.nn
    out = []
    words = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "charlotte", "amelia"]
    chars = sorted(set("".join(words)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}; stoi["."] = 0
    V = len(stoi)
    X, Y = [], []
    for w in words:
        ctx = [0] * 3
        for ch in w + ".":
            ix = stoi[ch]; X.append(ctx); Y.append(ix); ctx = ctx[1:] + [ix]
    X = torch.tensor(X); Y = torch.tensor(Y)
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((V, 10), generator=g)
    W1 = torch.randn((30, 64), generator=g) * (5/3) / 30**0.5
    b1 = torch.randn(64, generator=g) * 0.01
    W2 = torch.randn((64, V), generator=g) * 0.01
    b2 = torch.randn(V, generator=g) * 0
    bngain = torch.ones((1, 64)); bnbias = torch.zeros((1, 64))
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    for p in parameters:
        p.requires_grad = True
    out.append(sum(p.nelement() for p in parameters))
    lossi = []
    for i in range(20):
        ix = torch.randint(0, X.shape[0], (16,), generator=g)
        Xb, Yb = X[ix], Y[ix]
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1 + b1
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
        h = torch.tanh(hpreact)
        h.retain_grad()
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < 10 else 0.01
        for p in parameters:
            p.data += -lr * p.grad
        lossi.append(loss.log10().item())
    out.append((len(lossi), tuple(h.grad.shape), bool(np.isfinite(lossi).all())))
    with torch.no_grad():
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        draw = torch.multinomial(probs[0], num_samples=1, replacement=True, generator=g)
        out.append((tuple(probs.shape), tuple(draw.shape)))
        accuracy = (logits.max(1).indices == Yb).float().mean().item()
        out.append((tuple(F.one_hot(Yb, num_classes=V).float().shape), 0 <= accuracy <= 1))
    out.append(tuple(torch.tensor(lossi).view(-1, 5).mean(1).shape))
    model = nn.Sequential(nn.Linear(30, 32), nn.Tanh(), nn.Linear(32, V))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    for _ in range(10):
        pred = model(C[X].detach().view(-1, 30))
        loss = nn.CrossEntropyLoss()(pred, Y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    out.append((sched.get_last_lr(), torch.is_tensor(loss)))
    return out


def _transformer_script(L, path):
    torch = L
    nn = L.nn
    F = L.nn.functional
    out = []
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(1337)
    text = "to be or not to be that is the question whether tis nobler in the mind " * 20
    chars = sorted(list(set(text))); vocab_size = len(chars)
    stoi = {ch: i for i, ch in enumerate(chars)}; itos = {i: ch for i, ch in enumerate(chars)}
    encode = lambda s: [stoi[c] for c in s]
    decode = lambda l: "".join([itos[i] for i in l])
    data = torch.tensor(encode(text), dtype=torch.long)
    n = int(0.9 * len(data)); train_data = data[:n]; val_data = data[n:]
    block_size, batch_size, n_embd, n_head = 8, 4, 16, 2

    def get_batch(split):
        d = train_data if split == "train" else val_data
        ix = torch.randint(len(d) - block_size, (batch_size,))
        x = torch.stack([d[i:i + block_size] for i in ix])
        y = torch.stack([d[i + 1:i + block_size + 1] for i in ix])
        return x.to(device), y.to(device)

    class Head(nn.Module):
        def __init__(self, head_size):
            super().__init__()
            self.key = nn.Linear(n_embd, head_size, bias=False)
            self.query = nn.Linear(n_embd, head_size, bias=False)
            self.value = nn.Linear(n_embd, head_size, bias=False)
            self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
            self.dropout = nn.Dropout(0.1)
        def forward(self, x):
            B, T, C = x.shape
            k = self.key(x); q = self.query(x)
            wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
            wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
            wei = F.softmax(wei, dim=-1)
            wei = self.dropout(wei)
            return wei @ self.value(x)

    class MultiHead(nn.Module):
        def __init__(self, num_heads, head_size):
            super().__init__()
            self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
            self.proj = nn.Linear(head_size * num_heads, n_embd)
        def forward(self, x):
            return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.sa = MultiHead(n_head, n_embd // n_head)
            self.ffwd = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(),
                                      nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.1))
            self.ln1 = nn.LayerNorm(n_embd); self.ln2 = nn.LayerNorm(n_embd)
        def forward(self, x):
            x = x + self.sa(self.ln1(x))
            return x + self.ffwd(self.ln2(x))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab_size, n_embd)
            self.pos = nn.Embedding(block_size, n_embd)
            self.blocks = nn.Sequential(*[Block() for _ in range(2)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab_size)
            self.apply(self._init)
        def _init(self, m):
            if isinstance(m, nn.Linear):
                torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if m.bias is not None:
                    torch.nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
        def forward(self, idx, targets=None):
            B, T = idx.shape
            x = self.tok(idx) + self.pos(torch.arange(T, device=device))
            logits = self.head(self.ln_f(self.blocks(x)))
            if targets is None:
                return logits, None
            B, T, C = logits.shape
            return logits, F.cross_entropy(logits.view(B * T, C), targets.view(B * T))
        def generate(self, idx, max_new_tokens):
            for _ in range(max_new_tokens):
                logits, _ = self(idx[:, -block_size:])
                probs = F.softmax(logits[:, -1, :], dim=-1)
                idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
            return idx

    @torch.no_grad()
    def estimate_loss(model):
        out = {}
        model.eval()
        for split in ["train", "val"]:
            losses = torch.zeros(3)
            for k in range(3):
                X, Y = get_batch(split)
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    model = LM().to(device)
    out.append(sum(p.numel() for p in model.parameters()))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for it in range(5):
        if it % 2 == 0:
            l = estimate_loss(model)
            out.append(f"{l['train']:.0f} {l['val']:.0f}")  # ~2.8 at the start
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    ctx = torch.zeros((1, 1), dtype=torch.long, device=device)
    out.append(len(decode(model.generate(ctx, max_new_tokens=20)[0].tolist())))
    before = [p.detach().numpy().copy() for p in model.parameters()]
    torch.save(model.state_dict(), path)
    for p in model.parameters():
        p.data = p.data * 0
    model.load_state_dict(torch.load(path))
    out.append(all(np.array_equal(p.detach().numpy(), b)
                   for p, b in zip(model.parameters(), before)))
    return out


@pytest.mark.parametrize("script", ["mlp", "transformer"])
def test_a_ported_script_runs_as_in_torch(script, tmp_path):
    if script == "mlp":
        got, want = _mlp_script(_minitorch), _mlp_script(_torch)
    else:
        got = _transformer_script(_minitorch, tmp_path / "minitorch.pt")
        want = _transformer_script(_torch, tmp_path / "torch.pt")
    assert got == want
