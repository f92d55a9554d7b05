"""Mutation testing of the backward rules: break each registered op's vjp one way at a time and
check that the op's slice of the suite (`pytest <files> -k <op>`) fails, i.e. kills the mutant.

    python -m verification.mutate_vjps                 # every op, 2 workers
    python -m verification.mutate_vjps --ops mul,max   # a few ops
    python -m verification.mutate_vjps --list          # show the mutants, run nothing
    python -m verification.mutate_vjps --sample 40     # 40 mutants spread over the ops (minutes)

Mutants are applied by monkeypatching inside the child pytest (this module doubles as the pytest
plugin `-p verification.mutate_vjps`, driven by $MINITORCH_MUTANT); no source file is touched.
Two families: wrappers around the returned tuple (each float input's gradient times 2, negated)
and AST edits of the vjp body (drop a term or factor, flip a sign, swap matmul operands, drop a
transpose or copy, swap saved operands, change a comparison, constant, keepdims, boolean flag,
branch or conditional expression; drop or flip an in-place update such as `d -= ...`; double a
slice written into a gradient buffer). The AST edits also reach the private helpers of the op's
module that the vjp calls by name (e.g. `_norm_grad`, shared by the norms): such a mutant is
named after the helper and applied to that op's vjp alone. A survivor is re-run against the
whole default set of files (not only -k <op>) before it counts as surviving.
Merges into reports/artifacts/mutation.json: ops measured now replace their earlier rows, the
others are kept, and every row and run records the commit it was measured at. A sampled run
(`--sample N`, as the main job runs it) writes mutation-sample.json instead and never touches
mutation.json. It is a script, never collected as a test.
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = [f"verification/{n}.py" for n in ("test_gradcheck", "test_engine", "test_errors",
                                         "test_fused")]
FILES = FAST + ["verification/test_torch_parity.py", "verification/test_coverage.py",
                "verification/test_torch_semantics.py"]
# A mutant is run against these in turn until one kills it (torch's import is the slow part).
STAGES = [("-k op, no torch", FAST, True), ("-k op", FILES, True), ("full suite", FILES, False)]
ENV_KEY = "MINITORCH_MUTANT"

# ---- AST mutation sites -------------------------------------------------------------------------
Edit = tuple[str, Callable[[ast.AST], ast.AST]]  # (description, node -> replacement)

_FLIP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_LOOSE = {ast.Gt: ast.GtE, ast.Lt: ast.LtE, ast.GtE: ast.Gt, ast.LtE: ast.Lt, ast.Eq: ast.NotEq}


def _src(node: ast.AST) -> str:
    return ast.unparse(node)


def _edits(node: ast.AST) -> list[Edit]:
    """The mutations that apply at one node (each replaces the node)."""
    out: list[Edit] = []
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            out.append(("swap @ operands", lambda n: ast.BinOp(n.right, n.op, n.left)))
        else:
            out.append(("drop right operand", lambda n: n.left))
            if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                out.append(("drop left operand", lambda n: n.right))
            if type(node.op) in _FLIP:
                out.append((f"{type(node.op).__name__} -> {_FLIP[type(node.op)].__name__}",
                            lambda n: ast.BinOp(n.left, _FLIP[type(n.op)](), n.right)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        out.append(("drop unary minus", lambda n: n.operand))
    elif isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.ctx, ast.Load):
        out.append(("drop .T", lambda n: n.value))
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "ctx" and node.attr in ("axis", "keepdims"):
        out.append((f"ctx.{node.attr} -> None/negated", lambda n: ast.Constant(None)
                    if n.attr == "axis" else ast.UnaryOp(ast.Not(), n)))
    elif isinstance(node, ast.Call):
        out += _call_edits(node)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _LOOSE:
        out.append((f"{type(node.ops[0]).__name__} -> {_LOOSE[type(node.ops[0])].__name__}",
                    lambda n: ast.Compare(n.left, [_LOOSE[type(n.ops[0])]()], n.comparators)))
    elif isinstance(node, ast.Constant) and type(node.value) is float:
        out.append(("constant c -> 2c (or 1)",
                    lambda n: ast.Constant(n.value * 2.0 if n.value else 1.0)))
    elif isinstance(node, ast.If):
        out.append(("branch condition -> True", lambda n: _with(n, test=ast.Constant(True))))
        out.append(("branch condition -> False", lambda n: _with(n, test=ast.Constant(False))))
    elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) and \
            len(node.targets[0].elts) >= 2:
        out.append(("swap unpacked saved arrays",
                    lambda n: _with(n, targets=[ast.Tuple(n.targets[0].elts[::-1], ast.Store())])))
    elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
        out.append(("slice write x 2", lambda n: _with(n, value=ast.BinOp(
            ast.Constant(2.0), ast.Mult(), n.value))))
    elif isinstance(node, ast.AugAssign):  # in-place updates: d -= ..., grad[i, t] -= scale
        out.append(("drop in-place update", lambda n: ast.Pass()))
        if type(node.op) in _FLIP:
            out.append((f"in-place {type(node.op).__name__} -> {_FLIP[type(node.op)].__name__}",
                        lambda n: _with(n, op=_FLIP[type(n.op)]())))
    elif isinstance(node, ast.IfExp):
        out.append(("conditional -> its 'if' value", lambda n: n.body))
        out.append(("conditional -> its 'else' value", lambda n: n.orelse))
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and \
            len(node.value.elts) >= 2:
        out.append(("swap returned gradients", lambda n: ast.Return(ast.Tuple(
            [n.value.elts[1], n.value.elts[0], *n.value.elts[2:]], ast.Load()))))
    return out


def _call_edits(node: ast.Call) -> list[Edit]:
    f, out = node.func, []
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    is_np = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np"
    if name in ("swapaxes", "transpose", "astype", "reshape", "copy") and not is_np:
        out.append((f"drop .{name}()", lambda n: n.func.value))
    if is_np and name == "transpose":
        out.append(("drop np.transpose", lambda n: n.args[0]))
    if name == "_mm" and len(node.args) == 2:
        out.append(("swap _mm operands", lambda n: _with(n, args=n.args[::-1])))
    if is_np and name == "where" and len(node.args) == 3:
        out.append(("swap np.where branches",
                    lambda n: _with(n, args=[n.args[0], n.args[2], n.args[1]])))
    for i, kw in enumerate(node.keywords):
        if kw.arg == "keepdims":
            out.append((f"{name}(keepdims=...) negated", lambda n, i=i: _with(n, keywords=[
                *n.keywords[:i], ast.keyword("keepdims", ast.UnaryOp(ast.Not(), n.keywords[i]
                                                                   .value)), *n.keywords[i + 1:]])))
        elif isinstance(kw.value, ast.Constant) and type(kw.value.value) is bool:
            out.append((f"{name}({kw.arg}={kw.value.value}) negated", lambda n, i=i: _with(
                n, keywords=[*n.keywords[:i], ast.keyword(n.keywords[i].arg, ast.Constant(
                    not n.keywords[i].value.value)), *n.keywords[i + 1:]])))
        if kw.arg == "axis":
            out.append((f"{name}(axis=...) dropped",
                        lambda n, i=i: _with(n, keywords=n.keywords[:i] + n.keywords[i + 1:])))
    return out


def _with(node: ast.AST, **fields) -> ast.AST:
    new = copy.copy(node)
    for k, v in fields.items():
        setattr(new, k, v)
    return new


def _vjp_func(cls) -> Callable | None:
    raw = cls.__dict__.get("vjp")
    return getattr(raw, "__func__", raw) if raw is not None else None


def _parse(fn) -> tuple[ast.Module, int]:
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    func = tree.body[0]
    func.decorator_list, func.returns = [], None  # annotations: nothing to mutate (a helper's)
    for arg in ast.walk(func.args):
        if isinstance(arg, ast.arg):
            arg.annotation = None
    return tree, first


def ast_sites(fn) -> Iterator[tuple[int, int, str, str, int]]:
    """(node index, edit index, description, 'before -> after', line) for each AST mutant."""
    tree, first = _parse(fn)
    original = _src(tree)
    for k, node in enumerate(ast.walk(tree.body[0])):
        if node is tree.body[0]:
            continue
        for e, (desc, _) in enumerate(_edits(node)):
            mutated = _mutated_tree(fn, k, e)
            if _src(mutated) == original:
                continue  # a textual no-op (e.g. swapping two identical gradients)
            before, after = _src(node), _src(mutated._mutant)
            change = f"{before.splitlines()[0][:60]}  ->  {after.splitlines()[0][:60]}"
            yield k, e, desc, change, first + getattr(node, "lineno", 1) - 1


def replace_node(root: ast.AST, target: ast.AST, new: ast.AST) -> None:
    """Put `new` where `target` stands under `root` (in a list field or a plain one)."""
    for parent in ast.walk(root):
        for field_name, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field_name, new)
                return
            if isinstance(value, list) and any(v is target for v in value):
                value[next(i for i, v in enumerate(value) if v is target)] = new
                return
    raise ValueError("the node to replace is not under the root")


def _mutated_tree(fn, k: int, e: int) -> ast.Module:
    tree, _ = _parse(fn)
    func = tree.body[0]
    target = list(ast.walk(func))[k]
    new = _edits(target)[e][1](target)
    replace_node(func, target, new)
    ast.fix_missing_locations(tree)
    tree._mutant = new  # type: ignore[attr-defined]
    return tree


def helpers(fn) -> list[str]:
    """The private functions of fn's module that fn calls by name, in order of first call."""
    module = sys.modules[fn.__module__]
    tree, _ = _parse(fn)
    names = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id.startswith("_")]
    return [n for n in dict.fromkeys(names) if inspect.isfunction(getattr(module, n, None))
            and getattr(module, n).__module__ == module.__name__]


