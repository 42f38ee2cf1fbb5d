"""What Ruby's classes and Kernel methods do, by name: the data behind ruby.py.

Operations are FileOps (the equivalent command) or names ruby.py models:

    spawn     Kernel#system / exec / spawn: one string is a shell string, more an argv
    popen     IO.popen / Open3.popen*: like spawn, the code may write to the child's stdin
    capture   Open3.capture*: like spawn, `stdin_data:` is fed to it
    open      a path and a mode (File.open, File.new)
    ioread    IO.read and kin: a path beginning with `|` runs a command
    iowrite   IO.write and kin: likewise, for writing
    network   reaches the address in the first argument (`curl URL`)
    chdir     relative paths are no longer known
    harmless  nothing this analysis cares about
    fail:WHY  unparseable

Arguments of FileUtils methods may be arrays of paths; `paths=(-1,)` reads every argument.
"""

from __future__ import annotations

from gateway.policy.shell.interp import collect as c

Op = str | c.FileOp

_ALL = (-1,)

KERNEL: dict[str, Op] = {
    "system": "spawn", "exec": "spawn", "spawn": "spawn", "`": "backtick", "open": "kopen",
    "eval": "fail:evaluates a string", "instance_eval": "eval", "class_eval": "eval",
    "module_eval": "eval", "binding": "fail:reaches the caller's binding",
    "irb": "fail:starts an interactive session", "load": "fail:loads a file as code",
    "autoload": "fail:loads a file as code", "syscall": "fail:makes a raw system call",
    "set_trace_func": "fail:installs a trace hook", "trap": "trap", "require": "require",
    "require_relative": "require_relative", "method": "fail:takes a method by name",
    "public_method": "fail:takes a method by name", "singleton_method":
    "fail:takes a method by name", "instance_method": "fail:takes a method by name",
    "define_method": "fail:defines a method by name", "define_singleton_method":
    "fail:defines a method by name", "const_get": "fail:reaches a constant by name",
    "const_set": "fail:sets a constant by name", "constantize": "fail:reaches a constant by name",
    "safe_constantize": "fail:reaches a constant by name", "instance_variable_get":
    "fail:reads a variable by name", "instance_variable_set": "fail:sets a variable by name",
    "class_variable_get": "fail:reads a variable by name", "class_variable_set":
    "fail:sets a variable by name", "alias_method": "fail:aliases a method by name",
    "remove_method": "fail:removes a method by name", "undef_method":
    "fail:removes a method by name", "local_variable_set": "fail:sets a variable by name",
    "pry": "fail:starts an interactive session", "debugger": "fail:starts a debugger",
    "popen": "fail:starts a process", "sh": "fail:runs a shell command",
    "fork": "harmless", "exit!": "harmless",
}
"""Kernel methods (called bare, on self, on Kernel or through `send`)."""

ANY_RECEIVER = frozenset({
    "system", "exec", "spawn", "`", "syscall", "eval", "instance_eval", "class_eval",
    "module_eval", "method", "public_method", "singleton_method", "instance_method",
    "define_method", "define_singleton_method", "const_get", "const_set", "constantize",
    "safe_constantize", "instance_variable_get", "instance_variable_set",
    "class_variable_get", "class_variable_set", "alias_method", "remove_method",
    "undef_method", "local_variable_set", "binding", "irb", "pry", "popen", "load",
    "require", "trap",
})
"""Methods that matter on whatever object they are called (`obj.send(...)`, `o.instance_eval
"..."`); on an object this analysis cannot identify they are read as Kernel's."""

SENSITIVE_SYMBOLS = frozenset({*KERNEL, *ANY_RECEIVER} - {"fork", "exit!", "require",
                                                        "require_relative", "open"})
"""Method names that must not be passed around as symbols (`&:system`, `:system.to_proc`)."""

