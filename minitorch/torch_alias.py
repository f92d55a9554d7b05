"""`minitorch run SCRIPT [ARGS...]`: run an unmodified PyTorch script with `torch` and every
`torch.*` module resolved to minitorch's module of the same path (torch.nn.functional is
minitorch.nn.functional). Nothing is faked: a module minitorch lacks fails at the import that
names it, and a name it lacks at the line that uses it, saying minitorch does not have it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import traceback
from types import ModuleType

from .io.serialization import set_default_format


class TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A meta-path finder that answers `torch` and `torch.X.Y` with minitorch's modules."""

    saved: dict[str, ModuleType] = {}  # the torch modules install() set aside

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec) -> ModuleType:
        real = "minitorch" + spec.name[len("torch"):]
        try:
            return importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name is not None and (real == e.name or real.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"No module named '{spec.name}': minitorch does not have {spec.name}",
                    name=spec.name) from None
            raise

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: create_module returned minitorch's module, already imported."""


def _torch_modules() -> dict[str, ModuleType]:
    return {n: m for n, m in sys.modules.items() if n == "torch" or n.startswith("torch.")}


def install() -> TorchAlias:
    """Resolve `import torch...` to minitorch from now on. A torch already imported is set
    aside (uninstall puts it back), so no module of the script sees both."""
    finder = TorchAlias()
    finder.saved = _torch_modules()
    for name in finder.saved:
        del sys.modules[name]
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder: TorchAlias) -> None:
    """Undo install: the alias and its torch.* entries go, a torch set aside comes back."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name in _torch_modules():
        del sys.modules[name]
    sys.modules.update(finder.saved)


def run_script(path: str, args: list[str]) -> int:
    """Run the script at `path` as `python path args...` would, with torch resolved to
    minitorch; returns its exit status (1 after an uncaught exception, whose traceback is
    printed without this runner's frames)."""
    argv, sys_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # as python puts the script's
    finder = install()
    save_format = set_default_format("torch")  # the script's torch.save: a file torch reads
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException as e:
        _print_user_traceback(e)
        return 1
    finally:
        set_default_format(save_format)
        uninstall(finder)
        sys.argv = argv
        if sys.path and sys.path[0] != sys_path0:
            sys.path.pop(0)


def _print_user_traceback(e: BaseException) -> None:
    """Python's traceback of e, starting at the script's first frame (not runpy's or ours)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__,
                                                                 "<frozen runpy>"):
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)
