"""Structure figures of the package (ARCHITECTURE.md, "The report side"): modules over 600 lines, functions
over 80 lines, the size of report/.

    python tests/bench_structure.py .        # in a checkout (or any other checkout's root)
"""
import ast
import sys
from pathlib import Path
root = Path(sys.argv[1]) / "edufair_metrics"
big = sorted((len(p.read_text().splitlines()), str(p.relative_to(root.parent))) for p in root.rglob("*.py") if len(p.read_text().splitlines()) > 600)
fns = []
for p in root.rglob("*.py"):
    for n in ast.walk(ast.parse(p.read_text())):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80:
            fns.append((n.end_lineno - n.lineno + 1, f"{p.relative_to(root.parent)}:{n.name}"))
print("modules > 600 lines:", len(big))
for b in big:
    print("  ", *b)
print("functions > 80 lines:", len(fns))
for f in sorted(fns, reverse=True):
    print("  ", *f)
rep = [p for p in (root / "report").rglob("*.py")]
print("report/ lines:", sum(len(p.read_text().splitlines()) for p in rep), "modules:", len(rep))
