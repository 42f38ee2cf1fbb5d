"""The constructs searched for in each language without a parser here (see keywords.py)."""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.policy.shell.interp.keywords import LITERAL, MAX_CALLS, Table, call_args
from gateway.policy.shell.interp.patterns import branches

_JOIN = {
    "js": re.compile(r"""(['"`])\s*\+\s*(['"`])"""),
    "dot": re.compile(r"""(['"])\s*\.\s*(['"])"""),
    "lua": re.compile(r"""(['"])\s*\.\.\s*(['"])"""),
}
_ESCAPES = re.compile(r"\\(?:u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|x\{([0-9a-fA-F]{1,6})\}"
                      r"|x([0-9a-fA-F]{2})|([0-7]{1,3}))")


def _decode(match: re.Match[str]) -> str:
    for index, base in ((1, 16), (2, 16), (3, 16), (4, 16), (5, 8)):
        digits = match.group(index)
        if digits is not None:
            code = int(digits, base)
            return chr(code) if code < 0x110000 else match.group(0)
    return match.group(0)


def _decoded(joiner: re.Pattern[str]) -> Callable[[str], str]:
    def normalize(text: str) -> str:
        return joiner.sub("", _ESCAPES.sub(_decode, text))
    return normalize


def _words(*names: str) -> str:
    return r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b"


def _any(*patterns: str | tuple[str, ...]) -> tuple[str, ...]:
    """Alternatives, kept apart so that each is searched only where it can match."""
    return tuple(branch for p in patterns for branch in branches(p))


# -- perl ------------------------------------------------------------------------------------
_PERL_OPEN = re.compile(r"\b(?:sysopen|open)\b")
_PERL_MODE = re.compile(r"""\s*(['"])\s*(\+?(?:<|>>?))\s*(?::[\w()\-: ]*)?\1\s*""")


def _perl_mode(mode: str) -> str:
    mode = mode.strip()
    return "r+" if mode.startswith("+") else "w" if mode.startswith(">") else "r"


def _perl_open(text: str) -> str:
    """open with a pipe, with a mode computed at run time, or a two-argument open of a
    computed name (which may end in |) is unparseable."""
    if "open" not in text:
        return ""
    for count, match in enumerate(_PERL_OPEN.finditer(text)):
        if count == MAX_CALLS:
            return "perl code opens more files than this analysis follows"
        args = call_args(text, match.end())
        if args is None:
            rest = text[match.end(): match.end() + 200].split(";")[0]
            args = rest.split(",") if "(" not in rest else None
        if not args or len(args) < 2 or "|" in "".join(args):
            return f"perl code {match.group(0)} with a pipe or arguments this analysis cannot read"
        if match.group(0) == "sysopen":
            continue
        if len(args) == 2 and re.fullmatch(LITERAL, args[1].strip()) is None:
            return "perl code uses the two-argument open of a name computed at run time"
        if len(args) > 2 and _PERL_MODE.fullmatch(args[1]) is None:
            return "perl code opens a file with a mode computed at run time"
    return ""


