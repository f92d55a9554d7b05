"""The main job (`make report`): train a small model on the embedded corpus, run the fast tier of
the verification and memory suites (--full: every tier), PyTorch's OpInfo samples, a sampled
mutation run, a quick benchmark and a short asv run of this commit, trace attention, build the
HTML report. Every section of the page is filled by default.

    python -m reports.main_job --out reports/out [--tinyshakespeare PATH] [--full]

Each step runs in a subprocess (or guarded in-process) with its output in artifacts/logs/; a step
that fails is recorded in main_job.json and shown in the page, and the job goes on. The path of
index.html is printed last. Exit status: 0 when the page was built, even if steps failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from artifacts import ROOT, artifacts_dir, write_json

from .inputs import relative

SEED = 1337
TRAIN_ARGS = ["--preset", "seed", "--dtype", "float32", "--lr", "1e-3", "--batch_size", "32",
              "--eval_interval", "50", "--eval_iters", "20", "--ckpt_interval", "0",
              "--sample_tokens", "300", "--seed", str(SEED)]
TRACE_TEXT_LEN = 32  # positions in the attention heatmaps
HEARTBEAT_S = 60.0  # a running step says so this often (the long ones take 10-20 minutes)


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


class Job:
    """Runs steps, keeps their outcomes, and rewrites main_job.json after each one."""

    def __init__(self, art: Path, argv: list[str]):
        self.art = art
        self.logs = art / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.t0 = time.perf_counter()
        self.record: dict[str, Any] = {
            "command": " ".join(["python -m reports.main_job", *argv]),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "started_epoch": time.time(),
            "seeds": {"train": SEED, "suites": 0}, "steps": []}
        self.env = {**os.environ, "MINITORCH_ARTIFACTS": str(art), "PYTHONUNBUFFERED": "1"}
        self.env.setdefault("OPENBLAS_NUM_THREADS", "1")
        self.env.setdefault("OMP_NUM_THREADS", "1")
        self.record["env"] = {k: self.env[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                       "MKL_NUM_THREADS") if k in self.env}
        self.include_runs: list[Path] | None = None  # other run folders the page shows, marked

    def save(self) -> None:
        write_json("main_job.json", self.record)

    def say(self, text: str) -> None:
        """One progress line on stderr, stamped with the job's elapsed time."""
        print(f"[main job +{_clock(time.perf_counter() - self.t0)}] {text}", file=sys.stderr,
              flush=True)

    def _done(self, name: str, status: str, seconds: float, detail: str, output: str = "") -> None:
        self.record["steps"].append({"name": name, "status": status, "seconds": round(seconds, 1),
                                     "detail": detail, "output": output})
        self.save()
        self.say(f"{name}: {status} in {_clock(seconds)}; {detail}")

    def skip(self, name: str, reason: str) -> None:
        self._done(name, "skipped", 0.0, reason)

    def run(self, name: str, cmd: list[str], timeout: float, ok_codes: tuple[int, ...] = (0,),
            describe: Callable[[int], str] | None = None) -> bool:
        """Run cmd from the repo root, log to logs/<name>.log; True if it exited in ok_codes."""
        log = self.logs / f"{name}.log"
        self.say(f"{name}: started (log {relative(log)}): {' '.join(cmd)}")
        start = time.perf_counter()
        try:
            with open(log, "w") as f:
                code = self._wait(name, subprocess.Popen(
                    cmd, cwd=ROOT, env=self.env, stdout=f, stderr=subprocess.STDOUT), timeout)
        except OSError as e:
            self._done(name, "failed", time.perf_counter() - start, f"could not start: {e}")
            return False
        seconds = time.perf_counter() - start
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        if code is None:
            self._done(name, "failed", seconds,
                       f"timed out after {timeout:g}s; log {relative(log)}", tail)
            return False
        ok = code in ok_codes
        detail = describe(code) if describe else f"exit code {code}"
        self._done(name, "ok" if ok else "failed", seconds, f"{detail}; log {relative(log)}",
                   "" if ok else tail)
        return ok

    def _wait(self, name: str, proc: subprocess.Popen, timeout: float) -> int | None:
        """The exit code, saying every HEARTBEAT_S that the step still runs; None (the process
        killed) after `timeout` seconds."""
        start = time.perf_counter()
        while True:
            left = timeout - (time.perf_counter() - start)
            try:
                return proc.wait(timeout=max(0.0, min(HEARTBEAT_S, left)))
            except subprocess.TimeoutExpired:
                if left <= HEARTBEAT_S:
                    proc.kill()
                    proc.wait()
                    return None
                self.say(f"{name}: running for {_clock(time.perf_counter() - start)}")

    def call(self, name: str, fn: Callable[[], str]) -> bool:
        """Run an in-process step; an exception is recorded, not raised."""
        start = time.perf_counter()
        try:
            detail = fn()
        except Exception as e:  # noqa: BLE001 - the page shows the failure
            self._done(name, "failed", time.perf_counter() - start, f"{type(e).__name__}: {e}")
            return False
        self._done(name, "ok", time.perf_counter() - start, detail)
        return True


