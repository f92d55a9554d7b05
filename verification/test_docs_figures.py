"""The figures README.md and docs/recipes.md quote are the ones the code and its artifacts give.

Counts (ops, samples, OpInfos, mutants, tests, the slow tier, programs, parameters, the listed
differences) are computed here; results of the long runs (a full `make mutation`, the engine
mutation run) are compared with their artifact in reports/artifacts/ when it holds such a run,
and skip saying so otherwise. Each phrase must occur exactly once, so a figure that is reworded
fails here until this test follows it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minitorch as mt
from artifacts import artifacts_dir
from verification.specs import SPECS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
RECIPES = (ROOT / "docs" / "recipes.md").read_text()
WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten "
                                    "eleven twelve thirteen fourteen fifteen sixteen seventeen "
                                    "eighteen nineteen twenty".split())}


def quoted(text: str, pattern: str) -> list[int]:
    """The numbers the pattern's groups capture at its one occurrence in text (line breaks
    read as spaces)."""
    found = [m.groups() for m in re.finditer(pattern, " ".join(text.split()))]
    assert len(found) == 1, (f"{pattern!r} occurs {len(found)} times: the figure's phrase "
                             "changed, so change this test with it")
    return [int(g.replace(",", "")) if g[0].isdigit() else WORDS[g] for g in found[0]]


def hundreds(n: int) -> int:
    return int(round(n, -2))


def test_per_op_counts():
    samples = sum(len(spec.make_samples()) for spec in SPECS.values())
    assert quoted(README, r"\| ([\d,]+) ops and composites \(([\d,]+) registered, ([\d,]+) "
                          r"composites\) × ([\d,]+) samples") == [
        len(SPECS), len(mt.REGISTRY), len(mt.COMPOSITES), samples]


def test_opinfo_mapping_counts():
    pytest.importorskip("expecttest")
    from verification.opinfo import db
    from verification.opinfo_table import MAPPED

    mapped, total, rest = quoted(README, r"([\d,]+) of its ([\d,]+) OpInfos mapped \(the "
                                         r"other ([\d,]+) listed")
    assert (mapped, total, rest) == (len(MAPPED), len(db()), len(db()) - len(MAPPED))


@pytest.mark.slow
def test_opinfo_results():
    """Every sample of every mapped OpInfo (about 40 s), as `make opinfo` runs them."""
    pytest.importorskip("expecttest")
    from verification.opinfo import run
    from verification.opinfo_table import MAPPED

    out = run(sorted(MAPPED))
    passed = [out["totals"][d].get("pass", 0) for d in ("float64", "float32", "int64", "bool")]
    failed = sum(c.get("fail", 0) for c in out["totals"].values())
    xfails = sum(c.get("xfail", 0) for c in out["totals"].values())
    assert quoted(README, r"([\d,]+) / ([\d,]+) / ([\d,]+) / ([\d,]+) passed, ([\d,]+) failed, "
                          r"([\d,]+) strict xfails") == [*passed, failed, xfails]


def mutants() -> list[dict]:
    from verification.mutate_vjps import mutants_for

    return [m for name in sorted(mt.REGISTRY) for m in mutants_for(name)]


def test_vjp_mutant_counts():
    """The population is computed; what a full run caught is checked against its artifact."""
    population = mutants()
    total, ops = quoted(README, r"backward rules: ([\d,]+) mutants of ([\d,]+) ops' vjps")
    assert (total, ops) == (len(population), len({m["op"] for m in population}))
    path = artifacts_dir() / "mutation.json"
    run = json.loads(path.read_text()) if path.is_file() else {}
    if run.get("total") != len(population):
        pytest.skip(f"{path} holds no full `make mutation` run of these {len(population)} "
                    "mutants: the caught/survived figures are not checked here")
    killed, survived = quoted(README, r"a full run caught ([\d,]+), the ([\d,]+) survivors")
    assert (killed, survived) == (run["killed"], run["survived"])
    classes = quoted(README, r"survivors equivalent by inspection: ([\d,]+) scale .*?, ([\d,]+) "
                             r"drop .*?, ([\d,]+) spell .*?, ([\d,]+) take ")
    assert sum(classes) == survived


def test_engine_mutation_figures():
    path = artifacts_dir() / "mutation_engine.json"
    if not path.is_file():
        pytest.skip(f"no engine mutation run in {path}: its figures are not checked here")
    run = json.loads(path.read_text())
    statuses = [m.get("status") for m in run.get("mutants", [])]
    total, killed, equivalent = quoted(README, r"([\d,]+) mutants, ([\d,]+) killed, the "
                                               r"([\d,]+) others equivalent")
    if total != len(statuses):
        pytest.skip(f"{path} is a run of {len(statuses)} mutants, not the README's {total}")
    assert (killed, equivalent) == (statuses.count("killed"), total - statuses.count("killed"))


@pytest.mark.slow
def test_test_counts():
    """What `make test` collects: its two sessions, the slow tier, the per-op files."""
    code = ("import collections, json, sys, pytest\n"
            "class C:\n"
            "    def pytest_collection_finish(self, session):\n"
            "        files = collections.Counter(i.nodeid.split('::')[0] for i in session.items)\n"
            "        slow = sum(1 for i in session.items if i.get_closest_marker('slow'))\n"
            "        print('COUNTS' + json.dumps({'files': files, 'slow': slow}))\n"
            "pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider'], plugins=[C()])\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("COUNTS"))
    counts = json.loads(line.removeprefix("COUNTS"))
    files, slow = counts["files"], counts["slow"]
    total = sum(files.values())
    per_op = sum(files[f"verification/{f}.py"] for f in
                 ("test_gradcheck", "test_torch_parity", "test_dtype_semantics"))
    assert quoted(README, r"spread over its ~([\d,]+) tests; ([\d,]+) of them") == [
        hundreds(total), hundreds(per_op)]
    assert quoted(README, r"`make test` runs about ([\d,]+)\)") == [hundreds(total)]
    assert quoted(README, r"the ([\d,]+) slow-tier tests") == [slow]
    dtype_tests = files["verification/test_dtype_semantics.py"]
    assert quoted(README, r"with torch \(`test_dtype_semantics.py`: ([\d,]+) tests") == [
        dtype_tests]


def test_listed_differences():
    section = README[README.index("## Where minitorch differs from PyTorch"):]
    section = section[:section.index("\n## ", 1)]
    (count,) = quoted(section, r"these (\w+) are deliberate")
    assert count == len(re.findall(r"^- \*\*", section, flags=re.M))


def test_saved_for_backward_programs():
    from verification.test_saved_for_backward import KEEPS_LESS, USES

    assert quoted(README, r"test_saved_for_backward.py`: ([\d,]+) programs on both libraries, "
                          r"and these (\w+)\)") == [len(set(USES) - KEEPS_LESS), len(KEEPS_LESS)]


def test_fuzz_programs_in_make_test():
    from verification.test_program_fuzz import N_PROGRAMS

    assert quoted(README, r"([\d,]+) fixed-seed programs in `make test`") == [N_PROGRAMS]


def test_parameter_counts_and_vocabularies():
    from minitorch.data import CharTokenizer, read_corpus
    from minitorch.models import GPT, PRESETS

    def params(vocab: int) -> int:
        return GPT(PRESETS["seed"].replace(vocab_size=vocab)).num_parameters()

    embedded = CharTokenizer.from_text(read_corpus()).vocab_size
    chars, count = quoted(README, r"The embedded corpus has ([\d,]+) distinct characters "
                                  r"\(([\d,]+) parameters")
    assert (chars, count) == (embedded, params(embedded))
    ts_vocab, ts_count = quoted(README, r"Tiny Shakespeare has ([\d,]+) \(([\d,]+), the figure")
    assert ts_count == params(ts_vocab)
    assert quoted(RECIPES, r"trains the same ([\d,]+)-parameter character model") == [
        params(ts_vocab)]
    width = PRESETS["seed"].n_embd
    assert quoted(README, r"each character adds 2 × ([\d,]+) \(the width\) \+ 1 = ([\d,]+) "
                          "parameters") == [width, 2 * width + 1]


def test_recipes_split_sizes():
    from minitorch.data import train_val_split

    total, train, val = quoted(RECIPES, r"split of the ([\d,]+) characters: ([\d,]+) train and "
                                        r"([\d,]+) val tokens")
    a, b = train_val_split(np.zeros(total, dtype=np.uint16))
    assert (train, val) == (len(a), len(b))


@pytest.mark.slow
def test_the_files_a_run_folder_holds(tmp_path):
    """The files README and docs/recipes.md say a run folder holds are the ones a run writes."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "minitorch", "train", "--out", str(out),
                           "--iters", "2", "--eval_interval", "1", "--eval_iters", "1",
                           "--batch_size", "2", "--sample_tokens", "4"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = sorted(p.name for p in out.iterdir())
    named = (re.findall(r"^- `([^`]+)`(?: \+ `([^`]+)`)?:", RECIPES, flags=re.M)
             + re.findall(r"A run folder holds `([^`]+)`, `([^`]+)` and the corpus encoded "
                          r"once as `([^`]+)`", " ".join(README.split())))
    patterns = {p for group in named for p in group if p}
    assert len(patterns) >= 7, patterns
    for pattern in patterns:
        rx = re.sub(r"<[^>]+>", "[^/]+", re.escape(pattern))
        assert any(re.fullmatch(rx, w) for w in written), f"{pattern} not among {written}"


@pytest.mark.parametrize("folder", ["benchmarks", "memory"])
def test_each_folders_readme_names_every_file_of_it(folder):
    """A module or test file added to benchmarks/ or memory/ is described in its README."""
    readme = (ROOT / folder / "README.md").read_text()
    files = sorted(p.name for p in (ROOT / folder).iterdir()
                   if p.suffix in (".py", ".sh") and p.name != "__init__.py")
    assert [f for f in files if f"`{f}`" not in readme] == []
