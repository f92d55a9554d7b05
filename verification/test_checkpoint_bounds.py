"""Checkpoint loading is bounded and every bad checkpoint is one clear line: the parameter cap
and its exact count, the fields the trainer reads back (optimizer state, extra.elapsed, deep
JSON), arrays that do not fit their config, a hypothesis fuzz of manifests, the peak memory of
refused loads (a child process: a claimed 10**12 shape, a 2 GiB array file, n_embd 10**6,
n_layer 10000; a 2 GiB zip bomb under `slow`), and a trained checkpoint in the torch twin."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minitorch.engine import Generator
from minitorch.generate.infer import InferenceGPT
from minitorch.io import (
    CheckpointError,
    check_model_size,
    load_checkpoint,
    load_model,
    save_checkpoint,
)
from minitorch.io.checkpoint import MANIFEST
from minitorch.models.gpt import GPT, PRESETS, GPTConfig
from minitorch.train import Trainer, resolve

ROOT = Path(__file__).resolve().parent.parent
TINY = {"model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32, "block_size": 16},
        "batch_size": 4, "iters": 4, "eval_interval": 2, "eval_iters": 1, "sample_tokens": 4,
        "ckpt_interval": 0, "plot": False, "optimizer": "adamw"}
DEFAULT_WIDTH = {"n_embd": 64, "n_hidden": 256}  # GPTConfig's: with 10,000 layers, ~498 M params


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny trained AdamW run (tests work on copies)."""
    out = tmp_path_factory.mktemp("bounds") / "run"
    Trainer(resolve(None, {**TINY, "out_dir": str(out)}), stream=io.StringIO()).train()
    return out


def _copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "copy"))


def _manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("cfg", [
    *PRESETS.values(),
    GPTConfig(bias=False, qkv_bias=True), GPTConfig(norm="rmsnorm"), GPTConfig(pos="rope"),
    GPTConfig(vocab_size=7, block_size=5, n_layer=2, n_head=2, n_embd=6, n_hidden=10),
], ids=lambda c: f"{c.norm}-{c.pos}-bias{c.bias}-qkv{c.qkv_bias}-L{c.n_layer}")
def test_parameter_count_is_exact_without_building(cfg):
    assert cfg.num_parameters() == GPT(cfg, generator=Generator(0)).num_parameters()


@pytest.mark.parametrize("over", [{"n_embd": 10**6}, {"n_layer": 10_000}])
def test_model_size_cap_names_count_and_memory(over):
    cfg = GPTConfig(**over)
    params = cfg.num_parameters()
    with pytest.raises(ValueError) as e:
        check_model_size(cfg)
    msg = str(e.value)
    assert f"{params:,} parameters" in msg and "GB of float32 weights" in msg
    assert "limit is 100,000,000" in msg and "MINITORCH_MAX_PARAMS" in msg and "\n" not in msg
    assert check_model_size(cfg, limit=params) == params  # the cap is the only obstacle


def _deep(depth: int):
    v: list = []
    for _ in range(depth):
        v = [v]
    return v


def _state(m: dict, index: str) -> dict:
    return m["optimizer"]["state"][index]


def _drop_array(folder: Path, name: str) -> None:
    """Remove one array from the checkpoint (rewritten consistently: a well-formed file)."""
    ck = load_checkpoint(folder)
    i, key = name.split("/")[1:]
    del ck.optimizer["state"][int(i)][key]
    save_checkpoint(folder, ck)