PERL = Table(
    "perl",
    unparseable=(
        ("runs a command in backticks", r"`"),
        ("runs a command with qx", r"\bqx\b(?!\s*=>)"),
        ("runs a command", _words("readpipe", "syscall", "open2", "open3", "pipe_from_fork",
                                  "capturex", "runx", "systemx")),
        ("uses a module that runs commands", _any(_words("IPC", "Proc", "Capture", "Expect",
                                                         "Shell"),
                                                  r"\bNet::SSH", r"\bSystem::Command\b",
                                                  r"\bSys::Run\b")),
        ("evaluates a string", r"\beval\b(?!\s*\{)"),
        ("runs a file", r"\bdo\s*(?!\{)[\w\"'$(]"),
        ("loads a module named at run time", r"\brequire\s*\(?\s*[\"'$]"),
        ("calls a sub by a computed name", _any(r"&\s*[{$]", r"->\s*[$\{]", r"->\s*can\b",
                                                r"\bUNIVERSAL::", r"\*\s*[{$]", r"\bgoto\s*&",
                                                r"\bAUTOLOAD\b", r"\bsort\s+\$\w+\s")),
        ("reaches the symbol table", (r"%\s*(?:main)?::", r"\$(?:main)?::\s*\{",
                                      r"\bCORE::GLOBAL\b")),
        ("installs a signal handler by name", (r"\$SIG\s*\{", r"%SIG\b")),
        ("runs code inside a regex", (r"\(\?\??\{",
                                      r"/[msixpodualngcr]*e[msixpodualngcr]*e[a-z]*\b")),
        ("loads native code", _words("DynaLoader", "XSLoader", "Inline", "FFI", "B", "Safe",
                                     "reval")),
        ("changes what <> opens", _any(r"@ARGV\s*=", r"\$ARGV\s*\[[^\]]{0,300}\]\s*=",
                                       r"\b(?:push|unshift|splice)\s*\(?\s*@ARGV")),
        ("deletes files", _any(_words("unlink", "rmdir", "rmtree", "remove_tree"),
                               r"->\s*remove\w*", r"\bFile::Remove\b")),
    ),
    spawns=r"\b(?:system|exec)\b",
    argv=True,
    writes=_words("rename", "link", "symlink", "truncate", "mkdir", "chmod", "chown", "utime",
                  "copy", "move", "cp", "mv", "make_path", "mkpath", "write_file", "append_file",
                  "spew", "spew_utf8", "spew_raw", "append_utf8", "append_raw", "touch",
                  "write_text"),
    reads=_words("read_file", "slurp", "slurp_utf8", "slurp_raw", "lines_utf8"),
    opens=((r"\bopen\b", 2, 1),),
    open_mode=_perl_mode,
    network=_any(r"\bLWP\b", r"\bHTTP::Tiny\b", r"\bIO::Socket\b", r"\bMojo::UserAgent\b",
                 r"\bNet::(?!SSH)\w+", r"\bsocket\s*\(", r"\bgetstore\b", r"\bgetprint\b"),
    chdir=r"\bchdir\b",
    normalize=_decoded(_JOIN["dot"]),
    checks=(_perl_open,),
)

# -- ruby ------------------------------------------------------------------------------------
_RUBY_PATHNAME = re.compile(r"\bPathname\b")
_RUBY_DELETE = re.compile(r"\.\s*delete\b")


def _ruby_pathname_delete(text: str) -> str:
    if "Pathname" in text and _RUBY_PATHNAME.search(text) and _RUBY_DELETE.search(text):
        return "ruby code may delete a file through Pathname#delete"
    return ""


RUBY = Table(
    "ruby",
    unparseable=(
        ("runs a command in backticks", r"`"),
        ("runs a command with %x", r"%x\s*[^\w\s]"),
        ("runs a command", _any(r"\bIO\s*\.\s*(?:popen|read|readlines|write|foreach|binread|"
                                r"binwrite|sysopen|new|for_fd|copy_stream|open)\b",
                                _words("Open3", "PTY", "Shell", "popen", "popen2", "popen3",
                                       "syscall", "fork"),
                                r"(?<![.\w:])open\s*[(\s'\"]", r"\bURI\s*\.\s*open\b")),
        ("evaluates a string", _any(_words("eval", "instance_eval", "class_eval",
                                           "module_eval", "binding", "ERB", "RubyVM"))),
        ("calls a method by a computed name", _words("send", "__send__", "public_send",
                                                     "method", "instance_method",
                                                     "define_method", "const_get",
                                                     "constantize", "Kernel", "ObjectSpace",
                                                     "instance_variable_get")),
        ("loads code", _any(r"(?<![.\w])load\b", r"\bautoload\b",
                            r"\b(?:require|require_relative)\s*\(?\s*(?![\"'][\w/.\-]{1,300}[\"'])[^\s(]",
                            r"\bMarshal\s*\.\s*load\b",
                            r"\b(?:YAML|Psych)\s*\.\s*(?:unsafe_)?load\b")),
        ("loads native code", _words("Fiddle", "DL", "FFI")),
        ("deletes files", _any(r"\b(?:File|Dir)\s*\.\s*(?:delete|unlink|rmdir)\b",
                               r"\bFileUtils\s*\.\s*(?:rm\w*|remove\w*|rmdir|rmtree)\b",
                               r"\.\s*(?:unlink|rmtree|rmdir)\b", _words("rm_rf", "rm_r"))),
    ),
    spawns=r"\b(?:system|exec|spawn)\b",
    argv=True,
    writes=_any(r"\bFile\s*\.\s*(?:write|binwrite|rename|symlink|link|chmod|chown|truncate|"
                r"utime|mkfifo|lchmod|lchown)\b",
                r"\bFileUtils\s*\.\s*(?:mv|move|cp\w*|copy\w*|touch|mkdir\w*|makedirs|mkpath|"
                r"ln\w*|symlink|chmod\w*|chown\w*|install)\b",
                r"\bDir\s*\.\s*mkdir\b"),
    reads=_any(r"\bFile\s*\.\s*(?:read|readlines|foreach|binread|readlink)\b"),
    opens=((r"\bFile\s*\.\s*(?:open|new)\b", 0, 1),),
    network=_any(r"\bNet::HTTP\b", r"\bopen-uri\b", _words("TCPSocket", "UDPSocket", "Socket",
                                                            "HTTParty", "Faraday", "RestClient",
                                                            "Excon")),
    chdir=r"\bDir\s*\.\s*chdir\b",
    normalize=_decoded(_JOIN["js"]),
    checks=(_ruby_pathname_delete,),
)

