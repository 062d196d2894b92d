"""The package is built in floors, and imports only go down.

Every import in ``flapjax/`` is read from the source (module level and inside
functions, absolute and relative, and the attribute access that loads a
submodule lazily through ``flapjax._lazy.lazy_submodules``). Nothing is
imported here: the graph is the text of the code.

Floors, lowest first. A module may import modules of its own unit and of units
on lower floors, nothing on its own floor outside its unit and nothing above.
``flapjax/__init__.py`` re-exports lazily and is exempt as an importer.

    floor 0  helpers       flapjax/_lazy, cache, devices, files, math, noise, programs,
                           rng, safe_io, scene, validation (import only each other)
    floor 1  aero, rotor   flapping-wing physics; the multirotor chain (pure)
    floor 2  control, data  stroke schedule, hover and wrench controllers; measured-data files
    floor 3  sim           the MuJoCo MJX bridge: the only importer of mujoco
    floor 4  tasks, identify   environments; parameter identification
    floor 5  entry points  evaluate, evaluate_plot, evaluate_report, render, runs, cli, cli_evaluate,
                           cli_fidelity, demo: what writes folders and draws (the only importers of
                           matplotlib)
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

# (unit, floor, module prefixes): the table above, as data.
FLOORS = (
    ("helpers", 0, ("flapjax._lazy", "flapjax.cache", "flapjax.devices", "flapjax.files", "flapjax.math",
                    "flapjax.noise", "flapjax.programs", "flapjax.rng", "flapjax.safe_io", "flapjax.scene",
                    "flapjax.validation")),
    ("aero", 1, ("flapjax.aero",)),
    ("rotor", 1, ("flapjax.rotor",)),
    ("control", 2, ("flapjax.control",)),
    ("data", 2, ("flapjax.data",)),
    ("sim", 3, ("flapjax.sim",)),
    ("tasks", 4, ("flapjax.tasks",)),
    ("identify", 4, ("flapjax.identify",)),
    ("entry points", 5, ("flapjax.evaluate", "flapjax.evaluate_plot", "flapjax.evaluate_report", "flapjax.render",
                         "flapjax.runs", "flapjax.cli", "flapjax.cli_evaluate", "flapjax.cli_fidelity", "flapjax.demo")),
)
EXEMPT = {"flapjax"}  # the root package re-exports (lazily); it defines nothing
MUJOCO_FLOOR = 3  # only the sim unit may import mujoco; nothing below it may reach it
ENTRY_FLOOR = 5  # only the entry points import matplotlib

# Known edges (importer, imported) that break the rules and are being fixed:
# to be removed, each as soon as its import is gone (test_pending_is_still_needed).
PENDING: frozenset[tuple[str, str]] = frozenset()

ROOT = pathlib.Path(__file__).resolve().parent.parent / "flapjax"


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(name: str, path: pathlib.Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def read_modules(root: pathlib.Path = ROOT) -> dict[str, pathlib.Path]:
    """``{dotted name: path}`` of every module under ``root``."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _resolve(target: str, modules: dict) -> str | None:
    """The longest prefix of ``target`` that is a flapjax module."""
    parts = target.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in modules:
            return ".".join(parts[:n])
    return None


