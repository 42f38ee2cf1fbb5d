"""What the Python standard library calls do, by qualified name: the data behind python.py.

Names are qualified after imports are resolved (`from os import system as s` makes `s`
os.system); builtins are `builtins.NAME`. A module reached as an attribute of another module
(`shutil.os`, `tempfile._os`) is re-rooted at that module by MODULE_ATTRS.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

SHELL_CALLS = frozenset({
    "os.system", "os.popen", "os.popen2", "os.popen3", "os.popen4", "platform.popen",
    "subprocess.getoutput", "subprocess.getstatusoutput", "commands.getoutput",
    "commands.getstatusoutput", "popen2.popen2", "popen2.popen3", "popen2.popen4",
    "asyncio.create_subprocess_shell",
})
"""The first argument is a shell string."""

SUBPROCESS_CALLS = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen",
})


@dataclass(frozen=True)
class Exec:
    program: int
    """Index of the program argument."""
    argv: int
    """Index of the argv list, or of the first of the separate arguments."""
    listed: bool
    """argv is one list (execv) rather than separate arguments (execl)."""
    skip_arg0: bool = True
    env_last: bool = False
    """The last positional argument is the environment (execle, spawnlpe)."""
    env_at: int | None = None


EXEC_CALLS: dict[str, Exec] = {
    "os.execv": Exec(0, 1, True), "os.execve": Exec(0, 1, True, env_at=2),
    "os.execvp": Exec(0, 1, True), "os.execvpe": Exec(0, 1, True, env_at=2),
    "os.execl": Exec(0, 1, False), "os.execle": Exec(0, 1, False, env_last=True),
    "os.execlp": Exec(0, 1, False), "os.execlpe": Exec(0, 1, False, env_last=True),
    "os.spawnv": Exec(1, 2, True), "os.spawnve": Exec(1, 2, True, env_at=3),
    "os.spawnvp": Exec(1, 2, True), "os.spawnvpe": Exec(1, 2, True, env_at=3),
    "os.spawnl": Exec(1, 2, False), "os.spawnle": Exec(1, 2, False, env_last=True),
    "os.spawnlp": Exec(1, 2, False), "os.spawnlpe": Exec(1, 2, False, env_last=True),
    "os.posix_spawn": Exec(0, 1, True, env_at=2), "os.posix_spawnp": Exec(0, 1, True, env_at=2),
    "asyncio.create_subprocess_exec": Exec(0, 1, False, skip_arg0=False),
}


@dataclass(frozen=True)
class FileOp:
    command: tuple[str, ...]
    """The equivalent command; the path arguments follow `--`."""
    paths: tuple[int, ...]
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    default_last: str | None = None
    """Value of the last path when the call leaves it out (unpack_archive extracts to '.')."""


_RM = FileOp(("rm",), (0,), writes=(0,))
_MV = FileOp(("mv",), (0, 1), writes=(0, 1))
_CP = FileOp(("cp",), (0, 1), reads=(0,), writes=(1,))
FILE_CALLS: dict[str, FileOp] = {
    "os.remove": _RM, "os.unlink": _RM,
    "os.rmdir": FileOp(("rmdir",), (0,), writes=(0,)),
    "os.removedirs": FileOp(("rmdir", "-p"), (0,), writes=(0,)),
    "shutil.rmtree": FileOp(("rm", "-r", "-f"), (0,), writes=(0,)),
    "os.rename": _MV, "os.replace": _MV, "os.renames": _MV, "shutil.move": _MV,
    "shutil.copy": _CP, "shutil.copy2": _CP, "shutil.copyfile": _CP,
    "shutil.copytree": FileOp(("cp", "-r"), (0, 1), reads=(0,), writes=(1,)),
    "shutil.copymode": FileOp((), (0, 1), reads=(0,), writes=(1,)),
    "shutil.copystat": FileOp((), (0, 1), reads=(0,), writes=(1,)),
    "os.mkdir": FileOp(("mkdir",), (0,), writes=(0,)),
    "os.makedirs": FileOp(("mkdir", "-p"), (0,), writes=(0,)),
    "os.symlink": FileOp(("ln", "-s"), (0, 1), writes=(1,)),
    "os.link": FileOp(("ln",), (0, 1), writes=(1,)),
    "os.truncate": FileOp(("truncate",), (0,), writes=(0,)),
    "os.utime": FileOp(("touch",), (0,), writes=(0,)),
    "os.mkfifo": FileOp(("mkfifo",), (0,), writes=(0,)),
    "os.mknod": FileOp(("mknod",), (0,), writes=(0,)),
    "os.chown": FileOp(("chown",), (0,), writes=(0,)),
    "os.lchown": FileOp(("chown",), (0,), writes=(0,)),
    "shutil.chown": FileOp(("chown",), (0,), writes=(0,)),
    "shutil.unpack_archive": FileOp((), (0, 1), reads=(0,), writes=(1,), default_last="."),
    "linecache.getline": FileOp((), (0,), reads=(0,)),
    "linecache.getlines": FileOp((), (0,), reads=(0,)),
}
CHMOD_CALLS = frozenset({"os.chmod", "os.lchmod"})


@dataclass(frozen=True)
class Opener:
    path: int
    path_kw: str
    mode: int | None
    mode_kw: str
    default: str


OPEN_CALLS: dict[str, Opener] = {
    "builtins.open": Opener(0, "file", 1, "mode", "r"),
    "io.open": Opener(0, "file", 1, "mode", "r"),
    "io.FileIO": Opener(0, "file", 1, "mode", "r"),
    "codecs.open": Opener(0, "filename", 1, "mode", "r"),
    "gzip.open": Opener(0, "filename", 1, "mode", "rb"),
    "gzip.GzipFile": Opener(0, "filename", 1, "mode", "rb"),
    "bz2.open": Opener(0, "filename", 1, "mode", "rb"),
    "bz2.BZ2File": Opener(0, "filename", 1, "mode", "r"),
    "lzma.open": Opener(0, "filename", 1, "mode", "rb"),
    "lzma.LZMAFile": Opener(0, "filename", 1, "mode", "r"),
    "tarfile.open": Opener(0, "name", 1, "mode", "r"),
    "tarfile.TarFile": Opener(0, "name", 1, "mode", "r"),
    "zipfile.ZipFile": Opener(0, "file", 1, "mode", "r"),
    "dbm.open": Opener(0, "file", 1, "flag", "r"),
    "sqlite3.connect": Opener(0, "database", None, "", "rw"),
    "fileinput.input": Opener(0, "files", None, "", "r"),
    "fileinput.FileInput": Opener(0, "files", None, "", "r"),
    "wave.open": Opener(0, "f", 1, "mode", "rb"),
    "mailbox.mbox": Opener(0, "path", None, "", "rw"),
}

PATH_TYPES = frozenset({"pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath",
                        "pathlib.PurePosixPath", "pathlib.WindowsPath", "zipfile.Path"})
"""Constructors whose value is a path: their methods below act on it."""


@dataclass(frozen=True)
class PathMethod:
    command: tuple[str, ...] = ()
    read: bool = False
    write: bool = False
    target: bool = False
    """The first argument is a second path (rename, copy): written too."""


PATH_METHODS: dict[str, PathMethod] = {
    "unlink": PathMethod(("rm",), write=True),
    "rmdir": PathMethod(("rmdir",), write=True),
    "rmtree": PathMethod(("rm", "-r", "-f"), write=True),
    "write_text": PathMethod(write=True), "write_bytes": PathMethod(write=True),
    "read_text": PathMethod(read=True), "read_bytes": PathMethod(read=True),
    "touch": PathMethod(("touch",), write=True), "mkdir": PathMethod(("mkdir",), write=True),
    "symlink_to": PathMethod(write=True), "hardlink_to": PathMethod(write=True),
    "chmod": PathMethod(("chmod",), write=True), "lchmod": PathMethod(("chmod",), write=True),
    "rename": PathMethod(("mv",), write=True, target=True),
    "replace": PathMethod(("mv",), write=True, target=True),
    "move": PathMethod(("mv",), write=True, target=True),
    "move_into": PathMethod(("mv",), write=True, target=True),
    "copy": PathMethod(("cp", "-r"), read=True, target=True),
    "copy_into": PathMethod(("cp", "-r"), read=True, target=True),
    "link_to": PathMethod(target=True),
}
"""Methods that act on files, matched on any receiver: a receiver that is not a known path
gives a path computed at run time. rename/replace/move need exactly one argument (str.replace
takes two)."""

NETWORK_CALLS: dict[str, int | None] = {
    "urllib.request.urlopen": 0, "urllib.request.urlretrieve": 0, "urllib.request.Request": 0,
    "urllib2.urlopen": 0, "urllib.urlopen": 0, "urllib.urlretrieve": 0,
    "http.client.HTTPConnection": 0, "http.client.HTTPSConnection": 0,
    "requests.get": 0, "requests.post": 0, "requests.put": 0, "requests.patch": 0,
    "requests.delete": 0, "requests.head": 0, "requests.options": 0, "requests.request": 1,
    "requests.Session": None, "httpx.get": 0, "httpx.post": 0, "httpx.put": 0,
    "httpx.patch": 0, "httpx.delete": 0, "httpx.head": 0, "httpx.request": 1,
    "httpx.stream": 1, "httpx.Client": None, "httpx.AsyncClient": None,
    "urllib3.request": 1, "urllib3.PoolManager": None, "aiohttp.ClientSession": None,
    "ftplib.FTP": 0, "ftplib.FTP_TLS": 0, "smtplib.SMTP": 0, "smtplib.SMTP_SSL": 0,
    "telnetlib.Telnet": 0, "poplib.POP3": 0, "imaplib.IMAP4": 0, "imaplib.IMAP4_SSL": 0,
    "xmlrpc.client.ServerProxy": 0, "socket.create_connection": 0, "socket.socket": None,
    "asyncio.open_connection": 0, "websockets.connect": 0,
}
"""Calls that reach the network: the URL (or host) argument index, None when unknown. They
are reported as `curl URL`, so that rules on curl and on domains apply to them."""

CHDIR_CALLS = frozenset({"os.chdir", "os.fchdir", "contextlib.chdir"})
PUTENV_CALLS = frozenset({"os.putenv"})
ENVIRON = frozenset({"os.environ", "os.environb"})
ENVIRON_METHODS = frozenset({"get", "copy", "keys", "items", "values", "pop", "popitem",
                             "clear", "update", "setdefault"})
DESCRIPTOR_CALLS = frozenset({"os.dup", "os.dup2", "os.pipe", "os.pipe2", "os.openpty",
                              "os.forkpty", "os.login_tty", "pty.fork"})
"""Descriptor plumbing: with it, what the programs the code starts read on stdin is unknown."""

INHERITED_STDIN = frozenset({"subprocess.DEVNULL", "sys.stdin", "asyncio.subprocess.DEVNULL"})
STATIC_VALUES = {"sys.executable": "python3", "os.curdir": ".", "os.sep": "/",
                 "os.path.sep": "/"}

REFLECTIVE_MODULES = frozenset({
    "importlib", "imp", "ctypes", "_ctypes", "cffi", "runpy", "code", "codeop", "inspect",
    "pydoc", "pkgutil", "site", "zipimport", "dill", "cloudpickle", "jsonpickle", "webbrowser",
    "distutils", "setuptools", "_posixsubprocess", "_winapi", "_subprocess", "sh", "plumbum",
    "pexpect", "ptyprocess", "sarge", "invoke", "fabric", "envoy", "delegator", "paramiko",
    "pwn", "pwnlib", "IPython", "__main__", "timeit", "cProfile", "profile", "pdb", "bdb",
    "trace", "doctest", "logging.config", "unittest.mock", "mock", "copyreg", "_pickle",
    "cPickle", "multiprocessing.reduction", "xmlrpc.server", "pickletools", "ensurepip",
})
"""Importing or naming these is unparseable: they load, call or evaluate code by name."""

REFLECTIVE_NAMES = frozenset({
    "builtins.__import__", "builtins.globals", "builtins.locals", "builtins.vars",
    "builtins.breakpoint", "builtins.help", "builtins.get_ipython", "builtins.license",
    "sys.modules", "sys._getframe", "sys.meta_path", "sys.path_hooks",
    "sys.path_importer_cache", "gc.get_objects", "gc.get_referents",
    "gc.get_referrers", "types.FunctionType", "types.CodeType", "types.LambdaType",
    "types.MethodType", "typing.get_type_hints", "pickle.load", "pickle.loads",
    "pickle.Unpickler", "marshal.load", "marshal.loads", "shelve.open", "shelve.Shelf",
    "yaml.load", "yaml.load_all", "yaml.unsafe_load", "yaml.unsafe_load_all", "yaml.full_load",
    "yaml.full_load_all", "joblib.load", "operator.attrgetter", "operator.methodcaller",
    "os.startfile", "os.chroot", "os.fexecve",
})
"""Builtins and attributes that reach code, frames or objects by name."""

PY2_ONLY_REFLECTIVE = frozenset({"builtins.input", "builtins.execfile", "builtins.reload",
                                 "builtins.file"})

CODE_BUILTINS = frozenset({"builtins.exec", "builtins.eval", "builtins.compile"})
ATTR_BUILTINS = frozenset({"builtins.getattr", "builtins.setattr", "builtins.delattr",
                           "builtins.hasattr"})

MODULE_ATTRS = {
    "os": "os", "_os": "os", "posix": "os", "nt": "os", "_posix": "os", "sys": "sys",
    "_sys": "sys", "subprocess": "subprocess", "_subprocess": "subprocess",
    "shutil": "shutil", "_shutil": "shutil", "pty": "pty", "builtins": "builtins",
    "bltns": "builtins", "__builtin__": "builtins", "_builtin_open": "builtins.open",
    "bltn_open": "builtins.open", "_fork_exec": "_posixsubprocess.fork_exec",
    "_posixsubprocess": "_posixsubprocess", "importlib": "importlib", "ctypes": "ctypes",
    "pathlib": "pathlib", "io": "io", "_io": "io", "codecs": "codecs",
}
"""Attribute names under which stdlib modules expose these modules (shutil.os, tempfile._os)."""

MODULE_CANON = {"posix": "os", "nt": "os", "_io": "io", "__builtin__": "builtins",
                "posixpath": "os.path", "ntpath": "os.path", "_socket": "socket"}

PROCESS_NAMES = frozenset({
    "system", "popen", "popen2", "popen3", "popen4", "spawnl", "spawnle", "spawnlp",
    "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "execl", "execle", "execlp",
    "execlpe", "execv", "execve", "execvp", "execvpe", "fexecve", "posix_spawn", "posix_spawnp",
    "Popen", "check_output", "check_call", "getoutput", "getstatusoutput", "fork_exec",
    "_fork_exec", "create_subprocess_shell", "create_subprocess_exec", "subprocess_shell",
    "subprocess_exec", "startfile", "import_module", "exec_module", "load_module", "run_path",
    "run_module", "__import__",
})
"""Attribute names that start programs or load code whatever object they hang on: calling
them on an object this analysis cannot identify is unparseable."""
NOT_PROCESSES = frozenset({"platform.system"})

SAFE_DUNDERS = frozenset({
    "__name__", "__doc__", "__version__", "__file__", "__qualname__", "__module__",
    "__class__", "__init__", "__len__", "__str__", "__repr__", "__all__", "__annotations__",
    "__enter__", "__exit__", "__aenter__", "__aexit__", "__iter__", "__next__", "__contains__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__",
    "__getitem__", "__add__", "__sub__", "__mul__", "__slots__", "__post_init__", "__new__",
    "__path__", "__debug__", "__format__", "__dataclass_fields__", "__match_args__",
})
FRAME_ATTRS = frozenset({
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code",
    "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame", "tb_next", "co_code",
    "co_consts", "func_globals", "func_code", "im_func", "im_self",
})
BAD_NAMES = frozenset({"__builtins__", "__loader__", "__spec__", "__import__"})

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish",
                    "csh", "tcsh", "yash", "posh"})

BUILTIN_NAMES = frozenset({
    *dir(builtins), "execfile", "reload", "file", "raw_input", "unicode", "get_ipython",
})

KNOWN = frozenset({
    *SHELL_CALLS, *SUBPROCESS_CALLS, *EXEC_CALLS, *FILE_CALLS, *CHMOD_CALLS, *OPEN_CALLS,
    *PATH_TYPES, *NETWORK_CALLS, *CHDIR_CALLS, *PUTENV_CALLS, *ENVIRON, *DESCRIPTOR_CALLS,
    *REFLECTIVE_NAMES, *CODE_BUILTINS, *ATTR_BUILTINS, "pty.spawn",
})
"""Every qualified name some rule above is about."""

SENSITIVE_MODULES = frozenset({name.rpartition(".")[0] for name in KNOWN if "." in name})
"""Modules that must not be used as values (`o = os; o.remove(...)` escapes the tables)."""
