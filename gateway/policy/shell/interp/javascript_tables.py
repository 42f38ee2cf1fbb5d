"""What JavaScript modules and globals do (node, deno, bun): the data behind javascript.py.

Each module maps its members to what a call does: a FileOp (the equivalent command), or one of
the operations javascript.py models by name:

    exec      a shell string (arg 0), options (arg 1)
    execFile  a program (arg 0), its arguments (arg 1), options (arg 2)
    spawn     like execFile; `shell: true` makes it a shell string
    fork      `node MODULE ARGS...`
    open      a path (arg 0) opened with flags (arg 1)
    rm, rmdir, mkdir, cp, mkdtemp   file operations whose options decide the command
    network   reaches the address in arg 0 (`curl URL`)
    chdir     changes the directory relative paths are resolved against
    harmless  a call with no effect this analysis cares about
    value     a harmless value (a constant, a property), used or called
    module:X  the member is module X (fs.promises)
    fail:WHY  unparseable

A member a sensitive module's table does not list is unparseable; modules not named here at
all are harmless (path, os, util, ...), except the third-party ones listed below.
"""

from __future__ import annotations

from gateway.policy.shell.interp import collect as c

Op = str | c.FileOp

_FS_SHARED: dict[str, Op] = {
    "readFile": c.READ, "writeFile": c.WRITE, "appendFile": c.WRITE, "open": "open",
    "rm": "rm", "unlink": c.RM, "rmdir": "rmdir", "rename": c.MV, "copyFile": c.CP,
    "cp": "cp", "mkdir": "mkdir", "mkdtemp": "mkdtemp", "symlink": c.LN_S, "link": c.LN,
    "chmod": c.CHMOD, "lchmod": c.CHMOD, "chown": c.CHOWN, "lchown": c.CHOWN,
    "truncate": c.TRUNCATE, "utimes": c.TOUCH, "lutimes": c.TOUCH, "access": "harmless",
    "stat": "harmless", "lstat": "harmless", "statfs": "harmless", "readdir": "harmless",
    "opendir": "harmless", "readlink": "harmless", "realpath": "harmless",
    "glob": "harmless", "watch": "harmless", "constants": "value", "exists": "harmless",
}
FS: dict[str, Op] = {
    **_FS_SHARED, **{f"{name}Sync": op for name, op in _FS_SHARED.items() if op != "value"},
    "createReadStream": c.READ, "createWriteStream": c.WRITE, "openAsBlob": c.READ,
    "watchFile": "harmless", "unwatchFile": "harmless", "promises": "module:fs/promises",
    "close": "harmless", "closeSync": "harmless", "read": "harmless", "readSync": "harmless",
    "write": "harmless", "writeSync": "harmless", "fsync": "harmless", "fsyncSync": "harmless",
    "fdatasync": "harmless", "fdatasyncSync": "harmless", "fstat": "harmless",
    "fstatSync": "harmless", "ftruncate": "harmless", "ftruncateSync": "harmless",
    "readv": "harmless", "readvSync": "harmless", "writev": "harmless",
    "writevSync": "harmless", "F_OK": "value", "R_OK": "value", "W_OK": "value",
    "X_OK": "value", "Dirent": "value", "Stats": "value", "ReadStream": c.READ,
    "WriteStream": c.WRITE, "FileReadStream": c.READ, "FileWriteStream": c.WRITE,
    "realpathSync": "harmless",
}
FS_PROMISES: dict[str, Op] = {**_FS_SHARED}
FS_EXTRA: dict[str, Op] = {
    **FS, "remove": c.RM_RF, "removeSync": c.RM_RF, "emptyDir": c.RM_RF,
    "emptyDirSync": c.RM_RF, "emptydir": c.RM_RF, "copy": c.CP_R, "copySync": c.CP_R,
    "move": c.MV, "moveSync": c.MV, "outputFile": c.WRITE, "outputFileSync": c.WRITE,
    "outputJson": c.WRITE, "outputJsonSync": c.WRITE, "writeJson": c.WRITE,
    "writeJsonSync": c.WRITE, "readJson": c.READ, "readJsonSync": c.READ,
    "ensureFile": c.WRITE, "ensureFileSync": c.WRITE, "ensureDir": c.MKDIR_P,
    "ensureDirSync": c.MKDIR_P, "mkdirs": c.MKDIR_P, "mkdirsSync": c.MKDIR_P,
    "mkdirp": c.MKDIR_P, "mkdirpSync": c.MKDIR_P, "pathExists": "harmless",
    "pathExistsSync": "harmless", "ensureLink": c.LN, "ensureSymlink": c.LN_S,
}
CHILD_PROCESS: dict[str, Op] = {
    "exec": "exec", "execSync": "exec", "execFile": "execFile", "execFileSync": "execFile",
    "spawn": "spawn", "spawnSync": "spawn", "fork": "fork",
    "ChildProcess": "fail:starts processes through ChildProcess#spawn",
}
SYNC_SPAWNS = frozenset({"execSync", "execFileSync", "spawnSync"})
"""The calls that return only when the child has ended: the code cannot write to its stdin
except through the `input` option."""

