"""Interpreter one-liner analysis: time and peak memory, one-liners to the largest inputs.

    python tests/benchmarks/bench_interpreters.py

Prints, for each language parsed with tree-sitter, the wall time of a typical one-liner in a
fresh process (the grammar's load included: what a command hook pays) and warm; then the best
of five CPU times and the peak traced memory of `analyse_code` on Python and the parsed
languages at their 64 KiB cap (typical and dense code), on 256 KiB programs in each searched
language, and on inputs built to make regexes or the parsers work hard. The decision budget
(DESIGN.md) for a 256 KiB command is 100 ms and 64 MB in process.
"""

from __future__ import annotations

import ast
import glob
import re
import subprocess
import sys
import sysconfig
import time
import tracemalloc
from pathlib import Path

from gateway.policy.shell.interp import (
    MAX_PARSED_SOURCE,
    MAX_PYTHON_SOURCE,
    MAX_SOURCE,
    analyse_code,
)

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
    ("perl 64 KiB", "perl", repeat('my %h; $h{$_}++ for split //, "x"; print join ",", keys %h;\n',
                                   MAX_PARSED_SOURCE)),
    ("perl 64 KiB, system calls", "perl", repeat('system("ls -l src");\n', MAX_PARSED_SOURCE)),
    ("javascript 64 KiB", "javascript",
     repeat('const x = require("fs").readFileSync("a.json", "utf8"); console.log(x.length);\n',
            MAX_PARSED_SOURCE)),
    ("javascript 64 KiB, dense", "javascript",
     repeat("const a = [1, 2, 3].map(x => x * 2).filter(Boolean); console.log(a, {k: a[0]});\n",
            MAX_PARSED_SOURCE)),
    ("ruby 64 KiB", "ruby", repeat('puts File.read("Gemfile").lines.map(&:upcase).join\n',
                                   MAX_PARSED_SOURCE)),
    ("php 64 KiB", "php", repeat('echo json_encode(array_map(fn($x) => $x * 2, [1, 2]));\n',
                                 MAX_PARSED_SOURCE)),
    ("lua 64 KiB", "lua", repeat('for i = 1, 3 do print(string.format("%d", i)) end\n',
                                 MAX_PARSED_SOURCE)),
    ("r 256 KiB", "r", repeat("x <- read.csv('a.csv'); print(summary(x))\n", MAX_SOURCE)),
    ("javascript, 64 KiB of '['", "javascript", "[" * MAX_PARSED_SOURCE),
    ("javascript, 64 KiB of 'a+'", "javascript", "a+" * (MAX_PARSED_SOURCE // 2 - 1) + "a"),
    ("perl, 64 KiB of 'open('", "perl", "open(" * (MAX_PARSED_SOURCE // 5)),
    ("php, 64 KiB of 'array_map('", "php", "array_map(" * (MAX_PARSED_SOURCE // 10)),
    ("ruby, 64 KiB of '(('", "ruby", "(" * MAX_PARSED_SOURCE),
    ("lua, 64 KiB of '..'", "lua", "x = " + "'a' .. " * (MAX_PARSED_SOURCE // 7 - 1) + "'a'"),
    ("php, 64 KiB of '.'", "php", "echo " + "'a' . " * (MAX_PARSED_SOURCE // 6 - 2) + "'a';"),
]

ONE_LINERS = [
    ("javascript", "console.log(require('./package.json').version)"),
    ("ruby", "puts File.read('Gemfile').lines.count"),
    ("perl", "print if /foo/"),
    ("php", "echo json_encode([1]);"),
    ("lua", "print(string.format('%d', 3))"),
]
COLD = """
import sys, time
import gateway.policy.shell.scan, tree_sitter  # what the hook has loaded to scan the command
from gateway.policy.shell.interp import analyse_code
start = time.perf_counter()
analyse_code(sys.argv[1], sys.argv[2])
first = time.perf_counter() - start
start = time.perf_counter()
for _ in range(100):
    analyse_code(sys.argv[1], sys.argv[2])
print(first * 1000, (time.perf_counter() - start) * 10)
"""


def one_liners() -> None:
    """Wall time in a fresh process that has loaded the Bash scanner, as a command hook has:
    the first analysis loads the language's analyser and grammar."""
    print(f"{'one-liner, fresh process':40} {'first ms':>9} {'warm ms':>8}")
    for language, source in ONE_LINERS:
        runs = []
        for _ in range(3):
            done = subprocess.run([sys.executable, "-c", COLD, language, source],
                                  capture_output=True, text=True, check=True)
            first, warm = (float(v) for v in done.stdout.split())
            runs.append((first, warm))
        first, warm = min(runs)
        print(f"{language + ': ' + source[:28]:40} {first:9.2f} {warm:8.3f}")
    print()


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
    one_liners()
    print(f"{'input':40} {'size':>9} {'cpu ms':>8} {'peak MB':>8}")
    for label, language, source in CASES:
        cpu, peak = measure(language, source)
        print(f"{label:40} {len(source) / KIB:7.1f}Ki {cpu:8.1f} {peak:8.1f}")


if __name__ == "__main__":
    main()
