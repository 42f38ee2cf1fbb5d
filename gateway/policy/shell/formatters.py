"""Formatters and fixers, as data: programs that read the files they are given (and print
what they cannot parse: `ruff check .env` shows its lines) and rewrite them, and under a
directory operand every file they format (`ruff format .` rewrites ./**/*.py), unless an
option makes them only check or print (`black --check`, `prettier` without `--write`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.policy.shell.filetable import Mode
from gateway.policy.shell.filetrees import tree
from gateway.policy.shell.words import Word


@dataclass(frozen=True)
class Formatter:
    formats: tuple[str, ...]
    """The names it formats under a directory operand."""
    checks: frozenset[str] = frozenset()
    """Options with which it only checks or prints: no operand is written."""
    writes_with: frozenset[str] = frozenset()
    """Options without which it only prints (empty: it rewrites by default)."""
    values: frozenset[str] = frozenset()
    """Options that take a value that is no file of the project's."""
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    recurses_with: frozenset[str] | None = frozenset()
    """Options that make it descend into a directory operand (empty: it always does; None:
    never)."""
    default: str = ""
    """The operand it takes when given none (`ruff check --fix` works on `.`)."""


def _f(formats: str, *, checks: str = "", writes_with: str = "", values: str = "",
       reads: str = "", writes: str = "", recurses_with: str | None = "",
       default: str = "") -> Formatter:
    return Formatter(
        tuple(formats.split()), frozenset(checks.split()), frozenset(writes_with.split()),
        frozenset(values.split()), frozenset(reads.split()), frozenset(writes.split()),
        None if recurses_with is None else frozenset(recurses_with.split()), default)


_PYTHON = "*.py *.pyi *.ipynb"
_SCRIPTS = "*.[jt]s *.[jt]sx *.[cm][jt]s *.vue *.svelte"
"""JavaScript and TypeScript (each glob is a walk of the tree: classes keep them few)."""
_RUFF_VALUES = ("--line-length --target-version --exclude --extend-exclude --stdin-filename "
                "--cache-dir --output-format --range --select --ignore --extend-select "
                "--extend-ignore --per-file-ignores --extend-per-file-ignores --fixable "
                "--unfixable --extend-fixable --dummy-variable-rgx --preview-features")

FORMATTERS: dict[str, Formatter] = {
    "black": _f(_PYTHON, checks="--check --diff -c --code",
                values="-c --code -l --line-length -t --target-version --include --exclude "
                "--extend-exclude --force-exclude --stdin-filename -W --workers "
                "--python-cell-magics --required-version", reads="--config"),
    "ruff format": _f(_PYTHON, checks="--check --diff", values=_RUFF_VALUES, reads="--config",
                      default="."),
    "ruff check": _f(_PYTHON, checks="--diff --no-fix --watch",
                     writes_with="--fix --fix-only --unsafe-fixes --add-noqa",
                     values=_RUFF_VALUES, reads="--config", writes="-o --output-file",
                     default="."),
    "isort": _f(_PYTHON, checks="--check-only -c --check --diff --show-files",
                values="--settings-path --sp --settings-file --settings -l --line-length "
                "--profile -m --multi-line --src -p --project --skip -s --skip-glob --sg "
                "-a --add-import --rm --remove-import --py -j --jobs --virtual-env "
                "--conda-env"),
    "autopep8": _f(_PYTHON, checks="--diff -d", writes_with="-i --in-place",
                   values="--max-line-length --indent-size --select --ignore -j --jobs -p "
                   "--pep8-passes --exclude --line-range --range", reads="--global-config",
                   recurses_with="-r --recursive"),
    "yapf": _f(_PYTHON, checks="-d --diff", writes_with="-i --in-place",
               values="--style -l --lines -e --exclude", recurses_with="-r --recursive"),
    "prettier": _f(
        f"{_SCRIPTS} *.json* *.css *.scss *.less *.htm* *.md *.markdown *.mdx *.y*ml "
        "*.graphql *.gql *.hbs *.handlebars .prettierrc .babelrc .swcrc",
        checks="--check -c --list-different -l", writes_with="--write -w",
        values="--ignore-path --plugin --parser --print-width --tab-width --trailing-comma "
        "--end-of-line --arrow-parens --prose-wrap --html-whitespace-sensitivity "
        "--embedded-language-formatting --quote-props --object-wrap --log-level "
        "--stdin-filepath --cache-location --cache-strategy --config-precedence "
        "--cursor-offset --range-start --range-end --experimental-operator-position",
        reads="--config"),
    "eslint": _f(_SCRIPTS, checks="--fix-dry-run", writes_with="--fix",
                 values="--ext --rulesdir --parser --parser-options --plugin --rule --env "
                 "--global --ignore-path --ignore-pattern -f --format --max-warnings "
                 "--cache-location --cache-strategy --resolve-plugins-relative-to "
                 "--stdin-filename --report-unused-disable-directives-severity --flag",
                 reads="-c --config", writes="-o --output-file", default="."),
    "gofmt": _f("*.go", writes_with="-w", values="-r -cpuprofile"),
    "shfmt": _f("*.sh *.bash *.bats", checks="-d --diff", writes_with="-w --write",
                values="-i --indent -ln --language-dialect"),
    "clang-format": _f("*", checks="--dry-run -n", writes_with="-i",
                       values="--style --assume-filename --lines --offset --length "
                       "--fallback-style --qualifier-alignment", reads="--files",
                       recurses_with=None),
    "rustfmt": _f("*.rs", checks="--check", values="--edition --emit --config --color",
                  reads="--config-path", recurses_with=None),
    "stylua": _f("*.lua *.luau", checks="--check -c --verify",
                 values="-g --glob --num-threads --column-width --indent-type --indent-width "
                 "--quote-style --call-parentheses --line-endings --sort-requires",
                 reads="-f --config-path"),
}
"""Keyed by program, or program and subcommand (`ruff format`)."""
SUBCOMMANDS = {"ruff": ("format", "check")}
"""Programs whose formatting is a subcommand."""
RUN_AS_MODULES = frozenset({"black", "ruff", "isort", "autopep8", "yapf"})
"""Those `python -m NAME` runs too."""