# ---- mutants as data, applied in the child process --------------------------------------------
def mutants_for(name: str) -> list[dict]:
    import minitorch as mt
    from verification.specs import SPECS

    cls = mt.REGISTRY[name]
    fn = _vjp_func(cls)
    if fn is None or not cls.differentiable:
        return []
    float_positions = sorted({i for s in SPECS[name].make_samples()
                              for i, a in enumerate(s.inputs) if a.dtype.kind == "f"})
    out = []
    for i in float_positions:  # every float input, including a variadic bias/weight
        out.append({"op": name, "kind": "wrap", "input": i, "scale": 2.0,
                    "desc": f"grad[{i}] * 2", "line": None})
        out.append({"op": name, "kind": "wrap", "input": i, "scale": -1.0,
                    "desc": f"grad[{i}] negated", "line": None})
    for k, e, desc, change, line in ast_sites(fn):
        out.append({"op": name, "kind": "ast", "node": k, "edit": e, "desc": f"{desc}: {change}",
                    "line": line})
    module = sys.modules[fn.__module__]
    for helper in helpers(fn):
        for k, e, desc, change, line in ast_sites(getattr(module, helper)):
            out.append({"op": name, "kind": "ast", "node": k, "edit": e, "helper": helper,
                        "desc": f"{helper}: {desc}: {change}", "line": line})
    return out


