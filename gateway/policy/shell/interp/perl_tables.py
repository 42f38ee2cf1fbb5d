"""What Perl's builtins and common modules do, by function name: the data behind perl.py.

Names are looked up without their package (`CORE::unlink`, `POSIX::remove` and an imported
`remove` are the same entry); a module's functions are listed whether or not the program
imports them, since `-M` and `use` make them plain names.
"""

from __future__ import annotations

from gateway.policy.shell.interp import collect as c

_ALL = (-1,)

FUNCTIONS: dict[str, str | c.FileOp] = {
    "system": "spawn", "exec": "spawn", "readpipe": "script", "open": "open",
    "sysopen": "sysopen", "unlink": c.FileOp(("rm",), _ALL, writes=(0,)),
    "remove": c.FileOp(("rm",), _ALL, writes=(0,)),
    "rmdir": c.FileOp(("rmdir",), _ALL, writes=(0,)), "rename": c.MV, "link": c.LN,
    "symlink": c.LN_S, "mkdir": c.MKDIR, "chmod": c.FileOp(("chmod",), (1,), writes=(0,)),
    "chown": c.FileOp(("chown",), (2,), writes=(0,)),
    "utime": c.FileOp(("touch",), (2,), writes=(0,)), "truncate": c.TRUNCATE,
    "mkfifo": c.FileOp(("mkfifo",), writes=(0,)),
    # File::Path, File::Copy, File::Remove, File::Slurp, Path::Tiny
    "rmtree": c.FileOp(("rm", "-r", "-f"), _ALL, writes=(0,)),
    "remove_tree": c.FileOp(("rm", "-r", "-f"), _ALL, writes=(0,)),
    "mkpath": c.FileOp(("mkdir", "-p"), _ALL, writes=(0,)),
    "make_path": c.FileOp(("mkdir", "-p"), _ALL, writes=(0,)),
    "copy": c.CP, "cp": c.CP, "move": c.MV, "mv": c.MV, "read_file": c.READ,
    "slurp": c.READ, "read_text": c.READ, "write_file": c.WRITE, "append_file": c.WRITE,
    "write_text": c.WRITE, "overwrite_file": c.WRITE, "edit_file": c.WRITE,
    "chdir": "chdir", "dup2": "plumbing",
    "syscall": "fail:makes a raw system call", "dump": "harmless",
    "eval": "fail:evaluates a string", "require": "require", "do": "fail:runs a file",
}
"""Calls by name; FileOps are the equivalent command (unlink is `rm -- LIST`)."""

BY_VALUE = frozenset({
    *FUNCTIONS, "print", "say", "printf", "sprintf", "join", "length", "uc", "lc", "ucfirst",
    "lcfirst", "index", "rindex", "substr", "defined", "ref", "die", "warn",
    "exists", "quotemeta", "hex", "oct", "abs", "int", "sqrt", "ord", "chr", "reverse",
    "scalar", "keys", "values", "split", "time", "localtime", "gmtime", "sleep",
    "exit", "pack", "unpack", "crypt", "glob", "stat", "lstat", "return",
})
"""Builtins that do not change their arguments; a scalar passed to any other sub may be
changed through @_, so it is no longer a known value."""

SENSITIVE_MODULES = {
    "IPC": "runs commands", "Proc": "runs commands", "Capture::Tiny": "runs commands",
    "Expect": "runs commands", "Shell": "runs commands", "Net::SSH": "runs commands over ssh",
    "Net::SSH2": "runs commands over ssh", "Net::OpenSSH": "runs commands over ssh",
    "System::Command": "runs commands", "Sys::Run": "runs commands",
    "DynaLoader": "loads native code", "XSLoader": "loads native code",
    "Inline": "loads native code", "FFI": "loads native code", "B": "reaches the compiler",
    "Safe": "evaluates code", "Filter": "rewrites its own source", "Opcode": "evaluates code",
    "PadWalker": "reaches variables by name", "Devel::Peek": "reaches the interpreter",
    "File::Temp": "", "UNIVERSAL": "calls methods by name", "Symbol": "reaches the symbol table",
    "Sub::Util": "names subs at run time", "Class::Inspector": "", "AnyEvent::Util":
    "runs commands", "Mojo::IOLoop::Subprocess": "runs commands", "Parallel::ForkManager": "",
    "Win32": "runs commands", "Data::Dumper": "", "Storable": "loads objects",
    "YAML": "loads objects", "CGI": "", "re": "lets regexes built at run time run code",
}
"""Modules (and namespaces: IPC covers IPC::Run, IPC::Open3) that make the program
unparseable when used or loaded ('' entries are harmless)."""
SENSITIVE_MODULES = {name: why for name, why in SENSITIVE_MODULES.items() if why}

NETWORK_MODULES = ("LWP", "HTTP::Tiny", "IO::Socket", "Socket", "Mojo::UserAgent", "Net",
                   "WWW::Mechanize", "Furl", "HTTP::Request", "REST::Client")
"""Modules (and namespaces) that reach the network: `curl` of an address this analysis does
not know."""

SIGNAL_VALUES = frozenset({"IGNORE", "DEFAULT", ""})
