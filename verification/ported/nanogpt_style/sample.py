"""Sample from a checkpoint train.py saved, in the manner of nanoGPT's sample.py: rebuild the
model from the checkpoint's arguments, decode with the dataset's meta.pkl, print num_samples
continuations of `start` (a string, or FILE:path). --top_k=1 decodes greedily."""

import os
import pickle
from contextlib import nullcontext

import torch
from model import GPT, GPTConfig

out_dir = "out"
start = "\n"
num_samples = 3
max_new_tokens = 40
temperature = 0.8
top_k = 200
seed = 1337
device = "cpu"
dtype = "float32"
compile = False
exec(open("configurator.py").read())

torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
           "float64": torch.float64}[dtype]
if dtype == "float64":
    torch.set_default_dtype(ptdtype)
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                    dtype=ptdtype)

checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
model = GPT(GPTConfig(**checkpoint["model_args"]))
state_dict = checkpoint["model"]
for k in list(state_dict):
    if k.startswith("_orig_mod."):
        state_dict[k[len("_orig_mod."):]] = state_dict.pop(k)
model.load_state_dict(state_dict)
model.eval()
model.to(device)
if compile:
    model = torch.compile(model)
print(f"checkpoint of iteration {checkpoint['iter_num']}, "
      f"best val loss {float(checkpoint['best_val_loss']):.4f}")

meta_path = os.path.join("data", checkpoint["config"]["dataset"], "meta.pkl")
with open(meta_path, "rb") as f:
    meta = pickle.load(f)
stoi, itos = meta["stoi"], meta["itos"]


def encode(s):
    return [stoi[c] for c in s]


def decode(ids):
    return "".join(itos[i] for i in ids)


if start.startswith("FILE:"):
    with open(start[5:], encoding="utf-8") as f:
        start = f.read()
x = torch.tensor(encode(start), dtype=torch.long, device=device)[None, ...]
with torch.no_grad():
    with ctx:
        for _ in range(num_samples):
            y = model.generate(x, max_new_tokens, temperature=temperature, top_k=top_k)
            print(decode(y[0].tolist()))
            print("---------------")