def apply_mutant(m: dict) -> None:
    """Replace REGISTRY[m['op']].vjp by its mutant (in this process only)."""
    import minitorch as mt

    cls = mt.REGISTRY[m["op"]]
    fn = _vjp_func(cls)
    if m["kind"] == "wrap":
        i, scale = m["input"], m["scale"]

        def wrapped(ctx, g, _fn=fn):
            grads = list(_fn(ctx, g))
            if i < len(grads) and grads[i] is not None:
                grads[i] = grads[i] * scale
            return tuple(grads)

        cls.vjp = staticmethod(wrapped)
        return
    namespace = dict(sys.modules[fn.__module__].__dict__)
    helper = m.get("helper")
    target = namespace[helper] if helper else fn
    tree = _mutated_tree(target, m["node"], m["edit"])
    exec(compile(tree, f"<mutant {m['op']} {m['desc']}>", "exec"), namespace)
    if helper:  # the vjp itself unchanged, compiled where its helper is the mutant
        exec(compile(_parse(fn)[0], f"<vjp of {m['op']}>", "exec"), namespace)
    cls.vjp = staticmethod(namespace[fn.__name__])


def pytest_configure(config) -> None:  # pytest plugin hook: runs in the child before collection
    if os.environ.get(ENV_KEY):
        apply_mutant(json.loads(os.environ[ENV_KEY]))


