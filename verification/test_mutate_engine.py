"""The engine mutation tool works: mutants are well-formed and confined to their function, a known
mutant is killed on a copy (the repository's files untouched), and every EQUIVALENT entry still
names a mutant the tool generates (a stale entry means the engine changed: re-run the tool)."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

from verification import mutate_engine as me

KNOWN = "graph.py:unbroadcast|flip bool constant|True  ->  False"  # keepdims=True -> False


def test_mutate_engine_mutants_are_valid_and_local():
    text = (me.ROOT / "minitorch/engine/graph.py").read_text()
    mutants = me.mutants_of("minitorch/engine/graph.py", text, None)
    assert len(mutants) > 100 and len({m.key for m in mutants}) == len(mutants)
    func = {qual: fn for qual, fn in me.functions(ast.parse(text), None)}
    for m in mutants:
        new = me.mutated_source(text, m.function, m.node, m.edit)
        compile(new, m.file, "exec")
        fn = func[m.function]
        first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        old_lines, new_lines = text.splitlines(), new.splitlines()
        changed = [i for tag, i1, i2, _, _ in difflib.SequenceMatcher(
            None, old_lines, new_lines).get_opcodes() if tag != "equal" for i in (i1, i2 - 1)]
        assert changed and first - 1 <= min(changed) and max(changed) <= fn.end_lineno, m.key
        assert new != text, m.key


def test_mutate_engine_equivalent_list_is_current():
    """Every listed equivalent mutant is still generated (keys name the exact edit)."""
    mutants = me.all_mutants(me.ROOT)
    stale = me.stale_equivalents(mutants)
    assert not stale, ("EQUIVALENT entries no longer match a mutant (the engine changed; re-run "
                       f"python -m verification.mutate_engine and update them): {stale}")
    assert all(reason.strip() for reason in me.EQUIVALENT.values())
    assert KNOWN in {m.key for m in mutants} and KNOWN not in me.EQUIVALENT


@pytest.mark.slow
def test_mutate_engine_kills_a_known_mutant_on_a_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(me, "STAGES", [("unbroadcast", ["verification/test_unbroadcast.py"], [])])
    me.make_copy(tmp_path / "copy", "WORKTREE", [])
    target = tmp_path / "copy/minitorch/engine/graph.py"
    original = {"minitorch/engine/graph.py": target.read_text()}
    repo_file = me.ROOT / "minitorch/engine/graph.py"
    before = repo_file.stat().st_mtime_ns
    (m,) = [m for m in me.all_mutants(tmp_path / "copy", {KNOWN})]
    c = me.Copy(tmp_path / "copy")
    try:
        assert me.baseline(c, 300) == {}  # the unmutated copy passes
        me.run_mutant(m, c, original, timeout=300)
    finally:
        c.close()
    assert m.status == "killed" and m.stage == "unbroadcast", m
    assert m.killed_by.startswith("verification/test_unbroadcast.py::")
    assert target.read_text() == original["minitorch/engine/graph.py"]  # restored
    assert repo_file.stat().st_mtime_ns == before  # the repository was never written
    assert Path(c.path).is_dir()
