"""Character-level data for train.py, in the manner of nanoGPT's data/*_char/prepare.py: read
a text, map each distinct character to an id, write the first 90% as train.bin and the rest
as val.bin (uint16), and the vocabulary as meta.pkl. Usage: python prepare.py TEXT OUT_DIR"""

import os
import pickle
import sys

import numpy as np

src, dst = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as f:
    text = f.read()
chars = sorted(set(text))
print(f"length of dataset in characters: {len(text):,}")
print(f"vocab size: {len(chars)}")
stoi = {ch: i for i, ch in enumerate(chars)}
itos = dict(enumerate(chars))
ids = np.array([stoi[c] for c in text], dtype=np.uint16)
cut = int(0.9 * len(ids))
os.makedirs(dst, exist_ok=True)
ids[:cut].tofile(os.path.join(dst, "train.bin"))
ids[cut:].tofile(os.path.join(dst, "val.bin"))
print(f"train has {cut:,} tokens, val has {len(ids) - cut:,} tokens")
with open(os.path.join(dst, "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)
