"""The house's one direction: no module of logforensics imports, directly or through others,
a module that imports it back (function-level and TYPE_CHECKING imports count too)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "logforensics"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """``{module: the logforensics modules it imports}``, from every import statement."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                candidates = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            found |= {c for c in candidates if c in modules and c != name}
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import loops of ``graph`` (one path per loop found by a depth-first walk)."""
    out, state = [], {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                out.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return out


def test_no_import_circles():
    graph = import_graph()
    # a package's face (__init__) hands names on: its submodules importing it is not a loop
    faces = {n for n in graph if (PACKAGE.parent / n.replace(".", "/") / "__init__.py").is_file()}
    loops = [c for c in cycles(graph) if not set(c) & faces]
    assert loops == []


def test_the_cycle_finder_finds_a_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_rich_is_imported_only_by_the_text_views():
    """The stages compute; ``render/`` shows: no module outside ``render/`` imports rich."""
    users = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n == "rich" or n.startswith("rich.") for n in names):
                users.add(_module_name(path))
    outside = {u for u in users if not u.startswith("logforensics._render")}
    assert outside == set()
    assert {"logforensics._render.report", "logforensics._render.status"} <= users


def test_a_servers_knowledge_is_reached_only_through_the_dialect_registry():
    """One home per server: no module outside ``_dialects/`` imports one server's dialect
    package (``_dialects.sglang``, ``_dialects.vllm``); the stages ask the run's ``Dialect``."""
    servers = {p.parent.name for p in (PACKAGE / "_dialects").glob("*/__init__.py")}
    assert {"sglang", "vllm"} <= servers
    reaching = {(module, target) for module, targets in import_graph().items()
                if not module.startswith("logforensics._dialects") for target in targets
                if any(target.startswith(f"logforensics._dialects.{s}") for s in servers)}
    assert reaching == set()