def formatter_of(name: str, words: Sequence[Word]) -> tuple[Formatter, list[Word]] | None:
    """The formatter a command runs and its argv after the program (and subcommand)."""
    subcommands = SUBCOMMANDS.get(name)
    if subcommands is None:
        found = FORMATTERS.get(name)
        return None if found is None else (found, list(words[1:]))
    rest = list(words[1:])
    first = next((i for i, w in enumerate(rest) if not w.text.startswith("-")), None)
    if first is None or rest[first].text not in subcommands:
        return None
    return FORMATTERS[f"{name} {rest[first].text}"], rest[:first] + rest[first + 1:]


def formatter_uses(use: Formatter, argv: Sequence[Word]) -> list[tuple[Mode, Word]]:
    """What a formatter reads and writes: its operands, and under each directory among them
    the names it formats; files its options name."""
    found: list[tuple[Mode, Word]] = []
    operands: list[Word] = []
    flags: set[str] = set()
    i, ended = 0, False
    while i < len(argv):
        word = argv[i]
        i += 1
        if ended or not word.text.startswith("-") or word.text == "-":
            operands.append(word)
            continue
        if word.text == "--":
            ended = True
            continue
        option, eq, value = word.text.partition("=")
        flags.add(option)
        if not option.startswith("--") and len(option) > 2 and not eq:
            flags.update(f"-{letter}" for letter in option[1:])  # a cluster: -lw
        takes = use.values | use.reads | use.writes
        if option in takes and not eq and i < len(argv):
            value_word, i = argv[i], i + 1
        elif option in takes and eq:
            value_word = Word(value, dynamic=word.dynamic)
        else:
            continue
        if option in use.reads:
            found.append(("read", value_word))
        elif option in use.writes:
            found.append(("write", value_word))
    writes = not (flags & use.checks) and (not use.writes_with or bool(flags & use.writes_with))
    if not operands and use.default:
        operands = [Word(use.default)]
    recurses = use.recurses_with is not None and (
        not use.recurses_with or bool(flags & use.recurses_with))
    modes: tuple[Mode, ...] = ("read", "write") if writes else ("read",)
    for word in operands:
        found += [(mode, word) for mode in modes]
        if recurses and not word.dynamic:
            found += [(mode, tree(word, glob=glob)) for glob in use.formats for mode in modes]
    return found