# -- javascript (node, deno, bun) ----------------------------------------------------------
_JS_BINDING = re.compile(
    r"\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:await\s+)?(?:require|import)\s*\(|"
    r"\bimport\s+(?:\*\s+as\s+)?([A-Za-z_$][\w$]*)\s+from\b")


def _js_module_values(text: str) -> str:
    """A module object reached by a computed key or passed around escapes the search."""
    names = {m.group(1) or m.group(2) for m in _JS_BINDING.finditer(text)}
    names |= {"process", "global", "globalThis", "window", "self", "Deno", "Bun", "this"}
    pattern = re.compile(r"(?<![\w$.])(" + "|".join(re.escape(n) for n in sorted(names)) +
                         r")(?:\s*\[|\s*[,)]|(?=\s*;)|\s*$)", re.M)
    value = re.compile(r"[=(,:]\s*$")
    for count, match in enumerate(pattern.finditer(text)):
        if count == MAX_CALLS:
            return "javascript code uses modules in more ways than this analysis follows"
        before = text[max(0, match.start() - 200):match.start()]
        if text[match.end() - 1] == "[" or value.search(before):
            return f"javascript code uses the module {match.group(1)} as a value"
    return ""


JAVASCRIPT = Table(
    "javascript",
    unparseable=(
        ("runs a command", _any(r"\bDeno\s*\.\s*(?:Command|run|spawn\w*)\b",
                                r"\bBun\s*\.\s*(?:spawn\w*|openInEditor)\b",
                                r"\$\s*`")),
        ("evaluates a string", _words("eval", "Function", "constructor", "vm", "Worker",
                                      "worker_threads", "cluster", "Reflect", "wasi")),
        ("loads code", _any(r"\bimport\s*\(", r"\bcreateRequire\b", r"\bModule\b",
                            r"\bmodule\s*\.\s*(?!exports\b)\w",
                            r"\brequire(?!\s*\(\s*(?:'[\w@./:\-]{1,300}'|\"[\w@./:\-]{1,300}\"|`[\w@./:\-]{1,300}`)"
                            r"\s*\))",
                            r"\bfrom\s*['\"](?:https?|data|file):",
                            r"\bimport\s*['\"](?:https?|data|file):")),
        ("reaches the runtime's internals", r"\bprocess\s*\.\s*(?:binding|_linkedBinding|dlopen|"
                                            r"mainModule|getBuiltinModule|execve|_load)\b"),
        ("loads native code", _any(r"\bdlopen\b", r"\bffi\b", r"\bbun:ffi\b")),
        ("calls a computed member", _any(r"\]\s*\(", r"require\s*\([^)]{0,300}\)\s*\[",
                                         r"\]\s*:\s*[A-Za-z_$]")),
        ("deletes files", _any(_words("unlink", "unlinkSync", "rmSync", "rmdir", "rmdirSync",
                                      "rimraf", "removeSync", "emptyDir", "emptyDirSync",
                                      "deleteSync"),
                               r"(?:\.|[{,])\s*rm\b", r"['\"`]rm['\"`]",
                               r"\bDeno\s*\.\s*remove\w*")),
    ),
    spawns=r"\b(?:execSync|execFileSync|execFile|spawn|spawnSync|fork|exec)\b",
    spawn_guard=r"\bchild_process\b",
    literal_spawns="execSync",
    mentions=r"\s*[,}]",
    writes=_any(_words("writeFile", "writeFileSync", "appendFile", "appendFileSync",
                       "createWriteStream", "copyFile", "copyFileSync", "cpSync", "rename",
                       "renameSync", "truncate", "truncateSync", "mkdirSync", "mkdtemp",
                       "mkdtempSync", "symlink", "symlinkSync", "linkSync", "chmod", "chmodSync",
                       "lchmod", "chown", "chownSync", "utimes", "utimesSync", "outputFile",
                       "outputFileSync", "writeJson", "writeJsonSync", "moveSync",
                       "writeTextFile", "writeTextFileSync", "ensureFile", "ensureFileSync"),
                r"\bmkdir\s*\(", r"\blink\s*\(", r"\bcp\s*\(", r"\bBun\s*\.\s*write\b",
                r"\bDeno\s*\.\s*(?:create|createSync|makeTempFile\w*|copyFile\w*|link\w*)\b"),
    reads=_any(_words("readFile", "readFileSync", "createReadStream", "readdir", "readdirSync",
                      "readJson", "readJsonSync", "readlink", "readlinkSync", "readTextFile",
                      "readTextFileSync"),
               r"\bBun\s*\.\s*file\b"),
    opens=((r"\.\s*open(?:Sync)?\b", 0, 1),),
    network=_any(r"\bfetch\s*\(", r"\b(?:http|https)\s*\.\s*(?:get|request)\b",
                 r"\brequire\s*\(\s*['\"`](?:node:)?(?:https?|net|tls|dgram|http2)['\"`]",
                 r"\bnet\s*\.\s*(?:connect|createConnection)\b",
                 _words("WebSocket", "XMLHttpRequest", "axios", "undici", "EventSource"),
                 r"\bgot\s*\(", r"\bDeno\s*\.\s*connect\w*"),
    chdir=r"\bprocess\s*\.\s*chdir\b|\bDeno\s*\.\s*chdir\b",
    normalize=_decoded(_JOIN["js"]),
    checks=(_js_module_values,),
)