PROCESS: dict[str, Op] = {
    **{name: "value" for name in (
        "argv", "argv0", "env", "exitCode", "platform", "arch", "version", "versions", "pid",
        "ppid", "title", "release", "config", "features", "stdout", "stderr", "stdin",
        "execPath", "execArgv", "allowedNodeEnvironmentFlags", "debugPort",
        "permission", "sourceMapsEnabled", "throwDeprecation", "noDeprecation",
        "traceDeprecation", "connected")},
    **{name: "harmless" for name in (
        "exit", "cwd", "hrtime", "memoryUsage", "uptime", "nextTick", "on", "once", "off",
        "emit", "emitWarning", "umask", "cpuUsage", "resourceUsage", "getuid", "geteuid",
        "getgid", "getegid", "getgroups", "kill", "abort", "addListener", "removeListener",
        "removeAllListeners", "listeners", "listenerCount", "setUncaughtExceptionCaptureCallback",
        "hasUncaughtExceptionCaptureCallback", "constrainedMemory", "availableMemory",
        "getActiveResourcesInfo", "send", "disconnect", "setMaxListeners", "prependListener")},
    "chdir": "chdir", "getBuiltinModule": "require", "loadEnvFile": c.READ,
    "binding": "fail:reaches the runtime's internals",
    "_linkedBinding": "fail:reaches the runtime's internals", "dlopen": "fail:loads native code",
    "mainModule": "fail:reaches the main module's require",
    "report": "fail:writes diagnostic reports to files",
    "execve": "fail:replaces itself with another program",
    "setuid": "harmless", "setgid": "harmless", "seteuid": "harmless", "setegid": "harmless",
    "setgroups": "harmless", "initgroups": "harmless", "_getActiveHandles": "harmless",
    "_getActiveRequests": "harmless", "_rawDebug": "harmless", "_exiting": "value",
    "moduleLoadList": "value", "_events": "fail:reaches the runtime's internals",
}

