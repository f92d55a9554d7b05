"""torchrun's role for `minitorch run`: `--nproc N` starts N ranks through mpiexec, and each rank
(also under `mpiexec -n N minitorch run` by hand) gets the environment torchrun sets (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), taken from the MPI launcher.
A rank whose script fails alone ends the whole job, naming itself; nothing here writes files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .distributed import distributed_c10d, launched_by_mpi
from .torch_alias import run_script

# (rank, size, local rank, local size) as Open MPI, MPICH/Hydra and PMIx launchers set them
_MPI_VARS = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
              "OMPI_COMM_WORLD_LOCAL_SIZE"),
             ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
             ("PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"))
MASTER_PORT = "29500"  # torchrun's default
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

MPI_HINT = "pip install '.[mpi]' in the clone, or make venv"  # the [mpi] extra: mpi4py, Open MPI


class LaunchError(ValueError):
    """A launch that cannot start (one line for the CLI)."""


def torchrun_env(environ: dict[str, str]) -> dict[str, str]:
    """The variables torchrun would set for this rank, from the MPI launcher's (empty when no
    MPI launcher started the process)."""
    for rank, size, local_rank, local_size in _MPI_VARS:
        if rank in environ and size in environ:
            return {"RANK": environ[rank], "WORLD_SIZE": environ[size],
                    "LOCAL_RANK": environ.get(local_rank, environ[rank]),
                    "LOCAL_WORLD_SIZE": environ.get(local_size, environ[size]),
                    "GROUP_RANK": "0", "MASTER_ADDR": environ.get("MASTER_ADDR", "127.0.0.1"),
                    "MASTER_PORT": environ.get("MASTER_PORT", MASTER_PORT)}
    return {}


def run_rank(script: str, args: list[str]) -> int:
    """Run the script as this rank (or alone): torchrun's environment first, and at the end
    every rank checks that the others ended too (a rank that skipped a collective is named);
    a rank that fails alone aborts the job so that no rank waits forever."""
    if launched_by_mpi():
        os.environ.update(torchrun_env(dict(os.environ)))
    code = run_script(script, args)
    pg = distributed_c10d._PG
    if pg is None or pg.size() == 1:
        return code
    if code == 0:
        try:
            pg.agree("the end of the script (no more collectives)", script)
        except distributed_c10d.DistError as e:
            print(f"minitorch run: error: {e}", file=sys.stderr, flush=True)
            code = 1
    if code != 0 and not pg.world.failing_together():
        print(f"minitorch run: error: rank {pg.rank()}: the script failed (exit status {code}); "
              "ending every rank", file=sys.stderr, flush=True)
        time.sleep(0.5)  # let the launcher forward the lines before the abort tears the job down
        pg.world.abort(code)
    return code


def mpiexec_command(n: int, hostfile: str | None, tail: list[str], flag: str,
                    env: dict[str, str], forward: tuple[str, ...] = ()) -> list[str]:
    """The one way both launchers start ranks: `mpiexec -n n [--hostfile F] [-x VAR...] python
    -m minitorch TAIL...`, checked first (LaunchError naming `flag`), with `env` completed in
    place: more ranks than cores oversubscribe (Open MPI 4's and 5's settings), and each rank
    gets its share of the cores' BLAS threads unless the caller chose."""
    if n < 1:
        raise LaunchError(f"{flag} must be >= 1, got {n}")
    import importlib.util

    if importlib.util.find_spec("mpi4py") is None:
        raise LaunchError(f"{flag} needs mpi4py and an MPI ({MPI_HINT})")
    bindir = str(Path(sys.executable).parent)
    mpiexec = shutil.which("mpiexec", path=os.pathsep.join([bindir, os.environ.get("PATH", "")]))
    if mpiexec is None:
        raise LaunchError(f"{flag} needs mpiexec on PATH or beside python ({MPI_HINT} installs "
                          "Open MPI's)")
    if hostfile is not None and not Path(hostfile).is_file():
        raise LaunchError(f"--hostfile {hostfile}: no such file")
    open_mpi = (Path(mpiexec).parent / "ompi_info").exists()
    if open_mpi and os.geteuid() == 0 and not env.get("OMPI_ALLOW_RUN_AS_ROOT"):
        raise LaunchError("Open MPI refuses to run as root: set OMPI_ALLOW_RUN_AS_ROOT=1 and "
                          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, or run as another user")
    if hostfile is None and n > (os.cpu_count() or 1):  # more ranks than cores here
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")  # Open MPI 4
        env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")  # 5 (PRRTE)
    if not any(k in env for k in BLAS_THREADS):
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // n))  # cores per rank
    # Open MPI passes the environment to ranks on other machines only when told (-x)
    names = (*BLAS_THREADS, *forward)
    xs = [a for k in names if k in env for a in ("-x", k)] if hostfile and open_mpi else []
    return [mpiexec, "-n", str(n), *(["--hostfile", hostfile] if hostfile else []), *xs,
            sys.executable, "-m", "minitorch", *tail]


def run_mpiexec(cmd: list[str], env: dict[str, str]) -> tuple[int, int | None]:
    """Run mpiexec to its end: (its exit status, the first signal this process received).

    mpiexec runs in its own process group, so a Ctrl-C or a scheduler's SIGTERM reaches this
    process alone; it is passed on as SIGUSR1, which mpiexec forwards to every rank (its own
    SIGINT handling kills the ranks at once), and each rank stops as that signal asks; a second
    signal ends the job at once (SIGTERM to mpiexec).
    """
    procs: list[subprocess.Popen] = []
    got: list[int] = []

    def forward(signum: int, frame) -> None:
        got.append(signum)
        with contextlib.suppress(ProcessLookupError):
            for proc in procs:
                proc.send_signal(signal.SIGUSR1 if len(got) == 1 else signal.SIGTERM)

    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, forward) for s in STOP_SIGNALS} if main else {}
    try:  # (stdin from /dev/null: a background process group reading the terminal is stopped)
        procs.append(subprocess.Popen(cmd, env=env, process_group=0, stdin=subprocess.DEVNULL))
        code = procs[0].wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return code, (got[0] if got else None)


def launch(nproc: int, hostfile: str | None, script: str, args: list[str]) -> int:
    """`mpiexec -n nproc [--hostfile FILE] python -m minitorch run script args`; its status."""
    env = dict(os.environ)
    env.setdefault("MASTER_ADDR", _first_host(hostfile) if hostfile and Path(hostfile).is_file()
                   else "127.0.0.1")
    env.setdefault("MASTER_PORT", MASTER_PORT)
    cmd = mpiexec_command(nproc, hostfile, ["run", script, *args], "--nproc", env,
                          ("MASTER_ADDR", "MASTER_PORT", "PYTHONPATH"))
    code, signum = run_mpiexec(cmd, env)
    if signum is not None:
        print(f"minitorch run: stopped by {signal.Signals(signum).name}: the {nproc} ranks were "
              f"told to stop (mpiexec's exit status {code})", file=sys.stderr, flush=True)
        return 128 + signum
    return code


def _first_host(hostfile: str) -> str:
    """The first machine a hostfile names (rank 0's, as torchrun's MASTER_ADDR would be)."""
    for line in Path(hostfile).read_text().splitlines():
        words = line.split("#")[0].split()
        if words:
            return words[0]
    raise LaunchError(f"--hostfile {hostfile} names no machine")