FILE: dict[str, Op] = {
    "delete": c.FileOp(("rm",), _ALL, writes=(0,)), "unlink": c.FileOp(("rm",), _ALL, writes=(0,)),
    "write": c.WRITE, "binwrite": c.WRITE, "read": c.READ, "readlines": c.READ,
    "foreach": c.READ, "binread": c.READ, "open": "open", "new": "open", "rename": c.MV,
    "symlink": c.LN_S, "link": c.LN, "chmod": c.FileOp(("chmod",), (1,), writes=(0,)),
    "lchmod": c.FileOp(("chmod",), (1,), writes=(0,)),
    "chown": c.FileOp(("chown",), (2,), writes=(0,)),
    "lchown": c.FileOp(("chown",), (2,), writes=(0,)), "truncate": c.TRUNCATE,
    "utime": c.FileOp(("touch",), (2,), writes=(0,)), "mkfifo": c.FileOp(("mkfifo",),
                                                                          writes=(0,)),
    **{name: "harmless" for name in (
        "exist?", "exists?", "file?", "directory?", "basename", "dirname", "extname", "join",
        "expand_path", "absolute_path", "absolute_path?", "size", "size?", "mtime", "atime",
        "ctime", "birthtime", "stat", "lstat", "readable?", "writable?", "executable?",
        "executable_real?", "symlink?", "zero?", "empty?", "split", "ftype", "fnmatch",
        "fnmatch?", "realpath", "realdirpath", "identical?", "path", "readlink", "owned?",
        "pipe?", "socket?", "blockdev?", "chardev?", "grpowned?", "setuid?", "setgid?",
        "sticky?", "world_readable?", "world_writable?")},
}
DIR: dict[str, Op] = {
    "delete": c.RMDIR, "unlink": c.RMDIR, "rmdir": c.RMDIR, "mkdir": c.MKDIR, "chdir": "chdir",
    **{name: "harmless" for name in (
        "glob", "[]", "entries", "children", "each_child", "foreach", "exist?", "exists?",
        "pwd", "getwd", "home", "empty?", "tmpdir", "mktmpdir", "new", "open")},
}
FILEUTILS: dict[str, Op] = {
    "rm": c.FileOp(("rm",), _ALL, writes=(0,)), "remove": c.FileOp(("rm",), _ALL, writes=(0,)),
    "rm_f": c.FileOp(("rm", "-f"), _ALL, writes=(0,)),
    "safe_unlink": c.FileOp(("rm", "-f"), _ALL, writes=(0,)),
    "rm_r": c.FileOp(("rm", "-r"), _ALL, writes=(0,)),
    **{name: c.FileOp(("rm", "-r", "-f"), _ALL, writes=(0,)) for name in (
        "rm_rf", "rmtree", "remove_dir", "remove_entry", "remove_entry_secure")},
    "rmdir": c.FileOp(("rmdir",), _ALL, writes=(0,)), "mv": c.MV, "move": c.MV, "cp": c.CP,
    "copy": c.CP, "copy_file": c.CP, "install": c.CP, "cp_r": c.CP_R, "copy_entry": c.CP_R,
    "cp_lr": c.CP_R, "ln": c.LN, "link": c.LN, "ln_s": c.LN_S, "symlink": c.LN_S,
    "ln_sf": c.LN_S, "ln_sr": c.LN_S, "mkdir": c.FileOp(("mkdir",), _ALL, writes=(0,)),
    **{name: c.FileOp(("mkdir", "-p"), _ALL, writes=(0,)) for name in (
        "mkdir_p", "makedirs", "mkpath")},
    "touch": c.FileOp(("touch",), _ALL, writes=(0,)),
    "chmod": c.FileOp(("chmod",), (1,), writes=(0,)),
    "chmod_R": c.FileOp(("chmod", "-R"), (1,), writes=(0,)),
    "chown": c.FileOp(("chown",), (2,), writes=(0,)),
    "chown_R": c.FileOp(("chown", "-R"), (2,), writes=(0,)), "cd": "chdir", "chdir": "chdir",
    **{name: "harmless" for name in (
        "pwd", "compare_file", "identical?", "cmp", "uptodate?", "copy_stream")},
}
IO: dict[str, Op] = {
    "popen": "popen", "read": "ioread", "readlines": "ioread", "foreach": "ioread",
    "binread": "ioread", "write": "iowrite", "binwrite": "iowrite",
    "copy_stream": c.FileOp((), (0, 1), reads=(0,), writes=(1,)),
    "sysopen": "fail:opens a file descriptor", "for_fd": "fail:opens a file descriptor",
    "new": "fail:opens a file descriptor", "open": "fail:opens a file descriptor",
    "pipe": "harmless", "select": "harmless", "console": "harmless",
}
OPEN3: dict[str, Op] = {
    "capture2": "capture", "capture2e": "capture", "capture3": "capture", "popen3": "popen",
    "popen2": "popen", "popen2e": "popen", "pipeline": "fail:runs a pipeline of commands",
    "pipeline_r": "fail:runs a pipeline of commands", "pipeline_w":
    "fail:runs a pipeline of commands", "pipeline_rw": "fail:runs a pipeline of commands",
    "pipeline_start": "fail:runs a pipeline of commands",
}
PROCESS: dict[str, Op] = {"spawn": "spawn", "exec": "spawn"}
"""Every other Process method is harmless (pid, wait, clock_gettime, kill, ...)."""
PATHNAME: dict[str, Op] = {
    "read": c.READ, "readlines": c.READ, "binread": c.READ, "each_line": c.READ,
    "write": c.WRITE, "binwrite": c.WRITE, "delete": c.RM, "unlink": c.RM, "rmtree": c.RM_RF,
    "rmdir": c.RMDIR, "rename": c.MV, "mkdir": c.MKDIR, "mkpath": c.MKDIR_P,
    "make_symlink": c.FileOp(("ln", "-s"), (1, 0), writes=(1,)),
    "make_link": c.FileOp(("ln",), (1, 0), writes=(1,)), "open": "open", "truncate": c.TRUNCATE,
    "chmod": c.CHMOD, "chown": c.CHOWN, "utime": c.TOUCH,
    **{name: "harmless" for name in (
        "exist?", "file?", "directory?", "basename", "dirname", "extname", "to_s", "to_path",
        "size", "mtime", "readable?", "writable?", "executable?", "symlink?", "empty?",
        "zero?", "absolute?", "relative?", "stat", "lstat", "inspect", "hash", "==")},
}
YAML: dict[str, Op] = {"load_file": c.READ, "safe_load_file": c.READ, "unsafe_load_file":
                       "fail:loads objects", "load": "fail:loads objects", "unsafe_load":
                       "fail:loads objects", "load_stream": "fail:loads objects",
                       "dump": "harmless", "safe_load": "harmless", "parse": "harmless"}