@pytest.mark.parametrize("damage, pattern", [
    (lambda f: _drop_array(f, "optim/3/exp_avg"), r"'optimizer.state.3.exp_avg' must be present"),
    (lambda f: _edit(f, lambda m: _state(m, "0").update(step="7")),
     r"'optimizer.state.0.step' must be an int >= 0, got '7'"),
    (lambda f: _edit(f, lambda m: m["extra"].update(elapsed="x")),
     r"'extra.elapsed' must be a finite number of seconds >= 0, got 'x'"),
    (lambda f: _edit(f, lambda m: m["extra"].update(elapsed=float("nan"))), r"'extra.elapsed'"),
    (lambda f: (f / MANIFEST).write_text('{"a": ' + "[" * 10**5 + "]" * 10**5 + "}"),
     r"nested too deeply"),
    (lambda f: _edit(f, lambda m: m["model_config"].update(n_embd=10**6)),
     r"4,000,2[\d,]+ parameters: [\d,.]+ GB of float32 weights"),
    (lambda f: _edit(f, lambda m: m["model_config"].update(n_layer=10_000, **DEFAULT_WIDTH)),
     r"49\d,\d{3},\d{3} parameters: .*the limit is 100,000,000"),
    (lambda f: _edit(f, lambda m: m["model_config"].update(n_head="x")),
     r"invalid model_config: 'n_head' must be an int >= 1, got 'x'"),
    (lambda f: _edit(f, lambda m: m["model_config"].update(n_embd=16.0)),
     r"invalid model_config: 'n_embd' must be an int"),
    (lambda f: _edit(f, lambda m: m.update(version=1)), r"version 1 \(expected .* version 2\)"),
    (lambda f: _edit(f, lambda m: m.update(version=3)), r"version 3 \(expected .* version 2\)"),
])
def test_bad_fields_are_a_clear_error_before_anything_is_written(run, tmp_path, damage, pattern):
    out = _copy(run, tmp_path)
    damage(out)
    before = _snapshot(out)
    for load in (load_checkpoint, load_model, lambda p: Trainer.resume(p, stream=io.StringIO()),
                 InferenceGPT.from_checkpoint):
        with pytest.raises(CheckpointError, match=pattern) as e:
            load(out)
        assert "\n" not in str(e.value) and str(out) in str(e.value)
    assert _snapshot(out) == before


def _edit(folder: Path, change) -> None:
    m = _manifest(folder)
    change(m)
    (folder / MANIFEST).write_text(json.dumps(m))


def _resave(folder: Path, edit_model) -> None:
    """A well-formed checkpoint (consistent manifest, header and hash) with edited weights."""
    ck = load_checkpoint(folder)
    edit_model(ck.model)
    save_checkpoint(folder, ck)


@pytest.mark.parametrize("edit, pattern", [
    (lambda w: w.pop("ln_f.bias"), r"arrays hold \d[\d,]* values, but its model_config "
                                   r"describes \d[\d,]* parameters"),
    (lambda w: w.update(extra=np.zeros(3, np.float32)), r"arrays hold"),
    (lambda w: w.update({"lm_head.weight": w["lm_head.weight"].T.copy()}),
     r"do not fit its model_config: load_state_dict: 'lm_head.weight' has shape"),
    (lambda w: w.update(renamed=w.pop("ln_f.bias")), r"do not fit .*missing keys \['ln_f.bias'\]"),
])
def test_arrays_that_do_not_fit_the_config_are_a_clear_error(run, tmp_path, edit, pattern):
    """What `sample` and `trace` load: a checkpoint whose arrays do not fit its model config."""
    out = _copy(run, tmp_path)
    _resave(out, edit)
    with pytest.raises(CheckpointError, match=pattern) as e:
        load_model(out)
    assert "\n" not in str(e.value)


# -- fuzzing the manifest ------------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70)
                     | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.text(max_size=6), kids, max_size=3), max_leaves=8)