# -- php -------------------------------------------------------------------------------------
_PHP_CALLBACKS = {
    "array_map": 0, "call_user_func": 0, "call_user_func_array": 0, "forward_static_call": 0,
    "forward_static_call_array": 0, "register_shutdown_function": 0,
    "register_tick_function": 0, "set_error_handler": 0, "set_exception_handler": 0,
    "ob_start": 0, "spl_autoload_register": 0, "header_register_callback": 0,
    "array_filter": 1, "array_walk": 1, "array_walk_recursive": 1, "array_reduce": 1,
    "usort": 1, "uasort": 1, "uksort": 1, "iterator_apply": 1, "preg_replace_callback": 1,
    "array_diff_ukey": 2, "array_udiff": 2, "array_uintersect": 2,
}
_PHP_CALLBACK_CALL = re.compile(r"\b(" + "|".join(_PHP_CALLBACKS) + r")\b", re.I)
_PHP_CLOSURE = re.compile(r"\s*(?:static\s+)?(?:function|fn)\b|\s*(?:" + LITERAL + r")\s*$", re.I)


def _php_callbacks(text: str) -> str:
    """A callback given as a variable or built string is a call by a computed name."""
    lowered = text.lower()
    if not any(name in lowered for name in _PHP_CALLBACKS):
        return ""
    for count, match in enumerate(_PHP_CALLBACK_CALL.finditer(text)):
        if count == MAX_CALLS:
            return "php code passes more callbacks than this analysis follows"
        args = call_args(text, match.end())
        index = _PHP_CALLBACKS[match.group(1).lower()]
        if args is None or len(args) <= index or not _PHP_CLOSURE.match(args[index]):
            return f"php code {match.group(1)} with a callback computed at run time"
    return ""