CLASSES: dict[str, dict[str, Op]] = {
    "Kernel": KERNEL, "File": FILE, "Dir": DIR, "FileUtils": FILEUTILS, "IO": IO,
    "Open3": OPEN3, "Process": PROCESS, "YAML": YAML, "Psych": YAML,
    "FileUtils::Verbose": FILEUTILS, "FileUtils::NoWrite": {}, "FileUtils::DryRun": {},
}
"""Constants whose methods are looked up here; a method not listed is unparseable, except on
Process (and the dry-run FileUtils), where it is harmless."""
LENIENT = frozenset({"Process", "FileUtils::NoWrite", "FileUtils::DryRun"})

FAIL_CONSTANTS = {
    "PTY": "starts a process in a pty", "ObjectSpace": "reaches every object",
    "Marshal": "loads objects", "Fiddle": "loads native code", "FFI": "loads native code",
    "DL": "loads native code", "RubyVM": "reaches the VM", "TracePoint": "installs a trace hook",
    "Binding": "reaches a binding", "ERB": "evaluates a template", "IRB": "starts IRB",
    "DRb": "reaches remote objects", "DRbObject": "reaches remote objects",
    "Shell": "runs commands", "Rake": "runs commands", "Net::SSH": "runs commands over ssh",
    "Net::SCP": "copies files over ssh", "Pry": "starts a debugger", "PP": "",
    "Ractor": "", "Gem::Installer": "installs code", "Bundler": "installs code",
}
FAIL_CONSTANTS = {name: why for name, why in FAIL_CONSTANTS.items() if why}

NETWORK_CONSTANTS = frozenset({
    "Net::HTTP", "Net::FTP", "Net::SMTP", "Net::POP3", "Net::IMAP", "Net::Telnet",
    "TCPSocket", "UDPSocket", "Socket", "SOCKSSocket", "OpenSSL::SSL::SSLSocket", "HTTParty",
    "Faraday", "RestClient", "Excon", "HTTPClient", "HTTP", "Typhoeus", "Mechanize",
    "OpenURI", "Resolv",
})
"""Any call on these reaches the network: `curl ADDRESS` (its first argument if a string)."""

HARMLESS_CONSTANTS = frozenset({
    "String", "Array", "Hash", "Set", "Struct", "OpenStruct", "Time", "Date", "DateTime",
    "Regexp", "Range", "Rational", "Complex", "Integer", "Float", "Numeric", "Object", "Class",
    "Module", "Comparable", "Enumerable", "Enumerator", "JSON", "Math", "Proc", "Method",
    "Thread", "Mutex", "Queue", "SizedQueue", "ConditionVariable", "StringIO", "Random",
    "Exception", "StandardError", "RuntimeError", "ArgumentError", "TypeError", "NameError",
    "NoMethodError", "KeyError", "IndexError", "StopIteration", "Errno", "Encoding",
    "Base64", "Digest", "SecureRandom", "Benchmark", "Shellwords", "OptionParser", "Prime",
    "BigDecimal", "Matrix", "Vector", "Etc", "Symbol", "NilClass", "TrueClass",
    "FalseClass", "Fiber", "Ractor", "Data", "ObjectSpace::WeakMap", "CSV::Row", "CGI",
    "ERB::Util", "Zlib", "PP", "Timeout", "Singleton", "Forwardable", "Observable",
    "Gem::Version", "RbConfig", "ARGV", "ARGF", "STDOUT", "STDERR", "STDIN", "RUBY_VERSION",
    "RUBY_PLATFORM", "RUBY_ENGINE", "Warning", "GC", "Signal", "Kernel::Float",
    "Float::INFINITY", "Float::NAN", "Integer::MAX", "JSON::ParserError", "Time::DATE_FORMATS",
    "File::SEPARATOR", "File::ALT_SEPARATOR", "File::PATH_SEPARATOR", "File::NULL",
    "IO::SEEK_SET", "Process::CLOCK_MONOTONIC", "Process::CLOCK_REALTIME", "Tempfile", "Find",
})
"""Constants that are not looked up as files: the rest (a gem's class, `CSV`, `Logger`)
are read by the generic rule for unknown classes: `X.open/new/read/write("path", mode)`."""
GENERIC_READS = frozenset({"read", "readlines", "foreach", "load_file", "parse_file", "open",
                           "new", "table", "binread", "each_line"})
GENERIC_WRITES = frozenset({"write", "binwrite", "dump_file", "generate", "open", "new"})

SPAWN_OPTIONS_IGNORED = frozenset({"exception", "unsetenv_others", "pgroup", "new_pgroup",
                                   "umask", "close_others", "rlimit_core", "rlimit_cpu",
                                   "rlimit_nofile", "rlimit_as"})