# ---- driver -----------------------------------------------------------------------------------
def run_pytest(mutant: dict | None, op: str | None, timeout: float,
               files: list[str] = FILES) -> tuple[str, float]:
    """'killed' (tests failed), 'survived' (passed), 'timeout' or 'error:<rc>'."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
           "-p", "verification.mutate_vjps", "-W", "ignore", *files]
    if op:
        cmd += ["-k", op]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "MINITORCH_ARTIFACTS": tempfile.gettempdir() + "/mt_mut_art"}
    env.pop(ENV_KEY, None)
    if mutant:
        env[ENV_KEY] = json.dumps(mutant)
    start = time.perf_counter()
    try:
        rc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start
    status = {0: "survived", 1: "killed"}.get(rc, f"error:{rc}")
    return status, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    import minitorch as mt

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", help="comma-separated op names (default: every registered op)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--sample", type=int, metavar="N",
                    help="run only N mutants, spread evenly over the ops (seeded); writes "
                         "mutation-sample.json, leaves mutation.json alone")
    ap.add_argument("--seed", type=int, default=0, help="seed of the --sample draw")
    args = ap.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        ap.error("--sample must be >= 1")
    names = args.ops.split(",") if args.ops else sorted(mt.REGISTRY)
    unknown = sorted(set(names) - set(mt.REGISTRY))
    if unknown:
        ap.error(f"--ops: not registered: {', '.join(unknown)} (registered: "
                 f"{', '.join(sorted(mt.REGISTRY))})")
    mutants = [m for n in names for m in mutants_for(n)]
    population = len(mutants)
    if args.sample is not None:
        mutants = sample(mutants, args.sample, args.seed)
    if args.list:
        for m in mutants:
            print(f"{m['op']:>14}  {m['kind']:4}  line {m['line']}  {m['desc']}")
        print(f"{len(mutants)} mutants over {len({m['op'] for m in mutants})} ops")
        return 0
    start, began = git_state(), time.perf_counter()
    ops = sorted({m["op"] for m in mutants})
    with ThreadPoolExecutor(args.jobs) as pool:
        if args.sample is None:
            baseline = dict(zip(ops, pool.map(lambda o: run_pytest(None, o, args.timeout)[0],
                                              ops), strict=True))
        else:  # a few mutants per op: one unmutated run of every sampled op's slice at once
            either = " or ".join(ops)
            baseline = {either: run_pytest(None, either, args.timeout)[0]}
        bad = {o: s for o, s in baseline.items() if s != "survived"}
        if bad:
            print(f"unmutated suite does not pass for {bad}; fix that first", file=sys.stderr)
            return 2
        results = list(pool.map(lambda m: run_stages(m, args.timeout), mutants))
    for m, (status, stage, secs) in zip(mutants, results, strict=True):
        m["status"], m["killed_by"], m["seconds"] = status, stage, round(secs, 2)
    end = git_state()
    run = {"commit": start["commit"], "dirty": start["dirty"],
           "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
           "seconds": round(time.perf_counter() - began, 1),
           "command": shlex.join(["python", "-m", "verification.mutate_vjps",
                                  *(sys.argv[1:] if argv is None else argv)]),
           "files": FILES, "ops": names}
    if end["commit"] != start["commit"]:
        run["commit_at_end"] = end["commit"]  # someone committed while the mutants ran
    if args.sample is not None:  # the ops drawn, not every op asked for
        run["ops"] = ops
        run["sample"] = {"mutants": len(mutants), "of": population, "seed": args.seed}
    return report(mutants, run, sampled=args.sample is not None)


def sample(mutants: list[dict], n: int, seed: int) -> list[dict]:
    """n mutants spread evenly over the ops: each op's mutants in a seeded random order, taken
    one op at a time (ops in a seeded random order) until n are chosen; kept in input order."""
    rng = random.Random(seed)
    by_op: dict[str, list[int]] = {}
    for i, m in enumerate(mutants):
        by_op.setdefault(m["op"], []).append(i)
    queues = [rng.sample(idx, len(idx)) for _, idx in sorted(by_op.items())]
    rng.shuffle(queues)
    chosen: list[int] = []
    while len(chosen) < min(n, len(mutants)):
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop())
    return [mutants[i] for i in sorted(chosen)]


def git_state() -> dict:
    """HEAD and the uncommitted files that can change a result (library and tests)."""
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return ""

    # porcelain lines are "XY path": keep the leading status blank (no strip) to cut at 3
    dirty = git("status", "--porcelain", "--", "minitorch", "verification").splitlines()
    return {"commit": git("rev-parse", "HEAD").strip() or None,
            "dirty": [d[3:] for d in dirty if d.strip()]}


def run_stages(m: dict, timeout: float) -> tuple[str, str | None, float]:
    """Run one mutant through STAGES until killed: (status, killing stage or None, seconds)."""
    total, status, killer = 0.0, "survived", None
    for stage, files, by_op in STAGES:
        status, secs = run_pytest(m, m["op"] if by_op else None, timeout, files)
        total += secs
        if status != "survived":
            killer = stage
            break
    print(f"{status:>9} {m['op']:>14} [{killer or '-'}] {m['desc']}", flush=True)
    return status, killer, total


def report(mutants: list[dict], run: dict, sampled: bool = False) -> int:
    """Print this run's table and survivors, merge it into mutation.json (a sampled run: write
    mutation-sample.json on its own); 1 if any survived."""
    from artifacts import read_json, write_json

    table = tally(mutants)
    print(f"{'op':>14} {'killed':>7} {'survived':>9} {'other':>6}")
    for op, r in sorted(table.items()):
        print(f"{op:>14} {r['killed']:>7} {r['survived']:>9} {r['other']:>6}")
    killed = sum(r["killed"] for r in table.values())
    survived = sum(r["survived"] for r in table.values())
    print(f"total: {killed} killed, {survived} survived of {len(mutants)} "
          f"(kill rate {killed / max(killed + survived, 1):.1%})")
    for m in mutants:
        if m["status"] != "killed":
            print(f"  {m['status']}: {m['op']} line {m['line']}: {m['desc']}")
    run.update(killed=killed, survived=survived, total=len(mutants))
    if sampled:
        path = write_json("mutation-sample.json", merge(None, run, mutants))
        print(f"wrote {path}")
    else:
        path = write_json("mutation.json", merge(read_json("mutation.json"), run, mutants))
        print(f"merged into {path}")
    return 0 if survived == 0 else 1


def tally(mutants: list[dict]) -> dict[str, dict]:
    """{op: {killed, survived, other}}; other = timeout or an error exit of pytest."""
    table: dict[str, dict] = {}
    for m in mutants:
        row = table.setdefault(m["op"], {"killed": 0, "survived": 0, "other": 0})
        row[m["status"] if m["status"] in ("killed", "survived") else "other"] += 1
    return table


def merge(old: dict | None, run: dict, mutants: list[dict]) -> dict:
    """The new mutation.json: this run's mutants replace the earlier rows of the ops it measured
    (and the ops it measured with no mutant, e.g. non-differentiable ones); every other earlier
    row is kept with the commit it was measured at."""
    old = old if isinstance(old, dict) else {}
    runs = [r for r in old.get("runs", []) if r.get("ops")] + [run]
    for m in mutants:
        m["commit"] = run["commit"]
    measured = set(run["ops"])
    kept = [m for m in old.get("mutants", []) if m.get("op") not in measured]
    merged = kept + mutants
    table = tally(merged)
    for op, row in table.items():
        row["commit"] = next(m.get("commit") for m in merged if m["op"] == op)
    killed = sum(r["killed"] for r in table.values())
    survived = sum(r["survived"] for r in table.values())
    ops = sorted({o for r in runs for o in r.get("ops", [])})
    return {"command": "python -m verification.mutate_vjps", "files": run["files"],
            "ops": ops, "table": table, "killed": killed, "survived": survived,
            "total": len(merged), "runs": runs, "mutants": merged}


if __name__ == "__main__":
    sys.exit(main())