def _lazy_names(tree: ast.AST) -> tuple[str, ...]:
    """Submodule names a package hands to ``lazy_submodules(...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_submodules":
            return tuple(e.value for e in ast.walk(node.args[1]) if isinstance(e, ast.Constant))
    return ()


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    return [node.id, *reversed(chain)] if isinstance(node, ast.Name) else None


def module_imports(name: str, path: pathlib.Path, modules: dict) -> tuple[set[str], set[str], set[str]]:
    """``(flapjax modules, other top-level packages, lazy submodules)`` that
    ``name`` imports; the lazy ones load on first attribute access only.

    ``from a import b`` counts as importing ``a.b`` when that is a module, else
    ``a``. A name bound to a flapjax module (``import flapjax``, ``from flapjax
    import sim``) followed by attributes (``flapjax.tasks.make``) imports the
    module the attributes reach: that is how lazily exported submodules load.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    package = package_of(name, path)
    internal, external, bound = set(), set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "flapjax":
                    external.add(alias.name.split(".")[0])
                    continue
                internal.add(_resolve(alias.name, modules) or alias.name)
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "flapjax"
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            if source.split(".")[0] != "flapjax":
                external.add(source.split(".")[0])
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                internal.add(full if full in modules else source)  # a missing module keeps its name
                if full in modules:
                    bound[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        chain = _attribute_chain(node) if isinstance(node, ast.Attribute) else None
        if chain and chain[0] in bound:
            internal.add(_resolve(".".join([bound[chain[0]], *chain[1:]]), modules))
    lazy = {f"{name}.{sub}" for sub in _lazy_names(tree) if f"{name}.{sub}" in modules}
    internal.discard(name)
    internal.discard(None)
    return internal, external, lazy


def _private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def private_crossings(name: str, path: pathlib.Path, modules: dict) -> list[str]:
    """Private names (``_x``) that ``name`` takes from a module of another
    unit, by ``from m import _x`` or as ``m._x`` on a module bound by import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    unit, found, bound = unit_of(name)[0], [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("flapjax"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in modules:
                    bound[alias.asname or alias.name] = full
                elif _private(alias.name) and unit_of(node.module)[0] != unit:
                    found.append(f"{name} takes {full}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "flapjax":
                    bound[alias.asname or "flapjax"] = alias.name if alias.asname else "flapjax"
    for node in ast.walk(tree):
        chain = _attribute_chain(node) if isinstance(node, ast.Attribute) else None
        if chain and chain[0] in bound:
            parts = [*bound[chain[0]].split("."), *chain[1:]]
            owner = _resolve(".".join(parts), modules)
            rest = parts[len(owner.split(".")):] if owner else []
            if rest and _private(rest[0]) and unit_of(owner)[0] != unit:
                found.append(f"{name} takes {owner}.{rest[0]}")
    return sorted(set(found))


@pytest.fixture(scope="module")
def graph():
    """``(modules, edges, external imports, edges run on import)`` of the
    package; ``edges`` adds the lazily exported submodules to the imports."""
    modules = read_modules()
    edges, external, eager = {}, {}, {}
    for name, path in modules.items():
        eager[name], external[name], lazy = module_imports(name, path, modules)
        edges[name] = eager[name] | lazy
    return modules, edges, external, eager


def unit_of(name: str) -> tuple[str, int]:
    """``(unit, floor)`` of a module; a module in no floor (reported by
    ``test_every_module_has_a_floor``) is its own unit on the top floor."""
    for unit, floor, prefixes in FLOORS:
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return unit, floor
    return name, max(f for _, f, _ in FLOORS)


def floor_violations(edges: dict) -> list[str]:
    bad = []
    for source, targets in edges.items():
        if source in EXEMPT:
            continue
        unit, floor = unit_of(source)
        for target in sorted(targets - EXEMPT):
            t_unit, t_floor = unit_of(target)
            if t_unit != unit and t_floor >= floor and (source, target) not in PENDING:
                bad.append(f"{source} ({unit}, floor {floor}) imports {target} ({t_unit}, floor {t_floor})")
    return bad


def find_cycles(edges: dict) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan),
    each as one cycle through it, found by a depth-first walk."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_one_cycle(c, edges) for c in components]


def _one_cycle(component: set, edges: dict) -> list[str]:
    start = min(component)
    path, seen = [start], {start}
    while True:
        nxt = sorted(w for w in edges[path[-1]] if w in component)
        back = [w for w in nxt if w in path]
        if back:
            return path[path.index(back[0]):] + [back[0]]
        step = next(w for w in nxt if w not in seen)
        path.append(step)
        seen.add(step)


def without_pending(edges: dict) -> dict:
    return {s: {t for t in ts if (s, t) not in PENDING} for s, ts in edges.items()}


def reach(start: str, edges: dict) -> dict[str, str]:
    """``{module: the module that imports it}`` for every module that
    ``start`` reaches (breadth first, so each chain is a shortest one)."""
    parent, todo = {start: ""}, [start]
    while todo:
        v = todo.pop(0)
        for t in sorted(edges.get(v, ())):
            if t not in parent:
                parent[t] = v
                todo.append(t)
    del parent[start]
    return parent


def chain_to(target: str, parent: dict) -> str:
    links = [target]
    while parent.get(links[-1]):
        links.append(parent[links[-1]])
    return " -> ".join(reversed(links))


def with_parent_packages(edges: dict) -> dict:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first."""
    out = {}
    for source, targets in edges.items():
        out[source] = set(targets)
        for t in targets:
            parts = t.split(".")
            out[source].update(".".join(parts[:n]) for n in range(1, len(parts)))
    return out


# --- the rules ----------------------------------------------------------------


def test_every_module_has_a_floor(graph):
    modules = graph[0]
    missing = [m for m in modules if m not in EXEMPT and unit_of(m)[0] == m]
    assert not missing, f"modules in no floor of FLOORS (add them to the table in tests/test_layers.py): {missing}"


def test_imports_only_go_down(graph):
    edges = graph[1]
    bad = floor_violations(edges)
    assert not bad, "imports that go up or sideways:\n  " + "\n  ".join(bad)


def test_no_import_cycles(graph):
    edges = graph[1]
    cycles = find_cycles(without_pending(edges))
    assert not cycles, "import cycles:\n  " + "\n  ".join(" -> ".join(c) for c in cycles)


def test_no_private_name_crosses_a_unit(graph):
    modules = graph[0]
    found = [f for m, p in modules.items() if m not in EXEMPT for f in private_crossings(m, p, modules)]
    assert not found, "private names used from another unit:\n  " + "\n  ".join(found)


def test_pending_is_still_needed(graph):
    """An allowed edge whose import is gone is removed from PENDING."""
    edges = graph[1]
    gone = sorted(e for e in PENDING if e[1] not in edges.get(e[0], ()))
    assert not gone, f"remove from PENDING in tests/test_layers.py (no longer imported): {gone}"


def test_only_sim_imports_mujoco(graph):
    external = graph[2]
    direct = sorted(m for m, ext in external.items() if "mujoco" in ext and unit_of(m)[0] != "sim")
    assert not direct, f"modules outside flapjax/sim/ that import mujoco: {direct}"


def drawing_below_the_entry_floor(external: dict[str, set]) -> list[str]:
    """Modules under the entry floor that import matplotlib."""
    return sorted(m for m, ext in external.items()
                  if m not in EXEMPT and "matplotlib" in ext and unit_of(m)[1] < ENTRY_FLOOR)


def test_only_the_entry_floor_draws(graph):
    """Plots are drawn where folders are written: identify, tasks and sim
    compute and return results, and import without matplotlib."""
    drawing = drawing_below_the_entry_floor(graph[2])
    assert not drawing, f"modules below the entry floor that import matplotlib: {drawing}"


def test_below_sim_nothing_reaches_mujoco(graph):
    """Through any chain of flapjax imports (parent packages included)."""
    modules, _, external, eager = graph
    full = with_parent_packages(eager)
    bad = []
    for m in modules:
        if m in EXEMPT or unit_of(m)[1] >= MUJOCO_FLOOR:
            continue
        parent = reach(m, full)
        if "mujoco" in external[m]:
            parent[m] = ""
        hits = [r for r in parent if "mujoco" in external.get(r, ())
                or (r not in EXEMPT and unit_of(r)[1] >= MUJOCO_FLOOR)]
        if hits:  # the shortest chain is enough to find the import to cut
            bad.append(chain_to(min(hits, key=lambda r: (chain_to(r, parent).count("->"), r)), parent))
    assert not bad, "modules below sim that reach mujoco:\n  " + "\n  ".join(bad)


def test_importing_the_floors_below_sim_loads_no_mujoco():
    """The same rule, run: a fresh interpreter imports every module below
    sim and MuJoCo is still not loaded."""
    below = sorted(m for m in read_modules() if m not in EXEMPT and unit_of(m)[1] < MUJOCO_FLOOR)
    code = ("import importlib, sys\n"
            f"for m in {below!r}: importlib.import_module(m)\n"
            "loaded = sorted(m for m in sys.modules if m == 'mujoco' or m.startswith('mujoco.'))\n"
            "assert not loaded, loaded\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# --- the checker itself ----------------------------------------------------------


def _write_package(tmp_path, files: dict[str, str]) -> dict[str, pathlib.Path]:
    """Write ``files`` (path under ``flapjax/``: text) and read the modules back."""
    root = tmp_path / "flapjax"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return read_modules(root)


def _package(tmp_path, files: dict[str, str]) -> tuple[dict, dict]:
    modules = _write_package(tmp_path, files)
    return modules, {n: set.union(*module_imports(n, p, modules)[::2]) for n, p in modules.items()}


def test_the_checker_sees_every_kind_of_import(tmp_path):
    _, edges = _package(tmp_path, {
        "__init__.py": "from flapjax._lazy import lazy_submodules\n"
                       "__getattr__, __dir__ = lazy_submodules(__name__, ('sim',), globals())\n",
        "math.py": "def f():\n    import flapjax\n    return flapjax.sim.flapper.step\n",
        "aero/__init__.py": "from . import wrench\n",
        "aero/wrench.py": "from ..control.hover import x\n",
        "control/__init__.py": "", "control/hover.py": "def g():\n    from flapjax.sim import flapper\n",
        "sim/__init__.py": "", "sim/flapper/__init__.py": "", "sim/flapper/step.py": "import mujoco\n",
        "_lazy.py": "",
    })
    assert edges["flapjax"] == {"flapjax._lazy", "flapjax.sim"}
    assert edges["flapjax.math"] == {"flapjax", "flapjax.sim", "flapjax.sim.flapper", "flapjax.sim.flapper.step"}
    assert edges["flapjax.aero"] == {"flapjax.aero.wrench"}
    assert edges["flapjax.aero.wrench"] == {"flapjax.control.hover"}
    assert edges["flapjax.control.hover"] == {"flapjax.sim.flapper"}
    bad = floor_violations(edges)
    assert any(b.startswith("flapjax.math (helpers, floor 0) imports flapjax.sim.flapper.step") for b in bad)
    assert any(b.startswith("flapjax.aero.wrench (aero, floor 1) imports flapjax.control.hover") for b in bad)


def test_the_checker_sees_matplotlib_below_the_entry_floor(tmp_path):
    modules = _write_package(tmp_path, {
        "__init__.py": "", "identify/__init__.py": "",
        "identify/report.py": "def plot():\n    import matplotlib.pyplot as plt\n    return plt\n",
        "runs/__init__.py": "", "runs/plots.py": "import matplotlib\n"})
    external = {n: module_imports(n, p, modules)[1] for n, p in modules.items()}
    assert drawing_below_the_entry_floor(external) == ["flapjax.identify.report"]


def test_the_checker_sees_a_private_name_taken_across_units(tmp_path):
    modules = _write_package(tmp_path, {
        "__init__.py": "", "math.py": "_EPS = 1.0\n", "sim/__init__.py": "",
        "sim/rigid.py": "from flapjax.sim.tree import _inner\nfrom flapjax.math import _EPS\n",
        "sim/tree.py": "def _inner():\n    pass\n",
        "tasks/__init__.py": "", "tasks/base.py": "from flapjax.sim import rigid as r\nx = r._step\ny = r.__name__\n"})
    assert private_crossings("flapjax.sim.rigid", modules["flapjax.sim.rigid"], modules) == [
        "flapjax.sim.rigid takes flapjax.math._EPS"]  # within sim, _inner is fine
    assert private_crossings("flapjax.tasks.base", modules["flapjax.tasks.base"], modules) == [
        "flapjax.tasks.base takes flapjax.sim.rigid._step"]


def test_the_checker_refuses_sideways_imports_and_reports_a_cycle():
    edges = {"flapjax.tasks.base": {"flapjax.identify.fit"}, "flapjax.identify.fit": {"flapjax.sim.rigid"},
             "flapjax.aero.wrench": {"flapjax.rotor.chain"}, "flapjax.rotor.chain": {"flapjax.math"},
             "flapjax.sim.a": {"flapjax.sim.b"}, "flapjax.sim.b": {"flapjax.sim.c"}, "flapjax.sim.c": {"flapjax.sim.a"},
             "flapjax.sim.rigid": set(), "flapjax.math": set()}
    bad = floor_violations(edges)
    assert [b.split(" (")[0] for b in bad] == ["flapjax.tasks.base", "flapjax.aero.wrench"]
    assert find_cycles(edges) == [["flapjax.sim.a", "flapjax.sim.b", "flapjax.sim.c", "flapjax.sim.a"]]
    assert find_cycles({**edges, "flapjax.sim.c": set()}) == []