PHP = Table(
    "php",
    unparseable=(
        ("runs a command in backticks", r"`"),
        ("runs a command", _words("popen", "proc_open", "pcntl_exec", "expect_popen",
                                  "ssh2_exec", "mail", "mb_send_mail", "imap_open", "putenv")),
        ("evaluates a string", _any(r"\beval\s*\(", _words("assert", "create_function",
                                                           "unserialize"))),
        ("calls a function by a computed name", _any(
            r"\$\w+\s*\(", r"\$\{", r"\$\$", r"\]\s*\(", r"\)\s*\(", r"['\"]\s*\(",
            r"->\s*[${]", r"::\s*\$", r"\bnew\s+\$",
            _words("ReflectionFunction", "ReflectionMethod", "ReflectionClass", "fromCallable"))),
        ("loads code", _any(r"\b(?:include|require|include_once|require_once)\b\s*\(?\s*"
                            r"(?!['\"][^'\"$:]{0,300}['\"])[^\s(]",
                            r"\b(?:include|require|include_once|require_once)\b\s*\(?\s*"
                            r"['\"][a-z]+://",
                            r"\b(?:expect|phar)://")),
        ("loads native code", _any(r"\bFFI\b", r"\bdl\s*\(")),
        ("deletes files", _words("unlink", "rmdir")),
    ),
    spawns=r"\b(?:system|exec|shell_exec|passthru)\b",
    writes=_words("file_put_contents", "rename", "copy", "touch", "mkdir", "symlink", "link",
                  "chmod", "chown", "chgrp", "tempnam", "move_uploaded_file", "lchown",
                  "lchgrp"),
    reads=_words("file_get_contents", "file", "readfile", "highlight_file", "show_source",
                 "parse_ini_file", "simplexml_load_file", "md5_file", "sha1_file", "hash_file",
                 "fgetcsv"),
    opens=((r"\b(?:fopen|SplFileObject)\b", 0, 1),),
    network=_any(_words("curl_init", "curl_exec", "fsockopen", "pfsockopen",
                        "stream_socket_client", "get_headers", "socket_connect"),
                 r"['\"]https?://"),
    chdir=r"\bchdir\b",
    flags=re.I,
    normalize=_decoded(_JOIN["dot"]),
    checks=(_php_callbacks,),
)

# -- lua -------------------------------------------------------------------------------------
LUA = Table(
    "lua",
    unparseable=(
        ("evaluates a string", _words("load", "loadstring", "loadfile", "dofile")),
        ("loads code", _any(r"\brequire\s*\(?\s*(?![\"'][\w.]{1,300}[\"'])[^\s(]",
                            r"\brequire\s*\(?\s*[\"'](?:ffi|os|io|debug|package)[\"']",
                            r"\bpackage\s*\.\s*(?:loadlib|loaded|preload|searchers|loaders|"
                            r"cpath|path)\b")),
        ("reaches the environment", _any(_words("_G", "_ENV", "getfenv", "setfenv", "rawget",
                                                "rawset", "ffi"),
                                         r"\bdebug\s*\.", r"\bstring\s*\.\s*dump\b",
                                         r"\b(?:os|io|debug|package|string)\s*\[",
                                         r"[=,({]\s*(?:os|io|debug|package)\s*(?:$|[;,)}\n])")),
        ("deletes files", r"\bos\s*\.\s*remove\b"),
    ),
    spawns=(r"\bos\s*\.\s*execute\b", r"\bio\s*\.\s*popen\b"),
    writes=_any(r"\bos\s*\.\s*rename\b", r"\bio\s*\.\s*output\s*\(\s*['\"]"),
    reads=_any(r"\bio\s*\.\s*(?:lines|input)\s*\(\s*['\"]"),
    opens=((r"\bio\s*\.\s*open\b", 0, 1),),
    network=_any(r"\bsocket\b", r"\bhttp\s*\.\s*request\b"),
    normalize=_decoded(_JOIN["lua"]),
)

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

TABLES = {table.language: table for table in (PERL, RUBY, JAVASCRIPT, PHP, LUA, APPLESCRIPT, R,
                                               JULIA)}
