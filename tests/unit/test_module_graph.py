"""The package reads in one sitting per module: no module over ~400 lines, no import cycle."""

from __future__ import annotations

from pathlib import Path

from test_process_boundary import PACKAGE, imported_modules

MAX_LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_no_module_is_over_the_limit():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_import_graph_has_no_cycle():
    modules = _modules()
    edges = {}
    for name, path in modules.items():
        targets = set()
        for _, imported in imported_modules(path):
            # "from a.b import c" names module a.b.c or attribute c of a.b: take the longest that exists
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported != "pytest_nodus":
                targets.add(imported)
        edges[name] = targets
    visiting, done, cycles = set(), set(), []

    def visit(node, trail):
        if node in done:
            return
        if node in visiting:
            cycles.append(trail[trail.index(node):] + [node])
            return
        visiting.add(node)
        for target in sorted(edges.get(node, ())):
            visit(target, trail + [node])
        visiting.discard(node)
        done.add(node)

    for name in sorted(edges):
        visit(name, [])
    assert cycles == []