def _paths(v, prefix=()):
    """Every path into a JSON value (dict keys and list indices)."""
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, (*prefix, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _paths(x, (*prefix, i))


@pytest.fixture(scope="module")
def fuzz_dir(run, tmp_path_factory) -> Path:
    return Path(shutil.copytree(run, tmp_path_factory.mktemp("fuzz") / "run"))


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_manifests_load_or_fail_in_one_line(run, fuzz_dir, data):
    """Replace or delete one value anywhere in a real manifest: loading either succeeds or raises
    CheckpointError, one line naming the manifest; never another exception."""
    m = _manifest(run)
    path = data.draw(st.sampled_from(sorted((p for p in _paths(m) if p), key=repr)))
    parent = m
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(_JSON)
    (fuzz_dir / MANIFEST).write_text(json.dumps(m))
    try:
        load_model(fuzz_dir)
    except CheckpointError as e:
        assert "\n" not in str(e) and str(fuzz_dir) in str(e)


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_array_files_with_matching_hash_load_or_fail_in_one_line(run, fuzz_dir, data):
    """Overwrite, insert or cut bytes of the .safetensors header (or truncate the file) and give
    the manifest the new size and sha256, as a careful forger would: the header checks alone
    must then catch it, or the edit was harmless (padding, metadata) and the same arrays load."""
    m = _manifest(run)
    blob = bytearray((run / m["arrays"]).read_bytes())
    n_header = 8 + int.from_bytes(blob[:8], "little")
    at = data.draw(st.integers(0, n_header - 1), label="offset")
    kind = data.draw(st.sampled_from(["overwrite", "insert", "cut", "truncate"]), label="kind")
    chunk = data.draw(st.binary(min_size=1, max_size=8), label="bytes")[: n_header - at]
    if kind == "overwrite":
        blob[at:at + len(chunk)] = chunk
    elif kind == "insert":
        blob[at:at] = chunk
    elif kind == "cut":
        del blob[at:at + len(chunk)]
    else:
        del blob[at:]
    (fuzz_dir / m["arrays"]).write_bytes(bytes(blob))
    m.update(sha256=hashlib.sha256(blob).hexdigest(), nbytes=len(blob))
    (fuzz_dir / MANIFEST).write_text(json.dumps(m))
    try:
        model, _, _ = load_model(fuzz_dir)
    except CheckpointError as e:
        assert "\n" not in str(e) and m["arrays"] in str(e) or MANIFEST in str(e), str(e)
        return
    original = load_checkpoint(run).model  # loaded: then the weights are exactly the trained ones
    assert all(np.array_equal(v, original[k]) for k, v in model.state_dict().items())


# -- peak memory of refused loads ----------------------------------------------------------------

REFUSE_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from minitorch.io import CheckpointError, load_model

    def status_mb(key):
        for line in open("/proc/self/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024

    def peak_growth(fn):
        \"\"\"MB the peak RSS rose above the RSS before fn ran (peak reset via clear_refs).\"\"\"
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status_mb("VmRSS")
        result = fn()
        return result, status_mb("VmHWM") - before

    def refuse(folder):
        try:
            load_model(folder)
            return "loaded"
        except CheckpointError as e:
            return str(e)

    out = {folder: peak_growth(lambda: refuse(folder)) for folder in sys.argv[1:]}
    out["control"] = peak_growth(lambda: np.ones(100 << 17).sum())[1]  # 100 MB, must be seen
    print(json.dumps(out))
""")



def _safetensors_header(arrays: dict[str, tuple[list[int], str]]) -> bytes:
    """A safetensors header (8-byte length + JSON) for arrays laid out back to back."""
    header, offset = {}, 0
    for name, (shape, dtype) in arrays.items():
        n = int(np.prod(shape)) * {"F32": 4, "F64": 8}[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def _zip_bomb(path: Path, nbytes: int, others: dict[str, np.ndarray]) -> None:
    """An .npz holding `others` and model/wte.weight as nbytes of float32 zeros (a few MB)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (nbytes // 4,)})
    zeros = bytes(1 << 24)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("model/wte.weight.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            for _ in range(nbytes // len(zeros)):
                f.write(zeros)
        for name, arr in others.items():
            with z.open(f"{name}.npy", "w") as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)


def _point_at(folder: Path, name: str, shapes: dict | None = None) -> None:
    """Make the manifest name `folder/name` as its array file, with matching size and hash."""
    blob_path = folder / name
    h = hashlib.sha256()
    with open(blob_path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    m = _manifest(folder)
    m.update(arrays=name, nbytes=blob_path.stat().st_size, sha256=h.hexdigest())
    if shapes is not None:
        m["shapes"] = shapes
    (folder / MANIFEST).write_text(json.dumps(m))


def _refused_in_child(cases: dict[str, Path], expect: dict[str, str], record) -> dict:
    """Load each case in one fresh process; every load must be refused with its expected message
    and the process's peak RSS must grow by less than 50 MB over its post-import baseline."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", REFUSE_CHILD, *map(str, cases.values())],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    growth = {}
    for name, folder in cases.items():
        msg, grew_mb = got[str(folder)]
        growth[name] = grew_mb
        record("refused_load_peak_rss_mb", name, "child process", grew_mb, tol=50.0,
               passed=grew_mb < 50 and expect[name] in msg, message=msg)
        assert expect[name] in msg and "\n" not in msg and str(folder) in msg, (name, msg)
    print("peak RSS growth (MB) during refused loads:", growth, "control:", got["control"])
    assert max(growth.values()) < 50, growth
    assert got["control"] >= 90  # the probe sees a 100 MB allocation
    return growth


def test_refused_loads_stay_under_50_mb(run, tmp_path, record):
    gib2 = 2 << 30
    cases: dict[str, Path] = {}

    def case(name: str) -> Path:
        cases[name] = Path(shutil.copytree(run, tmp_path / name))
        return cases[name]

    # a manifest claiming a 10**12-element array (the file is small)
    f = case("huge_shape")
    _edit(f, lambda m: m["shapes"].update({"model/wte.weight": [[10**12], "<f4"]}))
    # a 2 GiB array file (sparse: no disk used) whose header and manifest both describe it
    big = tmp_path / "big.safetensors"
    with open(big, "wb") as fh:
        fh.write(_safetensors_header({"model/wte.weight": ([gib2 // 4], "F32")}))
        fh.truncate(fh.tell() + gib2)
    f = case("array_2gib")
    (f / "big.safetensors").symlink_to(big)
    _edit(f, lambda m: m.update(arrays="big.safetensors", nbytes=big.stat().st_size,
                                shapes={"model/wte.weight": [[gib2 // 4], "<f4"]}))
    # the same file, the manifest's shapes unchanged: the header disagrees with them
    f = case("header_2gib")
    (f / "big.safetensors").symlink_to(big)
    _edit(f, lambda m: m.update(arrays="big.safetensors", nbytes=big.stat().st_size))
    f = case("n_embd_1e6")
    _edit(f, lambda m: m["model_config"].update(n_embd=10**6))
    f = case("n_layer_10000")
    _edit(f, lambda m: m["model_config"].update(n_layer=10_000, **DEFAULT_WIDTH))
    _refused_in_child(cases, {
        "huge_shape": "arrays hold 1,000,000,", "array_2gib": "arrays hold 536,870,912 values",
        "header_2gib": "arrays disagree with the manifest", "n_embd_1e6": "4,000,2",
        "n_layer_10000": "parameters: 2.0 GB"}, record)


@pytest.mark.slow
def test_refused_zip_bombs_stay_under_50_mb(run, tmp_path, record):
    """An .npz whose wte decompresses to 2 GiB (9 MB on disk; ~5-10 s to build), the manifest's
    size and hash updated to match, swapped into a checkpoint: refused from its first 8 bytes."""
    ck = load_checkpoint(run)
    others = {f"model/{k}": v for k, v in ck.model.items() if k != "wte.weight"}
    for i, state in ck.optimizer["state"].items():
        others.update({f"optim/{i}/{k}": v for k, v in state.items()
                       if isinstance(v, np.ndarray)})
    bomb = tmp_path / "bomb.npz"
    _zip_bomb(bomb, 2 << 30, others)
    folder = Path(shutil.copytree(run, tmp_path / "zip_bomb"))
    (folder / "bomb.npz").symlink_to(bomb)
    _point_at(folder, "bomb.npz")
    _refused_in_child({"zip_bomb": folder}, {"zip_bomb": "header claims"}, record)


# -- a trained checkpoint in PyTorch --------------------------------------------------------------


@pytest.mark.torch
def test_trained_checkpoint_loads_into_the_torch_twin_by_name(tmp_path, record):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    from verification.torch_reference import TorchGPT

    out = tmp_path / "run"
    t = Trainer(resolve(None, {**TINY, "dtype": "float64", "out_dir": str(out)}),
                stream=io.StringIO())
    t.train()
    m = _manifest(out)
    tensors = load_file(out / m["arrays"])  # torch's own reader; names are model/<GPT-2 name>
    weights = {k[len("model/"):]: v for k, v in tensors.items() if k.startswith("model/")}
    twin = TorchGPT(dataclasses.asdict(t.model_config)).to(torch.float64)
    twin.load_state_dict(weights, strict=True)
    x = np.arange(32).reshape(2, 16) % t.tokenizer.vocab_size
    ours = t.model.eval()(x)[0].data
    theirs = twin.eval()(torch.from_numpy(x))[0].detach().numpy()
    err = float(np.abs(ours - theirs).max())
    record("checkpoint_torch_twin", "logits", "tiny float64 trained", err, tol=1e-12,
           passed=err <= 1e-12)
    assert ours.dtype == theirs.dtype == np.float64
    assert err <= 1e-12
    # negative control: a different step's weights give different logits
    weights["lm_head.weight"] = weights["lm_head.weight"] * 1.01
    twin.load_state_dict(weights)
    assert np.abs(twin(torch.from_numpy(x))[0].detach().numpy() - ours).max() > 1e-6