def _pytest_outcome(code: int) -> str:
    return {0: "all tests passed", 1: "some tests failed", 2: "interrupted",
            3: "internal error", 4: "usage error", 5: "no tests collected"}.get(
        code, f"exit code {code}")


def pytest_step(job: Job, suite: str, full: bool, timeout: float) -> None:
    if not (ROOT / suite).is_dir():
        job.skip(suite, f"{suite}/ does not exist in this checkout")
        return
    cmd = [sys.executable, "-m", "pytest", suite, "-q", "-p", "no:cacheprovider",
           f"--junitxml={job.art / f'junit-{suite}.xml'}"]
    if not full:
        cmd += ["-m", "not slow"]
    job.run(suite, cmd, timeout, describe=_pytest_outcome)


def train_step(job: Job, name: str, iters: int, extra: list[str], timeout: float) -> Path | None:
    out = job.art / "runs" / name
    if out.exists():
        shutil.rmtree(out)  # a fresh run: never resume or mix with an older one
    cmd = [sys.executable, "-m", "minitorch", "train", "--out", str(out), "--iters", str(iters),
           *extra]
    ok = job.run(f"train-{name}", cmd, timeout)
    return out if ok else None


BENCH = {  # step name -> (script in benchmarks/, its quick arguments)
    "bench-peers": ("compare_peers", ["--steps", "2"]),
    "bench-profile": ("profile_step", ["--preset", "seed", "--dtype", "float32", "--steps", "5"]),
    "bench-scaling": ("scaling", ["--rounds", "2", "--steps", "1"]),
}


def bench_steps(job: Job, presets: list[str], rounds: int) -> None:
    """A quick benchmark: minitorch vs PyTorch vs NumPy, a per-op profile, the scaling table."""
    for name, (script, quick) in BENCH.items():
        if not (ROOT / "benchmarks" / f"{script}.py").exists():
            job.skip(name, f"benchmarks/{script}.py does not exist in this checkout")
            continue
        extra = ["--presets", *presets, "--rounds", str(rounds)] if script == "compare_peers" \
            else []
        job.run(name, [sys.executable, "-m", f"benchmarks.{script}", *quick, *extra],
                timeout=1800)


