"""What PHP's functions and classes do, by lower-case name: the data behind php.py."""

from __future__ import annotations

from gateway.policy.shell.interp import collect as c

SCRIPTS = frozenset({"system", "exec", "shell_exec", "passthru"})
"""The first argument is a shell string (run by /bin/sh -c)."""

FAIL = {
    "proc_open": "starts a process with proc_open", "expect_popen": "starts a process",
    "ssh2_exec": "runs a command over ssh", "mail": "sends mail through sendmail",
    "mb_send_mail": "sends mail through sendmail", "imap_open": "opens an IMAP mailbox",
    "imap_mail": "sends mail", "eval": "evaluates a string", "assert": "evaluates a string",
    "create_function": "evaluates a string", "unserialize": "unserializes objects",
    "call_user_func": "calls a function by name", "call_user_func_array":
    "calls a function by name", "forward_static_call": "calls a function by name",
    "forward_static_call_array": "calls a function by name", "dl": "loads native code",
    "extract": "sets variables by name", "parse_str": "sets variables by name",
    "mb_parse_str": "sets variables by name", "get_defined_vars": "reaches variables by name",
    "apache_setenv": "changes the environment", "ini_set": "changes PHP settings",
    "ini_alter": "changes PHP settings", "stream_wrapper_register": "registers a stream wrapper",
    "stream_wrapper_restore": "registers a stream wrapper", "ffi_cdef": "loads native code",
    "pcntl_exec": "", "popen": "", "putenv": "",
}
"""Calls that make the program unparseable, with why ('' entries are modelled in php.py)."""
FAIL = {name: why for name, why in FAIL.items() if why}

FILES: dict[str, c.FileOp] = {
    "unlink": c.RM, "rmdir": c.RMDIR, "rename": c.MV, "copy": c.CP, "move_uploaded_file": c.MV,
    "mkdir": c.MKDIR, "touch": c.TOUCH, "symlink": c.LN_S, "link": c.LN, "chmod": c.CHMOD,
    "lchmod": c.CHMOD, "chown": c.CHOWN, "lchown": c.CHOWN, "chgrp": c.CHOWN,
    "lchgrp": c.CHOWN, "posix_mkfifo": c.FileOp(("mkfifo",), writes=(0,)),
    "file_put_contents": c.WRITE, "file_get_contents": c.READ, "file": c.READ,
    "readfile": c.READ, "highlight_file": c.READ, "show_source": c.READ,
    "php_strip_whitespace": c.READ, "parse_ini_file": c.READ, "simplexml_load_file": c.READ,
    "md5_file": c.READ, "sha1_file": c.READ, "gzfile": c.READ, "readgzfile": c.READ,
    "hash_file": c.FileOp((), (1,), reads=(0,)), "get_meta_tags": c.READ,
    "exif_read_data": c.READ, "getimagesize": c.READ, "yaml_parse_file": c.READ,
    "mime_content_type": c.READ, "zip_open": c.READ,
}
"""Calls on files, as the command that does the same (unlink is `rm -- path`)."""

OPENS = {"fopen": (0, 1, "r"), "gzopen": (0, 1, "r"), "bzopen": (0, 1, "r"),
         "dio_open": (0, None, ""), "tempnam": (0, None, "dir"), "opendir": (0, None, "list"),
         "scandir": (0, None, "list"), "dir": (0, None, "list"), "glob": (0, None, "list")}
"""name -> (path argument, mode argument, default mode): mode "" is read and write, "dir"
creates a file in the directory, "list" only lists names (nothing is opened)."""

NETWORK = {"curl_init": 0, "fsockopen": 0, "pfsockopen": 0, "stream_socket_client": 0,
           "get_headers": 0, "socket_connect": 1, "curl_setopt": None, "curl_exec": None,
           "curl_multi_exec": None, "ftp_connect": 0, "ftp_ssl_connect": 0, "ssh2_connect": 0,
           "ldap_connect": 0, "imap_open": 0, "mysqli_connect": 0, "pg_connect": 0,
           "socket_sendto": 4, "stream_socket_server": None, "socket_create": None}
"""name -> argument holding the address (None: found elsewhere, the call itself reaches out
or will), reported as `curl ADDRESS`."""
NETWORK_BY_HANDLE = frozenset({"curl_setopt", "curl_exec", "curl_multi_exec"})
"""Calls on a handle made earlier: curl_init already reported the address when it had one."""

