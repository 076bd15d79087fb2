"""No package has an import cycle among its own modules (issue 18 item 3).

Each package's modules are parsed (not imported); every ``import`` of a module of the same
package counts, at module level or inside a function (a lazy import only hides a cycle until
the call), and so does ``importlib.import_module("pkg.mod")`` (or ``(".mod", __package__)``)
with a literal name. ``from . import name`` depends on the submodule ``name`` when it is one
(a ``.py`` file or a compiled extension), else on the package itself (its ``__init__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for p in PACKAGES.glob("*/src") if p.is_dir())


def _modules(src: Path) -> tuple[Path, dict[str, Path]]:
    (pkg,) = [p for p in src.iterdir() if (p / "__init__.py").is_file()]
    mods = {}
    for f in pkg.rglob("*.py"):
        parts = f.relative_to(src).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return pkg, mods


def _is_extension(pkg: Path, dotted: str) -> bool:
    """A compiled submodule (``_C``, ``_native``): not Python, cannot import back."""
    *folders, leaf = dotted.split(".")[1:]
    return (
        any(pkg.joinpath(*folders).glob(f"{leaf}.*.so"))
        or leaf.startswith("_")
        and not any(pkg.joinpath(*folders).glob(f"{leaf}.py"))
    )


def _dependencies(name: str, path: Path, mods: dict[str, Path], pkg: Path) -> set[str]:
    top = name.split(".")[0]
    base = name if path.name == "__init__.py" else name.rpartition(".")[0]
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        literal = _import_module_literal(node)
        if literal is not None:
            if literal.startswith("."):
                level = len(literal) - len(literal.lstrip("."))
                parent = ".".join(base.split(".")[: len(base.split(".")) - level + 1])
                literal = f"{parent}.{literal.lstrip('.')}" if literal.lstrip(".") else parent
            if literal.split(".")[0] == top:
                deps.add(literal)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name.split(".")[0] == top)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = ".".join(base.split(".")[: len(base.split(".")) - node.level + 1])
                mod = f"{parent}.{node.module}" if node.module else parent
            else:
                mod = node.module or ""
            if mod.split(".")[0] != top:
                continue
            is_package = mod in mods and mods[mod].name == "__init__.py"
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                if sub in mods:
                    deps.add(sub)
                elif not (is_package and _is_extension(pkg, sub)):
                    # a name from a module (a private one too: ``from .m import _helper``
                    # depends on ``m``), or a name the package itself defines
                    deps.add(mod)
    return {d for d in deps if d in mods and d != name}


def _import_module_literal(node) -> str | None:
    """The module name of ``importlib.import_module("...")`` / ``import_module("...")`` /
    ``__import__("...")`` called with a string literal; None for anything else."""
    if not (
        isinstance(node, ast.Call)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return None
    func = node.func
    name = (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else None
    )
    return node.args[0].value if name in ("import_module", "__import__") else None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state, stack, found = {}, [], []

    def visit(u):
        state[u] = "open"
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == "open":
                found.append(stack[stack.index(v) :] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.parent.name)
def test_no_import_cycles(src):
    pkg, mods = _modules(src)
    graph = {m: _dependencies(m, p, mods, pkg) for m, p in mods.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_cycle_is_found(tmp_path):
    pkg = tmp_path / "src" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n")  # lazy, still a cycle
    (pkg / "c.py").write_text("from . import _C\n")  # a compiled extension: no edge
    (pkg / "d.py").write_text(
        "def f():\n    from .e import _private\n"
    )  # a private name, a lazy import
    (pkg / "e.py").write_text("from .d import f\n_private = 1\n")
    _, mods = _modules(tmp_path / "src")
    graph = {m: _dependencies(m, p, mods, pkg) for m, p in mods.items()}
    assert _cycles(graph) == [["demo.a", "demo.b", "demo.a"], ["demo.d", "demo.e", "demo.d"]]
    assert graph["demo.c"] == set()


@pytest.mark.parametrize(
    "lazy_import",
    [
        "def f():\n    from .a import g\n",  # relative, in a function
        "def f():\n    import demo.a\n",  # absolute, in a function
        "class K:\n    def m(self):\n        from demo import a\n",  # in a method
        "def f():\n    if True:\n        from . import a\n",  # nested in a block
        "import importlib\ndef f():\n    return importlib.import_module('demo.a')\n",  # by name
        "from importlib import import_module\ndef f():\n    return import_module('.a', __package__)\n",
    ],
)
def test_a_cycle_through_a_function_level_import_is_found(tmp_path, lazy_import):
    """A planted cycle whose back edge is a function-level import: a -> b at module level,
    b -> a only when b's function runs (issue 35)."""
    pkg = tmp_path / "src" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text(lazy_import)
    _, mods = _modules(tmp_path / "src")
    graph = {m: _dependencies(m, p, mods, pkg) for m, p in mods.items()}
    assert _cycles(graph) == [["demo.a", "demo.b", "demo.a"]], graph