DENO: dict[str, Op] = {
    **{name: "value" for name in (
        "args", "env", "pid", "ppid", "version", "build", "stdin", "stdout", "stderr",
        "errors", "noColor", "mainModule", "execPath", "permissions", "SeekMode", "Signal",
        "FsFile", "exitCode")},
    **{name: "harmless" for name in (
        "exit", "cwd", "inspect", "memoryUsage", "osRelease", "osUptime", "hostname",
        "loadavg", "systemMemoryInfo", "networkInterfaces", "gid", "uid", "stat", "statSync",
        "lstat", "lstatSync", "realPath", "realPathSync", "readLink", "readLinkSync", "readDir",
        "readDirSync", "makeTempDir", "makeTempDirSync", "makeTempFile", "makeTempFileSync",
        "watchFs", "addSignalListener", "removeSignalListener", "refTimer", "unrefTimer",
        "consoleSize", "isatty", "bench", "test", "umask", "kill", "cron")},
    "readTextFile": c.READ, "readTextFileSync": c.READ, "readFile": c.READ,
    "readFileSync": c.READ, "writeTextFile": c.WRITE, "writeTextFileSync": c.WRITE,
    "writeFile": c.WRITE, "writeFileSync": c.WRITE, "remove": "rm", "removeSync": "rm",
    "mkdir": "mkdir", "mkdirSync": "mkdir", "rename": c.MV, "renameSync": c.MV,
    "copyFile": c.CP, "copyFileSync": c.CP, "symlink": c.LN_S, "symlinkSync": c.LN_S,
    "link": c.LN, "linkSync": c.LN, "chmod": c.CHMOD, "chmodSync": c.CHMOD, "chown": c.CHOWN,
    "chownSync": c.CHOWN, "truncate": c.TRUNCATE, "truncateSync": c.TRUNCATE,
    "utime": c.TOUCH, "utimeSync": c.TOUCH, "open": "open", "openSync": "open",
    "create": c.WRITE, "createSync": c.WRITE, "chdir": "chdir", "connect": "network",
    "connectTls": "network", "startTls": "network", "resolveDns": "network",
    "listen": "harmless", "listenTls": "harmless", "serve": "harmless",
    "Command": "fail:starts a process with Deno.Command", "run": "fail:starts a process",
    "dlopen": "fail:loads native code", "core": "fail:reaches the runtime's internals",
    "internal": "fail:reaches the runtime's internals",
}
BUN: dict[str, Op] = {
    **{name: "value" for name in (
        "argv", "env", "version", "revision", "main", "stdin", "stdout", "stderr", "isMainThread",
        "embeddedFiles", "CryptoHasher", "Glob", "Transpiler", "semver", "TOML", "YAML",
        "color", "enableANSIColors")},
    **{name: "harmless" for name in (
        "sleep", "sleepSync", "nanoseconds", "hash", "inspect", "which", "escapeHTML",
        "deepEquals", "peek", "gzipSync", "gunzipSync", "deflateSync", "inflateSync",
        "readableStreamToText", "readableStreamToJSON", "readableStreamToArrayBuffer",
        "readableStreamToBytes", "readableStreamToBlob", "stringWidth", "fileURLToPath",
        "pathToFileURL", "randomUUIDv7", "password", "serve", "listen", "gc", "resolveSync",
        "resolve", "generateHeapSnapshot", "shrink", "indexOfLine", "mmap", "build",
        "stripANSI", "zstdCompressSync", "zstdDecompressSync")},
    "file": "bunfile", "write": c.WRITE, "connect": "network", "udpSocket": "network",
    "spawn": "fail:starts a process with Bun.spawn",
    "spawnSync": "fail:starts a process with Bun.spawnSync",
    "$": "fail:runs a shell command with Bun.$", "openInEditor": "fail:starts an editor",
    "plugin": "fail:loads code", "dlopen": "fail:loads native code",
}

NETWORK_MODULES = frozenset({
    "http", "https", "http2", "net", "tls", "dgram", "dns", "dns/promises", "axios", "got",
    "node-fetch", "undici", "request", "superagent", "ws", "socket.io-client", "needle",
    "phin", "ky", "cross-fetch", "isomorphic-fetch", "ftp", "basic-ftp", "nodemailer",
})
"""Any call on these reaches the network: `curl ADDRESS`, with arg 0 when it is a string."""
NETWORK_HARMLESS = frozenset({"createServer", "STATUS_CODES", "METHODS", "Agent",
                              "globalAgent", "isIP", "isIPv4", "isIPv6", "Server",
                              "validateHeaderName", "validateHeaderValue", "maxHeaderSize"})