def trace_step(job: Job, run: Path | None) -> None:
    """`minitorch trace` of the trained model on a slice of the validation text (text it never
    trained on) -> trace.json: per-op table, gradients, attention maps with their characters."""
    if run is None:
        job.skip("trace", "no trained model (the training step failed)")
        return
    corpus = (ROOT / "minitorch" / "data" / "default_corpus.txt").read_text()
    tail = corpus[-len(corpus) // 10:]  # the validation split
    start = tail.find("\n") + 1
    text = tail[start:start + TRACE_TEXT_LEN + 1]  # T inputs and the next character as target
    job.run("trace", [sys.executable, "-m", "minitorch", "trace", "--checkpoint", str(run),
                      "--text", text, "--json", str(job.art / "trace.json"), "--rows", "0"],
            timeout=600)


def mutation_step(job: Job, n: int, timeout: float) -> None:
    """A seeded sample of n mutants over every op (mutation-sample.json); `make mutation` runs
    them all into mutation.json."""
    def outcome(code: int) -> str:
        return {0: "every sampled mutant killed", 1: "some mutants survived (see the page)"}.get(
            code, "the unmutated suite failed or the run broke" if code == 2 else f"exit {code}")

    job.run("mutation-sample", [sys.executable, "-m", "verification.mutate_vjps", "--sample",
                                str(n)], timeout, ok_codes=(0, 1), describe=outcome)


def opinfo_step(job: Job, timeout: float) -> None:
    """PyTorch's OpInfo database, every sample of every mapped OpInfo (opinfo.json, ~1 minute);
    the test suite runs only the first few samples of each."""
    job.run("opinfo", [sys.executable, "-m", "verification.opinfo"], timeout, ok_codes=(0, 1),
            describe=lambda c: {0: "every mapped sample passed or is a listed exemption",
                                1: "some samples failed (see the page)"}.get(c, f"exit {c}"))


# The short asv setting: op and model benchmarks (the per-op table and the history), each
# measured once per process (one repeat, one round, no warm-up). `make bench` is the long run.
ASV_BENCH = r"^bench_(ops|model)\."
ASV_SHORT = ["-a", "repeat=1", "-a", "rounds=1", "-a", "warmup_time=0"]


def asv_step(job: Job, timeout: float, bench: str | None = ASV_BENCH) -> None:
    if not (ROOT / "asv.conf.json").exists():
        job.skip("asv", "no asv.conf.json in this checkout")
        return
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    env_before = dict(job.env)
    job.env["ASV_PYTHONPATH"] = str(ROOT)
    try:
        exe = Path(sys.executable).parent / "asv"
        asv = [str(exe) if exe.exists() else (shutil.which("asv") or "asv")]
        # the machine as `make bench` names and registers it (from the CPU; $ASV_MACHINE wins)
        named = subprocess.run([sys.executable, "-m", "benchmarks.machine", "register", asv[0]],
                               cwd=ROOT, env=job.env, capture_output=True, text=True)
        machine = named.stdout.strip().splitlines()[-1] if named.returncode == 0 and \
            named.stdout.strip() else os.environ.get("ASV_MACHINE") or socket.gethostname()
        if named.returncode != 0:  # no machine module: register the fallback name directly
            job.run("asv-machine", [*asv, "machine", "--yes", "--machine", machine], 120)
        job.run("asv", [*asv, "run", "--python=same", "--machine", machine,
                        f"--set-commit-hash={commit}", *ASV_SHORT,
                        *(["-b", bench] if bench else [])],
                timeout, ok_codes=(0, 2), describe=lambda c: {
                    0: f"recorded on machine {machine}",
                    2: f"recorded on machine {machine}, some benchmarks failed"}.get(
                        c, f"exit code {c}"))
    finally:
        job.env = env_before


def build_step(job: Job, out: Path) -> Path | None:
    from . import browser
    from .build import build_report

    page: list[Path] = []

    def build() -> str:
        page.append(build_report(out, job.art, include_runs=job.include_runs))
        return relative(page[-1])

    job.record["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    if not job.call("build report", build):
        return None
    reason = browser.unavailable()
    if reason:
        job.skip("browser check", reason)
    else:
        def check() -> str:
            result = browser.check_page(page[-1], out / "screenshot.png")
            problems = result.console_problems + [f"remote request {u}"
                                                  for u in result.remote_requests]
            drawn = sum(s["drawn"] for s in result.sections.values())
            plots = sum(s["plots"] for s in result.sections.values())
            if problems or drawn != plots:
                raise RuntimeError(f"{plots - drawn} plot(s) not drawn; " + "; ".join(problems))
            return f"{len(result.sections)} sections, {drawn} plots drawn, no console errors or " \
                   f"warnings, no remote requests; screenshot {relative(out / 'screenshot.png')}"

        job.call("browser check", check)
    # again, so the page shows the browser check too
    return build_report(out, job.art, include_runs=job.include_runs)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m reports.main_job",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("reports/out"), help="output folder")
    ap.add_argument("--iters", type=int, default=300, help="training steps on the embedded corpus")
    ts = os.environ.get("MINITORCH_TINYSHAKESPEARE")
    ap.add_argument("--tinyshakespeare", type=Path, metavar="PATH",
                    default=Path(ts) if ts else None,
                    help="also train the seed recipe on this Tiny Shakespeare input.txt "
                         "(default: $MINITORCH_TINYSHAKESPEARE; README says how to get it)")
    ap.add_argument("--ts-iters", type=int, default=4000,
                    help="steps of the Tiny Shakespeare run (the recipe's 4000 by default)")
    ap.add_argument("--asv-bench", metavar="REGEX", default=ASV_BENCH,
                    help="the asv benchmarks this commit records, at the short setting "
                         "(asv run -b; '.' for all); the history shows every recorded commit")
    ap.add_argument("--mutation-sample", type=int, default=40, metavar="N",
                    help="mutants in the sampled mutation run (make mutation runs all)")
    ap.add_argument("--full", action="store_true", help="include the slow test tier")
    ap.add_argument("--bench-rounds", type=int, default=3, help="rounds of the quick benchmark")
    ap.add_argument("--bench-presets", nargs="+", default=["seed"],
                    help="presets of the quick benchmark (all: seed gpt2-mini llama-mini)")
    ap.add_argument("--include-runs", type=Path, nargs="+", default=None, metavar="DIR",
                    help="also show these run folders, or folders of runs, on the page, each "
                         "marked with its status (python -m reports.build --include-runs)")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["train", "verification", "memory", "mutation", "opinfo", "bench",
                             "trace", "asv"],
                    help="steps to leave out (their existing artifacts are still shown)")
    args = ap.parse_args(argv)
    if args.tinyshakespeare and not args.tinyshakespeare.is_file():
        ap.error(f"--tinyshakespeare: {args.tinyshakespeare} is not a file")
    for path in args.include_runs or []:
        if not path.is_dir():
            ap.error(f"--include-runs: {path} is not a folder")
    if args.iters < 1 or args.ts_iters < 1 or args.bench_rounds < 2 or args.mutation_sample < 1:
        ap.error("--iters, --ts-iters and --mutation-sample must be >= 1, --bench-rounds >= 2")

    job = Job(artifacts_dir(), argv)
    job.save()
    for name in args.skip:
        job.skip(name, "left out with --skip (older artifacts, if any, are shown)")
    run = None
    if "train" not in args.skip:
        run = train_step(job, "main", args.iters, TRAIN_ARGS, timeout=3600)
    if args.tinyshakespeare:
        job.record["tinyshakespeare"] = corpus_identity(args.tinyshakespeare)
        train_step(job, "tinyshakespeare", args.ts_iters,
                   ["--recipe", "seed", "--data", str(args.tinyshakespeare.resolve())],
                   timeout=6 * 3600)
    for suite in ("verification", "memory"):
        if suite not in args.skip:
            pytest_step(job, suite, args.full, timeout=3600)
    if "mutation" not in args.skip:
        mutation_step(job, args.mutation_sample, timeout=3600)
    if "opinfo" not in args.skip:
        opinfo_step(job, timeout=1800)
    if "bench" not in args.skip:
        bench_steps(job, args.bench_presets, args.bench_rounds)
    if "trace" not in args.skip:
        trace_step(job, run if "train" not in args.skip else _existing_run(job.art))
    if "asv" not in args.skip:
        asv_step(job, timeout=3600, bench=None if args.asv_bench == "." else args.asv_bench)
    job.include_runs = args.include_runs
    page = build_step(job, args.out)
    if page is None:
        print("[main job] the report could not be built; see main_job.json", file=sys.stderr)
        return 1
    print(page.resolve())
    return 0


TS_BYTES = 1_115_394  # char-rnn's data/tinyshakespeare/input.txt
TS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


def corpus_identity(path: Path) -> dict:
    """Size and sha256 of the Tiny Shakespeare file, and whether it is char-rnn's input.txt
    (another file still trains; the page then says so)."""
    import hashlib

    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    return {"path": relative(path), "bytes": len(data), "sha256": sha,
            "is_char_rnn_input": len(data) == TS_BYTES and sha == TS_SHA256}


def _existing_run(art: Path) -> Path | None:
    run = art / "runs" / "main"
    return run if (run / "checkpoint.json").exists() else None


if __name__ == "__main__":
    raise SystemExit(main())
