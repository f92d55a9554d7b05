"""Learn to spell more words like the ones in a file (one per line), in the manner of
makemore: a character dataset padded to the longest word, an endless loader over a sampler
with replacement, several model types (bigram, MLP, RNN/GRU, bag of words, transformer),
AdamW, TensorBoard scalars, evaluation, sampling, and a saved/resumed model.

    python makemore_style.py -i words.txt -o out --type transformer --max-steps 200
Additions for checking it on two libraries: --init-weights loads the initial state_dict from a
file (--save-init writes it); --numpy-batches draws the training rows with NumPy; --loss-log
writes every step's loss with full precision; --float64 makes float64 the default dtype."""

import argparse
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import Dataset
from torch.utils.data.dataloader import DataLoader
from torch.utils.tensorboard import SummaryWriter


@dataclass
class ModelConfig:
    block_size: int = None  # the context: the longest word + 1
    vocab_size: int = None  # characters + the stop/start token 0
    n_layer: int = 4
    n_embd: int = 64
    n_embd2: int = 64
    n_head: int = 4


# ---------------------------------------------------------------- a transformer
class TanhGELU(nn.Module):
    """GELU by its tanh approximation, written out (as GPT-2's code has it)."""

    def forward(self, x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


class MaskedAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("bias", mask.view(1, 1, cfg.block_size, cfg.block_size))
        self.n_head, self.n_embd = cfg.n_head, cfg.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = MaskedAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(cfg.n_embd, 4 * cfg.n_embd),
                                      c_proj=nn.Linear(4 * cfg.n_embd, cfg.n_embd),
                                      act=TanhGELU()))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block_size = cfg.block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
            wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            h=nn.ModuleList([Layer(cfg) for _ in range(cfg.n_layer)]),
            ln_f=nn.LayerNorm(cfg.n_embd)))
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        n_params = sum(p.numel() for p in self.transformer.parameters())
        print("number of transformer parameters: %.2fM" % (n_params / 1e6,))  # noqa: UP031

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)  # (1, t)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for layer in self.transformer.h:
            x = layer(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return logits, lm_loss(logits, targets)


def lm_loss(logits, targets):
    """Cross-entropy over every position whose target is not -1 (the padding)."""
    if targets is None:
        return None
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


# ---------------------------------------------------------------- a bag of words
class CausalBoW(nn.Module):
    """Each position averages the positions before it (and itself)."""

    def __init__(self, cfg):
        super().__init__()
        self.block_size = cfg.block_size
        self.register_buffer("bias", torch.tril(torch.ones(cfg.block_size, cfg.block_size))
                             .view(1, cfg.block_size, cfg.block_size))

    def forward(self, x):
        B, T, C = x.size()
        att = torch.zeros((B, T, T), device=x.device)
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ x  # (B, T, C)


class BoWBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cbow = CausalBoW(cfg)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(cfg.n_embd, cfg.n_embd2),
                                      c_proj=nn.Linear(cfg.n_embd2, cfg.n_embd)))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x)))

    def forward(self, x):
        x = x + self.cbow(x)
        return x + self.mlpf(x)


class BoW(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block_size, self.vocab_size = cfg.block_size, cfg.vocab_size
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.context_block = BoWBlock(cfg)
        self.lm_head = nn.Linear(cfg.n_embd, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.context_block(self.wte(idx) + self.wpe(pos))
        logits = self.lm_head(x)
        return logits, lm_loss(logits, targets)


# ---------------------------------------------------------------- recurrent nets
class RNNCell(nn.Module):
    """h' = tanh(W [x, h])"""

    def __init__(self, cfg):
        super().__init__()
        self.xh_to_h = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)

    def forward(self, xt, hprev):
        return F.tanh(self.xh_to_h(torch.cat([xt, hprev], dim=1)))


class GRUCell(nn.Module):
    """A gated cell: a reset gate picks what of h to use, an update gate mixes old and new."""

    def __init__(self, cfg):
        super().__init__()
        self.xh_to_z = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)
        self.xh_to_r = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)
        self.xh_to_hbar = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        r = F.sigmoid(self.xh_to_r(xh))
        hbar = F.tanh(self.xh_to_hbar(torch.cat([xt, r * hprev], dim=1)))
        z = F.sigmoid(self.xh_to_z(xh))
        return (1 - z) * hprev + z * hbar


