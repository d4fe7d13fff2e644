"""The layers of docs/architecture.md ("Layers") hold: a package imports only packages below it, modules
import each other without cycles, studies swallow no exceptions, and no function is longer than
:data:`MAX_FUNCTION_LINES` (``python tests/test_layers.py`` lists the longest).

Imports are read from the source (``ast``), deferred ones inside functions included: an import
that runs late is still a dependency.
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections import defaultdict

PKG = pathlib.Path(__file__).resolve().parents[1] / "python" / "parcomm"

ARCHITECTURE = PKG.parents[1] / "docs" / "architecture.md"


def _layers_from_architecture() -> list[set[str]]:
    """The layer table of docs/architecture.md ("## Layers"), bottom up: one row per layer, its
    packages in backquotes. Packages on one row are peers (they must not import each other).
    The page is the map a reader trusts, so the tests hold the code to it, not to a copy."""
    text = ARCHITECTURE.read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and cells[0].isdigit():
            assert int(cells[0]) == len(layers), f"architecture.md: layer rows out of order at {line!r}"
            layers.append(set(re.findall(r"`([\w.]+)`", cells[1])))
    assert layers, "architecture.md has no layer table under '## Layers'"
    return layers


#: Bottom up, as docs/architecture.md draws them. ``result`` is the one result type of every way
#: (data only), below everything that produces or compares results. ``models`` are closed forms
#: over platform data, so they sit below ``comm``; ``conformance`` runs studies' scenarios in the
#: simulator and the emulation, below the CLI.
LAYERS = _layers_from_architecture()

#: Known crossings another change is removing; each names that change. Keep this list short.
PENDING: set[tuple[str, str]] = set()  # none left: measurement moved to parcomm.measure
#: Module cycles being removed elsewhere (none left: the bcast baselines, benchmark harness, moved
#: out of the library to benchmarks/bcast_baselines_node.py and build on its emulation).
PENDING_CYCLE_PREFIXES: tuple[str, ...] = ()


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: pathlib.Path) -> list[tuple[str, int]]:
    """Absolute names of the parcomm modules (or packages) ``path`` imports, with line numbers."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from . import x` may name a module x: count both the package and x
            out.append((mod, node.lineno))
            out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]
    return [(m, line) for m, line in out if m == "parcomm" or m.startswith("parcomm.")]


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _layer_of(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise AssertionError(f"package parcomm.{package} is in no layer: add it to LAYERS")


def test_every_package_has_a_layer():
    for p in PKG.iterdir():
        if p.name.startswith((".", "_")) and p.name != "__main__.py" and p.name != "_core.pyi":
            continue
        if p.is_dir() and (p / "__init__.py").exists() or p.suffix in (".py", ".pyi"):
            _layer_of(p.name.split(".")[0])


def test_packages_import_only_layers_below():
    crossings = []
    for name, path in _modules().items():
        parts = name.split(".")
        if len(parts) < 2:
            continue  # parcomm/__init__.py is the composition root: it may wire any layer
        own = parts[1]
        for target, line in _imports(path):
            tparts = target.split(".")
            if len(tparts) < 2 or tparts[1] == own:
                continue
            if _layer_of(tparts[1]) >= _layer_of(own) and (name, tparts[1]) not in PENDING:
                crossings.append(f"{path.relative_to(PKG.parent)}:{line}: {own} imports {target}")
    assert not crossings, "imports that cross the layers upward or sideways:\n" + "\n".join(sorted(set(crossings)))


def test_pending_crossings_still_exist():
    """An allow-listed crossing that is gone must leave the list, so the list stays true."""
    mods = _modules()
    for module, package in PENDING:
        if module not in mods:
            continue  # moved away: fine, but drop it from PENDING when you see this
        targets = {t.split(".")[1] for t, _ in _imports(mods[module]) if t.count(".")}
        assert package in targets, f"{module} no longer imports {package}: remove it from PENDING"


def _cycles() -> list[list[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        for target, _ in _imports(path):
            # the module itself when it exists, else the package it names
            while target not in mods and "." in target:
                target = target.rpartition(".")[0]
            # a package's __init__ re-exporting its own modules is not a cycle of theirs
            inside = name.startswith(target + ".") or target.startswith(name + ".")
            if target != name and target in mods and not inside:
                graph[name].add(target)
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m) :] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(mods):
        if n not in state:
            visit(n)
    return cycles


def _pending(cycle: list[str]) -> bool:
    return all(m.startswith(PENDING_CYCLE_PREFIXES) for m in cycle)


def test_modules_import_each_other_without_cycles():
    real = [c for c in _cycles() if not _pending(c)]
    assert not real, "import cycles:\n" + "\n".join(" -> ".join(c) for c in real)


def test_pending_cycles_still_exist():
    for prefix in PENDING_CYCLE_PREFIXES:
        assert any(all(m.startswith(prefix) for m in c) for c in _cycles()), (
            f"no import cycle left under {prefix}: remove it from PENDING_CYCLE_PREFIXES"
        )


def _passes_on(handler: ast.ExceptHandler) -> bool:
    """The handler re-raises, or hands the exception object on (``fut.set_exception(exc)``)."""
    for node in ast.walk(handler):
        if isinstance(node, ast.Raise):
            return True
        if (
            isinstance(node, ast.Call)
            and handler.name
            and any(isinstance(a, ast.Name) and a.id == handler.name for a in node.args)
        ):
            return True
    return False


def test_studies_swallow_no_exceptions():
    """A study that catches everything hides a simulator bug as a missing column (shimokuni once
    dropped its simulated column that way). Catching broadly is fine only to pass the error on."""
    found = []
    for path in (PKG / "studies").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler):
                names = [node.type] if not isinstance(node.type, ast.Tuple) else list(node.type.elts)
                broad = node.type is None or any(
                    isinstance(t, ast.Name) and t.id in ("Exception", "BaseException") for t in names
                )
                if broad and not _passes_on(node):
                    found.append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    assert not found, "broad except in studies: " + ", ".join(found)