CODE_MODULES = {
    "vm": "evaluates code", "worker_threads": "runs code in workers",
    "cluster": "forks processes", "module": "loads modules by name",
    "inspector": "opens the inspector",
    "repl": "starts a REPL", "wasi": "runs WebAssembly", "v8": "reaches the engine's internals",
    "trace_events": "reaches the runtime's internals", "sqlite": "opens a database",
    "shelljs": "runs commands through shelljs", "execa": "runs commands through execa",
    "cross-spawn": "runs commands", "zx": "runs commands through zx", "node-pty": "starts a pty",
    "rimraf": "deletes files", "del": "deletes files", "ssh2": "runs commands over ssh",
    "node-ssh": "runs commands over ssh", "open": "opens files or URLs with other programs",
    "opn": "opens files or URLs with other programs", "child-process-promise": "runs commands",
    "puppeteer": "starts a browser", "playwright": "starts a browser", "bun:ffi":
    "loads native code", "ffi-napi": "loads native code", "bun:sqlite": "opens a database",
    "better-sqlite3": "opens a database", "sqlite3": "opens a database", "simple-git":
    "runs git", "tmp": "writes files", "archiver": "writes archives", "tar": "writes archives",
    "adm-zip": "writes archives", "extract-zip": "writes archives", "unzipper": "writes archives",
    "glob": "", "bun": "reaches Bun's runtime",
}
"""Modules whose use makes the program unparseable, with why ('' entries: harmless)."""
CODE_MODULES = {name: why for name, why in CODE_MODULES.items() if why}

MODULES: dict[str, dict[str, Op]] = {
    "fs": FS, "fs/promises": FS_PROMISES, "fs-extra": FS_EXTRA, "graceful-fs": FS,
    "mz/fs": FS, "child_process": CHILD_PROCESS, "process": PROCESS, "Deno": DENO, "Bun": BUN,
}
"""Modules and runtime objects whose every member is looked up in a table."""

GLOBALS: dict[str, str] = {
    "process": "module:process", "Deno": "module:Deno", "Bun": "module:Bun",
    "require": "require", "globalThis": "global", "global": "global", "window": "global",
    "self": "global", "frames": "global", "parent": "global", "top": "global",
    "module": "cjsmodule", "eval": "fail:evaluates a string", "Function":
    "fail:makes a function from a string", "Reflect": "fail:uses reflection",
    "WebAssembly": "fail:runs WebAssembly", "Worker": "fail:runs code in a worker",
    "SharedWorker": "fail:runs code in a worker", "importScripts": "fail:loads code",
    "fetch": "network", "XMLHttpRequest": "network", "WebSocket": "network",
    "EventSource": "network", "navigator": "network", "setTimeout": "timer",
    "setInterval": "timer", "setImmediate": "timer",
}
"""Global names that reach modules, code or the network."""

DANGEROUS_PROPERTIES = {
    "constructor": "reaches a constructor (Function)", "__proto__": "reaches a prototype",
    "__defineGetter__": "defines a getter by name", "__defineSetter__": "defines a setter by name",
    "__lookupGetter__": "looks up a getter by name", "__lookupSetter__":
    "looks up a setter by name", "caller": "reaches a calling function", "callee":
    "reaches the calling function", "getPrototypeOf": "reaches a prototype",
    "setPrototypeOf": "changes a prototype", "getOwnPropertyDescriptor": "uses reflection",
    "getOwnPropertyDescriptors": "uses reflection", "mainModule": "reaches the main module",
    "binding": "reaches the runtime's internals", "_linkedBinding":
    "reaches the runtime's internals", "getBuiltinModule": "loads a module by name",
    "_load": "loads a module by name", "require": "loads a module through another object",
    "process": "reaches process through another object", "dlopen": "loads native code",
    "execve": "replaces itself with another program", "_resolveFilename":
    "reaches the module loader", "createRequire": "makes a require function",
}
"""Property names that reach code or the runtime on whatever object they are read from."""

SPAWN_OPTIONS = frozenset({"encoding", "timeout", "maxBuffer", "windowsHide", "killSignal",
                           "detached", "signal", "stdio", "cwd", "env", "input", "shell",
                           "argv0", "uid", "gid", "windowsVerbatimArguments"})
"""Options of child_process calls this analysis reads or can ignore; others are unparseable."""