CALLBACKS = {
    "array_map": 0, "register_shutdown_function": 0, "set_error_handler": 0,
    "set_exception_handler": 0, "ob_start": 0, "spl_autoload_register": 0,
    "header_register_callback": 0, "preg_replace_callback_array": 0, "is_callable": None,
    "iterator_apply": 1, "array_filter": 1, "array_walk": 1, "array_walk_recursive": 1,
    "array_reduce": 1, "usort": 1, "uasort": 1, "uksort": 1, "preg_replace_callback": 1,
    "mb_ereg_replace_callback": 1, "array_find": 1, "array_find_key": 1, "array_any": 1,
    "array_all": 1, "session_set_save_handler": 0, "xml_set_element_handler": 1,
    "xml_set_character_data_handler": 1, "xml_set_default_handler": 1,
    "stream_filter_register": None, "sapi_windows_set_ctrl_handler": 0,
    "pcntl_signal": 1, "array_diff_ukey": -1, "array_diff_uassoc": -1, "array_udiff": -1,
    "array_udiff_assoc": -1, "array_udiff_uassoc": -1, "array_uintersect": -1,
    "array_uintersect_assoc": -1, "array_uintersect_uassoc": -1,
    "array_intersect_ukey": -1, "array_intersect_uassoc": -1,
}
"""name -> the argument that is a callback (-1: the last); None: it only names one."""

BY_VALUE = frozenset({
    "chdir", "echo", "print_r",
    "var_dump", "var_export", "strlen", "trim", "rtrim", "ltrim", "json_encode",
    "json_decode", "implode", "join", "explode", "str_replace", "sprintf", "printf",
    "in_array", "count", "intval", "strval", "floatval", "strtoupper", "strtolower",
    "ucfirst", "lcfirst", "ucwords", "substr", "strpos", "str_contains", "str_starts_with",
    "str_ends_with", "str_repeat", "str_pad", "htmlspecialchars", "urlencode",
    "rawurlencode", "base64_encode", "base64_decode", "md5", "sha1", "hash", "crc32",
    "number_format", "round", "floor", "ceil", "abs", "max", "min", "array_keys",
    "array_values", "array_merge", "array_slice", "array_unique", "array_flip",
    "array_reverse", "array_sum", "array_column", "array_combine", "range", "is_array",
    "is_string", "is_int", "is_numeric", "is_null", "isset", "empty", "gettype",
    "file_exists", "is_file", "is_dir", "basename", "dirname", "pathinfo", "realpath",
    "date", "strtotime", "mktime", "escapeshellarg", "escapeshellcmd", "serialize",
    "nl2br", "wordwrap", "strrev", "str_split", "mb_strlen", "mb_substr", "addslashes",
    "stripslashes", "array_key_exists", "key_exists", "print", "getenv",
})
"""Functions that take every argument by value: a variable passed to any other call may be
set by it (`preg_match($re, $s, $m)`, `exec($c, $out)`), so it is no longer a known value.
The arguments php.py reads from the calls in the tables above (commands, paths, addresses)
are by value too."""

CLASSES_FAIL = {
    "closure": "makes a closure from a name", "ffi": "loads native code",
    "phar": "opens a phar archive", "phardata": "opens a phar archive",
    "pharfileinfo": "opens a phar archive", "ziparchive": "extracts or writes archives",
    "pdo": "opens a database", "com": "reaches COM objects", "dotnet": "reaches .NET",
    "variant": "reaches COM objects", "reflectionclass": "uses reflection",
    "reflectionfunction": "uses reflection", "reflectionmethod": "uses reflection",
    "reflectionobject": "uses reflection", "reflectionproperty": "uses reflection",
    "reflectionnamedtype": "uses reflection", "reflectionenum": "uses reflection",
    "reflection": "uses reflection", "simplexmlelement": "", "splfileobject": "",
    "splfileinfo": "", "sqlite3": "", "soapclient": "", "mysqli": "", "xsltprocessor":
    "runs XSLT, which may call PHP functions", "yaf_application": "loads code",
}
"""Classes whose objects start processes, load code or reach files in ways not modelled here;
'' entries are modelled in php.py."""

FILE_METHODS = {"asxml": "write", "savexml": "write", "save": "write", "savehtmlfile": "write",
                "extractto": "write", "openuri": "write", "openfile": "open", "fopen": "open",
                "load": "read", "loadhtmlfile": "read", "xinclude": "read",
                "schemavalidate": "read", "relaxngvalidate": "read", "copy": "write",
                "move": "write"}
"""Methods that act on a path given as their first argument, on whatever object; a method
named like this on an object this analysis cannot identify is read as acting on files."""
CODE_METHODS = frozenset({"invoke", "invokeargs", "newinstance", "newinstanceargs",
                          "newinstancewithoutconstructor", "fromcallable",
                          "getclosure", "registerphpfunctions", "setaccessible",
                          "__invoke", "exec", "query", "createfunction", "loadextension"})
"""Methods that call code by name or run statements of another language (SQLite3::exec,
PDO::query, XSLTProcessor::registerPHPFunctions, Reflection*::invoke)."""

WRAPPERS_SAFE = frozenset({"php://stdin", "php://stdout", "php://stderr", "php://memory",
                           "php://temp", "php://input", "php://output"})
"""Stream names that are not files."""
