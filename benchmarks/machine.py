"""What machine a result comes from, and how busy the rest of it was while measuring.

    python -m benchmarks.machine name      # the asv machine name, derived from the CPU
    python -m benchmarks.machine info      # every field as JSON
    python -m benchmarks.machine register  # `asv machine --yes` under that name, CPU filled in

Ratios differ by CPU (seen: 1.56x on an Intel Xeon, 1.0-1.3x on an AMD EPYC, same commit), so
every result carries `info()` and results from different machines are never put in one series.
Outside load: other processes' CPU time in cores, from /proc/stat minus this process's own.
Imports no NumPy at module level and never imports torch (its version comes from metadata).
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time

ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile",
             "neon", "asimd", "sve")  # the ones BLAS kernels dispatch on
HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpuinfo() -> dict:
    fields: dict = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key and key not in fields:
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def cpu() -> dict:
    """Model, family/model numbers, vendor, cores and the ISA flags BLAS cares about."""
    c = _cpuinfo()
    flags = set((c.get("flags") or c.get("Features") or "").split())
    return {"cpu": c.get("model name") or platform.processor() or platform.machine(),
            "vendor": c.get("vendor_id", ""), "cpu_family": c.get("cpu family", ""),
            "cpu_model": c.get("model", ""), "cores": os.cpu_count(),
            "isa": [f for f in ISA_FLAGS if f in flags], "arch": platform.machine()}


def name(c: dict | None = None) -> str:
    """asv machine name from the CPU: 'amd-epyc-f25m17-2c' (model name slug, family/model
    numbers so two generations sold under one name differ, core count). $ASV_MACHINE wins."""
    if os.environ.get("ASV_MACHINE"):
        return os.environ["ASV_MACHINE"]
    c = c or cpu()
    text = re.sub(r"\((r|tm)\)|cpu|processor|@.*$|\d+-core", " ", c["cpu"].lower())
    slug = "-".join(re.findall(r"[a-z0-9]+", text))[:40] or c["arch"]
    fam = f"-f{c['cpu_family']}m{c['cpu_model']}" if c.get("cpu_family") else ""
    return f"{slug}{fam}-{c['cores']}c"


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def blas() -> dict:
    """NumPy's BLAS: name and version (numpy's build config), the thread count in force."""
    import numpy as np

    out = {"blas": "unknown", "blas_version": "unknown"}
    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        out = {"blas": str(cfg.get("name")), "blas_version": str(cfg.get("version"))}
    except Exception:  # noqa: BLE001 - show_config's layout is not a stable API
        pass
    return out


def info(threads: int | None = None, malloc: str | None = None) -> dict:
    """Every field a result must carry to be compared only with its own machine."""
    import numpy as np

    c = cpu()
    d = {"machine": name(c), "hostname": platform.node(), **c, "os": platform.platform(),
         "python": sys.version.split()[0], "numpy": np.__version__, "torch": _version("torch"),
         **blas(), "threads_requested": threads, "allocator": malloc or "default",
         "env_threads": {k: os.environ.get(k) for k in
                         ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}}
    try:
        import psutil

        d["ram_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    return d


# ---------------------------------------------------------------- outside load


def _busy_jiffies() -> int | None:
    """All CPUs' non-idle time so far, in clock ticks (first line of /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in parts[1:9])
    return user + nice + system + irq + softirq + steal


class LoadMeter:
    """Cores used by other processes over an interval: (all busy time - own CPU time) / wall.

    `own` is this process's CPU time over all its threads (os.times), plus that of COMPANIONS,
    so BLAS/OpenMP threads and helper ranks of the measured work are not counted as outside
    load. None where /proc/stat is unreadable."""

    def start(self) -> None:
        self.t0, self.b0, self.c0 = time.perf_counter(), _busy_jiffies(), _own_cpu()

    def stop(self) -> float | None:
        wall, busy = time.perf_counter() - self.t0, _busy_jiffies()
        if busy is None or self.b0 is None or wall <= 0:
            return None
        others = (busy - self.b0) / HZ - (_own_cpu() - self.c0)
        # /proc/stat counts in ticks (10 ms): on a short interval quantisation alone reads as
        # up to 1/(HZ*wall) cores, so short samples are noisy; calibration keeps them >= 0.2 s.
        return max(0.0, others / wall)


COMPANIONS: list[int] = []  # pids whose CPU time counts as this process's (e.g. DDP ranks)


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system + sum(_cpu_of(pid) for pid in COMPANIONS)


def _cpu_of(pid: int) -> float:
    """user + system seconds of another process (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / HZ


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    cmd = args[0] if args else "name"
    if cmd == "name":
        print(name())
    elif cmd == "info":
        print(json.dumps(info(), indent=1))
    elif cmd == "register":  # asv's machine.json filled from the CPU, not from the hostname
        c, asv = cpu(), args[1] if len(args) > 1 else "asv"
        ram = info().get("ram_gb")
        subprocess.run([asv, "machine", "--yes", "--machine", name(c),
                        "--cpu", f"{c['cpu']} (family {c['cpu_family']} model {c['cpu_model']}; "
                                 f"{' '.join(c['isa'])})",
                        "--num_cpu", str(c["cores"]), "--arch", c["arch"],
                        "--os", platform.platform(), "--ram", f"{ram} GB"],
                       check=True, stdout=subprocess.DEVNULL)
        print(name(c))
    else:
        print("usage: python -m benchmarks.machine {name|info|register [ASV]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
