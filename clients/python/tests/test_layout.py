"""The package's modules import each other in one direction only: no module reaches itself
through its imports, counting imports inside functions and under ``TYPE_CHECKING``."""

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "bo_client"


def imports() -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {}
    for path in PACKAGE.glob("*.py"):
        found: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("bo_client."):
                found.add((node.module or "").split(".")[1])
            elif isinstance(node, ast.Import):
                found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("bo_client."))
        graph[path.stem] = found
    return graph


def test_no_module_imports_itself_round_a_loop() -> None:
    graph = imports()
    assert {"client", "study", "optimize", "measurement"} <= set(graph), sorted(graph)

    def loop_from(start: str) -> List[str]:
        stack = [(start, [start])]
        seen: Set[str] = set()
        while stack:
            module, path = stack.pop()
            for target in sorted(graph.get(module, ())):
                if target == start:
                    return path + [target]
                if target not in seen:
                    seen.add(target)
                    stack.append((target, path + [target]))
        return []

    loops = [loop for loop in map(loop_from, sorted(graph)) if loop]
    assert not loops, " ; ".join(" -> ".join(loop) for loop in loops)
