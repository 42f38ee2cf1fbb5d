"""The constructs searched for in each language without a parser here (see keywords.py):
AppleScript and JXA (osascript), R and Julia."""

from __future__ import annotations

import re

from gateway.policy.shell.interp.keywords import Table
from gateway.policy.shell.interp.patterns import branches


def _words(*names: str) -> str:
    return r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b"


def _any(*patterns: str | tuple[str, ...]) -> tuple[str, ...]:
    """Alternatives, kept apart so that each is searched only where it can match."""
    return tuple(branch for p in patterns for branch in branches(p))


# -- applescript and JXA (osascript) ----------------------------------------------------------
APPLESCRIPT = Table(
    "applescript",
    unparseable=(
        ("runs a command", _any(r"\bdo\s+shell\s+script\b", r"\bdo\s+script\b",
                                _words("doShellScript", "doScript", "doJavaScript", "NSTask",
                                       "NSAppleScript", "keystroke"),
                                r"\bkey\s+code\b", r"\bSystem\s+Events\b", r"\bTerminal\b",
                                _words("iTerm", "iTerm2"))),
        ("evaluates a string", _any(r"\b(?:run|load)\s+script\b",
                                    _words("eval", "Function", "constructor", "Library"))),
        ("reaches the Objective-C bridge", _any(r"\$\s*[.\[(]", r"\bObjC\b",
                                                r"\bcurrent\s+application\b",
                                                r"\buse\s+framework\b", r"\bNSFileManager\b")),
        ("deletes files", _any(_words("delete", "erase"), r"\bempty\s+(?:the\s+)?trash\b")),
    ),
    writes=_any(_words("move", "duplicate", "write"), r"\bmake\s+new\s+(?:file|folder)\b",
                r"\bopen\s+for\s+access\b", r"\bstore\s+script\b"),
    reads=_any(r"\bread\b", r"\bopen\s+for\s+access\b"),
    network=(r"\bopen\s+location\b", r"\bNSURL\w*"),
    flags=re.I,
)

# -- R -----------------------------------------------------------------------------------------
R = Table(
    "r",
    unparseable=(
        ("runs a command", _any(r"\b(?:system|system2|shell|shell\.exec|pipe)\s*\(",
                                _words("processx", "callr"), r"\bsys::")),
        ("evaluates a string", _any(r"\b(?:eval|evalq|evalQ|parse|source)\s*\(",
                                    _words("str2lang", "str2expression", "sys.source"))),
        ("calls a function by a computed name", _any(r"\bdo\.call\b", r"\b(?:get|get0)\s*\(",
                                                     _words("mget", "match.fun", "getFunction",
                                                            "getExportedValue"), r":::",
                                                     r"\bassign\s*\(", r"\bsys\.function\b")),
        ("loads native code", _any(_words("dyn.load", "library.dynam", "Rcpp"),
                                   r"\.(?:Call|C|External|Internal|Primitive|Fortran)\s*\(")),
        ("loads serialized code", _any(_words("readRDS", "unserialize"), r"\bload\s*\(")),
        ("deletes files", _any(r"\bunlink\s*\(", r"\bfile\.remove\b")),
        ("changes the environment", r"\bSys\.setenv\b"),
    ),
    writes=_any(r"\b(?:write|writeLines|write\.csv|write\.csv2|write\.table|writeBin|writeChar|"
                r"save|save\.image)\s*\(", r"\bsaveRDS\b",
                r"\bfile\.(?:create|copy|rename|append|symlink|link)\b",
                r"\bdir\.create\b", r"\bsink\s*\(", r"\bSys\.chmod\b"),
    reads=_any(r"\b(?:read|readLines|read\.csv|read\.csv2|read\.table|read\.delim|readBin|"
               r"readChar|scan)\s*\("),
    opens=((r"\bfile\b", 0, 1),),
    network=_any(r"\burl\s*\(", r"\bdownload\.file\b", _words("httr", "httr2", "RCurl",
                                                              "socketConnection"), r"\bcurl::"),
    chdir=r"\bsetwd\b",
)

# -- julia -------------------------------------------------------------------------------------
JULIA = Table(
    "julia",
    unparseable=(
        ("runs a command", _any(r"`", r"\brun\s*\(", r"\bpipeline\b", r"(?<!@)\bspawn\b",
                                r"\bCmd\s*\(", r"\bsuccess\s*\(")),
        ("evaluates a string", _any(r"\beval\b", r"\bMeta\s*\.\s*parse\b",
                                    r"\b(?:include|include_string)\s*\(", r"\bevalfile\b",
                                    r"\binvokelatest\b")),
        ("calls a function by a computed name",
         r"\b(?:getfield|getproperty|getglobal)\s*\("),
        ("loads native code", _any(_words("ccall", "cglobal", "Libdl", "dlopen"), r"@ccall")),
        ("deletes files", r"\brm\s*\("),
    ),
    writes=r"\b(?:write|mv|cp|touch|mkdir|mkpath|chmod|chown|symlink|hardlink|mktemp|"
           r"mktempdir)\s*\(",
    reads=r"\b(?:read|readlines|readline|readdir|readchomp|eachline)\s*\(",
    opens=((r"\bopen\b", 0, 1),),
    network=_any(r"\bdownload\s*\(", _words("Downloads", "Sockets"), r"\bHTTP\s*\.",
                 r"\bconnect\s*\("),
    chdir=r"\bcd\s*\(",
)

TABLES = {table.language: table for table in (APPLESCRIPT, R, JULIA)}