class RNN(nn.Module):
    def __init__(self, cfg, cell_type):
        super().__init__()
        self.block_size, self.vocab_size = cfg.block_size, cfg.vocab_size
        self.start = nn.Parameter(torch.zeros(1, cfg.n_embd2))  # the state before any input
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.cell = RNNCell(cfg) if cell_type == "rnn" else GRUCell(cfg)
        self.lm_head = nn.Linear(cfg.n_embd2, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        emb = self.wte(idx)  # (b, t, n_embd)
        hprev = self.start.expand((b, -1))
        hiddens = []
        for i in range(t):
            hprev = self.cell(emb[:, i, :], hprev)  # (b, n_embd2)
            hiddens.append(hprev)
        logits = self.lm_head(torch.stack(hiddens, 1))  # (b, t, vocab)
        return logits, lm_loss(logits, targets)


# ---------------------------------------------------------------- an MLP over a window
class MLP(nn.Module):
    """Predict the next character from the block_size before it (Bengio et al. 2003); the
    positions before the start hold a special token, vocab_size."""

    def __init__(self, cfg):
        super().__init__()
        self.block_size, self.vocab_size = cfg.block_size, cfg.vocab_size
        self.wte = nn.Embedding(cfg.vocab_size + 1, cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(self.block_size * cfg.n_embd, cfg.n_embd2),
                                 nn.Tanh(), nn.Linear(cfg.n_embd2, self.vocab_size))

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        embs = []
        for _ in range(self.block_size):
            embs.append(self.wte(idx))  # (b, t, n_embd)
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size  # the before-the-start token
        logits = self.mlp(torch.cat(embs, -1))
        return logits, lm_loss(logits, targets)


# ---------------------------------------------------------------- a bigram table
class Bigram(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros((cfg.vocab_size, cfg.vocab_size)))

    def get_block_size(self):
        return 1

    def forward(self, idx, targets=None):
        logits = self.logits[idx]
        return logits, lm_loss(logits, targets)


# ---------------------------------------------------------------- data
class WordDataset(Dataset):
    def __init__(self, words, chars, max_word_length):
        self.words, self.chars, self.max_word_length = words, chars, max_word_length
        self.stoi = {ch: i + 1 for i, ch in enumerate(chars)}
        self.itos = {i: s for s, i in self.stoi.items()}

    def __len__(self):
        return len(self.words)

    def contains(self, word):
        return word in self.words

    def get_vocab_size(self):
        return len(self.chars) + 1

    def get_output_length(self):
        return self.max_word_length + 1

    def encode(self, word):
        return torch.tensor([self.stoi[w] for w in word], dtype=torch.long)

    def decode(self, ix):
        return "".join(self.itos[i] for i in ix)

    def __getitem__(self, idx):
        ix = self.encode(self.words[idx])
        x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        y = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        x[1:1 + len(ix)] = ix
        y[:len(ix)] = ix
        y[len(ix) + 1:] = -1  # no loss past the stop token
        return x, y


def create_datasets(path, split_seed):
    with open(path) as f:
        words = [w.strip() for w in f.read().splitlines()]
    words = [w for w in words if w]
    chars = sorted(set("".join(words)))
    longest = max(len(w) for w in words)
    print(f"number of examples in the dataset: {len(words)}")
    print(f"max word length: {longest}")
    print(f"number of unique characters in the vocabulary: {len(chars)}")
    test_size = min(1000, int(len(words) * 0.1))
    order = np.random.default_rng(split_seed).permutation(len(words)).tolist()
    train = [words[i] for i in order[:-test_size]]
    test = [words[i] for i in order[-test_size:]]
    print(f"split up the dataset into {len(train)} training examples and {len(test)} test examples")
    return WordDataset(train, chars, longest), WordDataset(test, chars, longest)


class EndlessLoader:
    """Batches forever: a sampler with replacement and a huge num_samples, restarted if it
    ever runs out."""

    def __init__(self, dataset, **kwargs):
        sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        self.train_loader = DataLoader(dataset, sampler=sampler, **kwargs)
        self.data_iter = iter(self.train_loader)

    def next(self):
        try:
            batch = next(self.data_iter)
        except StopIteration:
            self.data_iter = iter(self.train_loader)
            batch = next(self.data_iter)
        return batch


class NumpyBatches:
    """Batches of rows drawn with NumPy from a seed: the same rows on any library."""

    def __init__(self, dataset, batch_size, seed):
        self.dataset, self.batch_size = dataset, batch_size
        self.rng = np.random.default_rng(seed)

    def next(self):
        rows = self.rng.integers(0, len(self.dataset), size=self.batch_size).tolist()
        xs, ys = zip(*(self.dataset[i] for i in rows))
        return [torch.stack(xs), torch.stack(ys)]


# ---------------------------------------------------------------- evaluation and sampling
@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
    """Extend idx (b, t) by max_new_tokens tokens, sampled or the most likely."""
    block_size = model.get_block_size()
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        if do_sample:
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def print_samples(num=10, do_sample=True):
    x_init = torch.zeros(num, 1, dtype=torch.long).to(args.device)
    top_k = args.top_k if args.top_k != -1 else None
    steps = train_dataset.get_output_length() - 1
    x_samp = generate(model, x_init, steps, top_k=top_k, do_sample=do_sample).to("cpu")
    seen, unseen = [], []
    for i in range(x_samp.size(0)):
        row = x_samp[i, 1:].tolist()
        row = row[:row.index(0)] if 0 in row else row
        word = train_dataset.decode(row)
        known = train_dataset.contains(word) or test_dataset.contains(word)
        (seen if known else unseen).append(word)
    print("-" * 80)
    print(f"{len(seen)} samples seen in the data: {' '.join(seen)}")
    print(f"{len(unseen)} new samples: {' '.join(unseen)}")
    print("-" * 80)


@torch.inference_mode()
def evaluate(model, dataset, batch_size=50, max_batches=None):
    model.eval()
    loader = DataLoader(dataset, shuffle=False, batch_size=batch_size, num_workers=0)
    losses = []
    for i, batch in enumerate(loader):
        X, Y = [t.to(args.device) for t in batch]
        logits, loss = model(X, Y)
        losses.append(loss.item())
        if max_batches is not None and i >= max_batches:
            break
    model.train()
    return torch.tensor(losses).mean().item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="spell more words")
    parser.add_argument("--input-file", "-i", type=str, default="words.txt")
    parser.add_argument("--work-dir", "-o", type=str, default="out")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--sample-only", action="store_true")
    parser.add_argument("--num-workers", "-n", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=-1)
    parser.add_argument("--device", type=str, default="cpu")
    parser.add_argument("--seed", type=int, default=3407)
    parser.add_argument("--top-k", type=int, default=-1)
    parser.add_argument("--type", type=str, default="transformer",
                        choices=["transformer", "bigram", "mlp", "rnn", "gru", "bow"])
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--n-embd2", type=int, default=64)
    parser.add_argument("--batch-size", "-b", type=int, default=32)
    parser.add_argument("--learning-rate", "-l", type=float, default=5e-4)
    parser.add_argument("--weight-decay", "-w", type=float, default=0.01)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--save-init", type=str, default="")
    parser.add_argument("--init-weights", type=str, default="")
    parser.add_argument("--numpy-batches", action="store_true")
    parser.add_argument("--loss-log", type=str, default="")
    parser.add_argument("--float64", action="store_true")
    args = parser.parse_args()
    print(vars(args))

    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    if args.float64:
        torch.set_default_dtype(torch.float64)
    os.makedirs(args.work_dir, exist_ok=True)
    writer = SummaryWriter(log_dir=args.work_dir)

    train_dataset, test_dataset = create_datasets(args.input_file, args.seed)
    vocab_size = train_dataset.get_vocab_size()
    block_size = train_dataset.get_output_length()
    print(f"dataset determined that: vocab_size={vocab_size}, block_size={block_size}")

    cfg = ModelConfig(vocab_size=vocab_size, block_size=block_size, n_layer=args.n_layer,
                      n_head=args.n_head, n_embd=args.n_embd, n_embd2=args.n_embd2)
    if args.type == "transformer":
        model = Transformer(cfg)
    elif args.type == "bigram":
        model = Bigram(cfg)
    elif args.type == "mlp":
        model = MLP(cfg)
    elif args.type in ("rnn", "gru"):
        model = RNN(cfg, cell_type=args.type)
    elif args.type == "bow":
        model = BoW(cfg)
    model.to(args.device)
    print(f"model #params: {sum(p.numel() for p in model.parameters())}")
    if args.init_weights:
        model.load_state_dict(torch.load(args.init_weights))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.resume or args.sample_only:
        print("resuming from existing model in the workdir")
        model.load_state_dict(torch.load(os.path.join(args.work_dir, "model.pt")))
    if args.sample_only:
        print_samples(num=8, do_sample=args.top_k != 1)
        sys.exit()

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate,
                                  weight_decay=args.weight_decay, betas=(0.9, 0.99), eps=1e-8)
    if args.numpy_batches:
        batches = NumpyBatches(train_dataset, args.batch_size, args.seed)
    else:
        batches = EndlessLoader(train_dataset, batch_size=args.batch_size, pin_memory=True,
                                num_workers=args.num_workers)

    best_loss = None
    step = 0
    while True:
        X, Y = [t.to(args.device) for t in batches.next()]
        logits, loss = model(X, Y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} | loss {loss.item():.4f}")
        if args.loss_log:
            with open(args.loss_log, "a") as f:
                f.write(f"{step} {loss.item()!r}\n")
        if step > 0 and step % args.eval_every == 0:
            train_loss = evaluate(model, train_dataset, batch_size=100, max_batches=10)
            test_loss = evaluate(model, test_dataset, batch_size=100, max_batches=10)
            writer.add_scalar("Loss/train", train_loss, step)
            writer.add_scalar("Loss/test", test_loss, step)
            writer.flush()
            print(f"step {step} train loss: {train_loss!r} test loss: {test_loss!r}")
            if best_loss is None or test_loss < best_loss:
                out_path = os.path.join(args.work_dir, "model.pt")
                print(f"test loss {test_loss} is the best so far, saving model to {out_path}")
                torch.save(model.state_dict(), out_path)
                best_loss = test_loss
        step += 1
        if args.max_steps >= 0 and step >= args.max_steps:
            break
    writer.close()