#: Lines of a function, from its ``def`` to its last line (docstring and nested functions included).
MAX_FUNCTION_LINES = 80
#: Functions still longer, each with why; this list may only shrink (split a function along its
#: seams rather than add it here). Keys are ``path under parcomm:qualified name``.
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}


def _function_lengths() -> dict[str, int]:
    """``path:qualified name`` -> lines, for every function and method under parcomm."""
    out: dict[str, int] = {}

    def walk(node: ast.AST, where: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out[f"{where}:{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                walk(child, where, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, where, prefix + child.name + ".")
            else:
                walk(child, where, prefix)

    for path in sorted(PKG.rglob("*.py")):
        walk(ast.parse(path.read_text(), str(path)), path.relative_to(PKG).as_posix(), "")
    return out


def test_functions_are_short():
    long = {f: n for f, n in _function_lengths().items() if n > MAX_FUNCTION_LINES}
    new = sorted(f"{f} ({long[f]} lines)" for f in long if f not in LONG_FUNCTIONS_ALLOWED)
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (split them along their seams):\n" + "\n".join(new)


def test_allowed_long_functions_are_still_long():
    """An allowed function that is gone or short enough must leave the list, so the list only shrinks."""
    lengths = _function_lengths()
    stale = [f for f in LONG_FUNCTIONS_ALLOWED if lengths.get(f, 0) <= MAX_FUNCTION_LINES]
    assert not stale, "remove from LONG_FUNCTIONS_ALLOWED: " + ", ".join(stale)


if __name__ == "__main__":
    for f, n in sorted(_function_lengths().items(), key=lambda x: -x[1])[:20]:
        print(f"{n:5d}  {f}{'  (allowed)' if f in LONG_FUNCTIONS_ALLOWED else ''}")
