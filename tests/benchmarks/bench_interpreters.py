"""Interpreter one-liner analysis: time and peak memory on the largest inputs it accepts.

    python tests/benchmarks/bench_interpreters.py

Prints the best of five CPU times and the peak traced memory of `analyse_code` on Python at
its cap (typical code and dense code), on 256 KiB programs in each searched language, and on
inputs built to make regexes backtrack. The decision budget (DESIGN.md) for a 256 KiB
command is 100 ms and 64 MB in process.
"""

from __future__ import annotations

import ast
import glob
import re
import sysconfig
import time
import tracemalloc
from pathlib import Path

from gateway.policy.shell.interp import MAX_PYTHON_SOURCE, MAX_SOURCE, analyse_code

KIB = 1024


def stdlib_code(size: int) -> str:
    """Real Python: the standard library's own modules, cut at a function boundary."""
    text = ""
    for path in sorted(glob.glob(str(Path(sysconfig.get_paths()["stdlib"]) / "*.py"))):
        source = Path(path).read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(source)
        except SyntaxError:
            continue
        text += source + "\n"
        if len(text) > size:
            break
    cuts = [m.start() for m in re.finditer(r"\n(?=\S)", text[:size])]
    for cut in reversed(cuts):  # the last top-level statement boundary that parses
        try:
            ast.parse(text[:cut])
        except SyntaxError:
            continue
        return text[:cut]
    return ""


def repeat(line: str, size: int) -> str:
    return line * (size // len(line))


CASES = [
    ("python, stdlib code at the cap", "python", stdlib_code(MAX_PYTHON_SOURCE)),
    ("python, dense code at the cap", "python",
     "import os\n" + repeat('x = a.b(c[1], "s", k=v) + os.path.join("a", b) * 2; print(x)\n',
                            MAX_PYTHON_SOURCE - 16)),
    ("python, 3,000 os.system calls", "python",
     "import os\n" + 'os.system("ls -l src")\n' * 2800),
    ("perl 256 KiB", "perl", repeat('my %h; $h{$_}++ for split //, "x"; print join ",", keys %h;\n',
                                    MAX_SOURCE)),
    ("javascript 256 KiB", "javascript",
     repeat('const x = require("fs").readFileSync("a.json", "utf8"); console.log(x.length);\n',
            MAX_SOURCE)),
    ("ruby 256 KiB", "ruby", repeat('puts File.read("Gemfile").lines.map(&:upcase).join\n',
                                    MAX_SOURCE)),
    ("php 256 KiB", "php", repeat('echo json_encode(array_map(fn($x) => $x * 2, [1, 2]));\n',
                                  MAX_SOURCE)),
    ("lua 256 KiB", "lua", repeat('for i = 1, 3 do print(string.format("%d", i)) end\n',
                                  MAX_SOURCE)),
    ("r 256 KiB", "r", repeat("x <- read.csv('a.csv'); print(summary(x))\n", MAX_SOURCE)),
    ("javascript, 256 KiB of '['", "javascript", "[" * MAX_SOURCE),
    ("perl, 256 KiB of 'open('", "perl", "open(" * (MAX_SOURCE // 5)),
    ("php, 256 KiB of 'array_map('", "php", "array_map(" * (MAX_SOURCE // 10)),
]


def measure(language: str, source: str) -> tuple[float, float]:
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        analyse_code(language, source)
        best = min(best, time.process_time() - start)
    tracemalloc.start()
    analyse_code(language, source)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best * 1000, peak / (KIB * KIB)


def main() -> None:
    print(f"{'input':40} {'size':>9} {'cpu ms':>8} {'peak MB':>8}")
    for label, language, source in CASES:
        cpu, peak = measure(language, source)
        print(f"{label:40} {len(source) / KIB:7.1f}Ki {cpu:8.1f} {peak:8.1f}")


if __name__ == "__main__":
    main()
