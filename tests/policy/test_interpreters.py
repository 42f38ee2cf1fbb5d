"""Interpreter one-liners: attack programs come out flagged, benign ones stay clean.

An attack is flagged when the analysis says it is unparseable, or names the harm: a command or
script containing the target, or a write of it. Where the interpreter is installed, attacks
also run for real against a temp directory, to show the harm is real.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.policy.shell import interp
from gateway.policy.shell.interp import (
    INTERPRETERS,
    CodeEffects,
    InlineCode,
    analyse_code,
    inline_code,
    language_of,
)
from gateway.policy.shell.words import Word


def invoke(cmdline: str, stdin: str | None = None) -> tuple[InlineCode | None, CodeEffects]:
    """inline_code, then analyse_code on the program text (argv or stdin), as the scanner will."""
    argv = shlex.split(cmdline)
    code = inline_code(argv[0], [Word(a) for a in argv[1:]])
    if code is None:
        return None, CodeEffects()
    text = code.source if code.source is not None else (stdin if code.from_stdin else None)
    effects = analyse_code(code.language, text) if text is not None else CodeEffects()
    return code, effects


def texts(effects: CodeEffects) -> list[str]:
    return [*effects.scripts, *(" ".join(w.text for w in c) for c in effects.commands)]


def flagged(effects: CodeEffects, target: str) -> bool:
    return bool(effects.unparseable) or any(target in t for t in texts(effects)) or any(
        target in w.text or w.dynamic for w in effects.writes)


def clean(effects: CodeEffects) -> bool:
    return not effects.unparseable and not effects.commands and not effects.scripts


# -- the public surface ----------------------------------------------------------------------
def test_public_names_resolve() -> None:
    for name in interp.__all__:
        assert getattr(interp, name) is not None, name


def test_every_language_has_an_analysis_or_says_it_has_none() -> None:
    for program, language in INTERPRETERS.items():
        effects = analyse_code(language, "x")
        assert "internal error" not in effects.unparseable, (program, effects)
        if language in interp.OPAQUE_LANGUAGES:
            assert effects.unparseable == f"{language} code is not analysed"


@pytest.mark.parametrize(("program", "language"), [
    ("python", "python"), ("python3", "python"), ("python3.12", "python"),
    ("/usr/bin/python3.11", "python"), ("pypy3.10", "python"), ("python2.7", "python2"),
    ("perl5.36.0", "perl"), ("ruby3.2", "ruby"), ("node18", "javascript"),
    ("nodejs", "javascript"), ("deno", "javascript"), ("bun", "javascript"), ("php8.2", "php"),
    ("lua5.4", "lua"), ("luajit-2.1.0-beta3", "lua"), ("osascript", "applescript"),
    ("Rscript", "r"), ("julia", "julia"), ("tclsh8.6", "tcl"), ("pwsh", "powershell"),
])
def test_interpreter_names(program: str, language: str) -> None:
    assert language_of(program) == language


@pytest.mark.parametrize("program", ["rm", "python3-config", "pythonx", "nodemon", "perldoc",
                                     "php-fpm", "luarocks", "rubocop"])
def test_other_programs_are_not_interpreters(program: str) -> None:
    assert language_of(program) is None
    assert inline_code(program, [Word("-e"), Word("x")]) is None


# -- where the program comes from ------------------------------------------------------------
INVOCATIONS = [
    # (command line, source, from_stdin, script, args)
    ("python3 -c 'print(1)'", "print(1)", False, None, []),
    ("python3 -Bc 'print(1)' a -v", "print(1)", False, None, ["a", "-v"]),
    ("python3 -cprint(1)", "print(1)", False, None, []),
    ("python3 -W error -X dev -c 'x'", "x", False, None, []),
    ("python3 -Werror -c 'x'", "x", False, None, []),
    ("python3 -E -s -I -u -c x", "x", False, None, []),
    ("python3 --check-hash-based-pycs always -c x", "x", False, None, []),
    ("python3", None, True, None, []),
    ("python3 -", None, True, None, []),
    ("python3 - a b", None, True, None, ["a", "b"]),
    ("python3 -u -", None, True, None, []),
    ("python3 -i -c 'x'", "x", True, None, []),
    ("python3 foo.py a b", None, False, "foo.py", ["a", "b"]),
    ("python3 -- -c", None, False, "-c", []),
    ("python3 -m timeit -s 'import os' 'os.getcwd()'", "import os\nos.getcwd()", False, None, []),
    ("perl -e 'print 1'", "print 1", False, None, []),
    ("perl -le 'print 1' -w", "print 1", False, None, []),
    ("perl -Mstrict -le 'print 1'", "use strict;\nprint 1", False, None, []),
    ("perl -lne 'print if /x/' f", "print if /x/", False, None, ["f"]),
    ("perl -e 'print 1' -e 'print 2'", "print 1\nprint 2", False, None, []),
    ("perl -E 'say 1'", "say 1", False, None, []),
    ("perl -0777 -ne 'print'", "print", False, None, []),
    ("perl -CSD -wle 'print 1'", "print 1", False, None, []),
    ("perl -pie 's/a/b/' f", None, False, "s/a/b/", ["f"]),  # -i takes "e" as its suffix
    ("perl", None, True, None, []),
    ("perl - a", None, True, None, ["a"]),
    ("perl script.pl a", None, False, "script.pl", ["a"]),
    ("perl -d -e 1", "1", True, None, []),  # the debugger reads commands from stdin
    ("ruby -e 'puts 1'", "puts 1", False, None, []),
    ("ruby -ne 'puts $_' f", "puts $_", False, None, ["f"]),
    ("ruby -W0 -e 'puts 1'", "puts 1", False, None, []),
    ("ruby", None, True, None, []),
    ("ruby x.rb a", None, False, "x.rb", ["a"]),
    ("irb", None, True, None, []),
    ("node -e 'console.log(1)'", "console.log(1)", False, None, []),
    ("node --eval 'console.log(1)' a", "console.log(1)", False, None, ["a"]),
    ("node -p '1+1'", "1+1", False, None, []),
    ("node -pe '1+1'", "1+1", False, None, []),
    ("node --print '1+1'", "1+1", False, None, []),
    ("node --input-type module -e 'x'", "x", False, None, []),
    ("node --no-warnings --max-old-space-size=100 x.js", None, False, "x.js", []),
    ("node", None, True, None, []),
    ("node -", None, True, None, []),
    ("node -i", None, True, None, []),
    ("node x.js a", None, False, "x.js", ["a"]),
    ("nodejs -e 'x'", "x", False, None, []),
    ("deno eval 'console.log(1)'", "console.log(1)", False, None, []),
    ("deno eval -p '1+1'", "1+1", False, None, []),
    ("deno run -A x.ts a", None, False, "x.ts", ["a"]),
    ("deno run --allow-read=. x.ts", None, False, "x.ts", []),
    ("deno x.ts", None, False, "x.ts", []),
    ("deno", None, True, None, []),
    ("deno repl", None, True, None, []),
    ("bun -e 'console.log(1)'", "console.log(1)", False, None, []),
    ("bun --print '1+1'", "1+1", False, None, []),
    ("bun run x.ts", None, False, "x.ts", []),
    ("bun ./x.js", None, False, "./x.js", []),
    ("bun repl", None, True, None, []),
    ("php -r 'echo 1;'", "echo 1;", False, None, []),
    ("php -nr 'echo 1;'", "echo 1;", False, None, []),
    ("php -R 'echo $argn;'", "echo $argn;", False, None, []),
    ("php", None, True, None, []),
    ("php x.php a", None, False, "x.php", ["a"]),
    ("php -f x.php", None, False, "x.php", []),
    ("lua -e 'print(1)'", "print(1)", False, None, []),
    ("lua -e'print(1)'", "print(1)", False, None, []),
    ("lua -e 'a=1' -e 'print(a)'", "a=1\nprint(a)", False, None, []),
    ("lua", None, True, None, []),
    ("lua -", None, True, None, []),
    ("lua x.lua", None, False, "x.lua", []),
    ("luajit -O3 -e 'print(1)'", "print(1)", False, None, []),
    ("osascript -e 'display notification \"a\"' -e 'beep'",
     'display notification "a"\nbeep', False, None, []),
    ("osascript -l JavaScript -e 'x'", "x", False, None, []),
    ("osascript", None, True, None, []),
    ("osascript x.scpt", None, False, "x.scpt", []),
    ("Rscript -e 'print(1)'", "print(1)", False, None, []),
    ("Rscript x.R", None, False, "x.R", []),
    ("R -e 'print(1)'", "print(1)", False, None, []),
    ("R --vanilla", None, True, None, []),
    ("julia -e 'println(1)'", "println(1)", False, None, []),
    ("julia --threads 4 -e 'println(1)'", "println(1)", False, None, []),
    ("julia -O3 -E '1+1'", "1+1", False, None, []),
    ("tclsh", None, True, None, []),
    ("tclsh x.tcl", None, False, "x.tcl", []),
    ("expect -c 'spawn ls'", "-c spawn ls", False, None, []),
    ("pwsh -NoProfile -Command 'Get-Date'", "-Command Get-Date", False, None, []),
]


@pytest.mark.parametrize(("cmdline", "source", "stdin", "script", "args"), INVOCATIONS)
def test_where_the_program_comes_from(cmdline: str, source: str | None, stdin: bool,
                                      script: str | None, args: list[str]) -> None:
    argv = shlex.split(cmdline)
    code = inline_code(argv[0], [Word(a) for a in argv[1:]])
    assert code is not None and not code.unparseable, code
    assert code.source == source
    assert code.from_stdin is stdin
    assert (code.script_path.text if code.script_path else None) == script
    assert [w.text for w in code.args] == args


@pytest.mark.parametrize("cmdline", [
    "python3 --version", "python3 -V", "python3 -h", "python3 --help-all", "perl -v",
    "ruby --version", "node --version", "node -h", "node --run build", "node --test",
    "deno fmt", "deno task build", "deno test", "deno install", "deno --version", "bun install",
    "bun run build", "bun test", "bun add left-pad", "bun x cowsay", "php -v", "php -l x.php",
    "php -S localhost:8000", "lua -v", "luajit -b in.lua out.o", "Rscript --version",
    "R CMD INSTALL pkg", "tclsh -version",
])
def test_invocations_that_run_no_program_of_their_own(cmdline: str) -> None:
    argv = shlex.split(cmdline)
    assert inline_code(argv[0], [Word(a) for a in argv[1:]]) is None


def test_a_module_is_decided_by_name() -> None:
    code, effects = invoke("python3 -m pip install requests")
    assert code is not None and code.module == Word("pip")
    assert code.source is None and not code.from_stdin and code.script_path is None
    assert [w.text for w in code.args] == ["install", "requests"]
    assert clean(effects)


def test_modules_that_run_code_from_their_arguments() -> None:
    _, effects = invoke("python3 -m timeit -s 'import os' 'os.system(\"rm -rf victim\")'")
    assert effects.scripts == ("rm -rf victim",)
    for cmdline in ("python3 -m pdb -c continue x.py", "python3 -m cProfile x.py",
                    "python3 -m trace --trace x.py", "python3 -m runpy x"):
        argv = shlex.split(cmdline)
        code = inline_code(argv[0], [Word(a) for a in argv[1:]])
        assert code is not None and "runs code" in code.unparseable, cmdline
    code, _ = invoke("python3 -m code")
    assert code is not None and code.from_stdin
    code, _ = invoke("python3 -m zipfile -e archive.zip .claude")
    assert code is not None and [w.text for w in code.writes] == [".claude"]


def test_options_that_load_code() -> None:
    cases = {
        "node -r ./evil.js -e 1": ["./evil.js"], "node --require=./evil.js x.js": ["./evil.js"],
        "node --import ./hook.mjs x.js": ["./hook.mjs"], "node --loader ./l.mjs x.js": ["./l.mjs"],
        "node --env-file .env x.js": [".env"], "perl -Mstrict -MPOSIX=floor -e 1": [
            "strict", "POSIX"],
        "perl -d:NYTProf -e 1": ["Devel::NYTProf"], "ruby -rjson -e 1": ["json"],
        "lua -l socket -e 1": ["socket"], "bun --preload ./p.ts x.ts": ["./p.ts"],
        "php -d auto_prepend_file=evil.php -r 1": ["evil.php"], "php -c evil.ini x.php": [
            "evil.ini"],
        "php -z evil.so x.php": ["evil.so"], "deno run --preload ./p.ts x.ts": ["./p.ts"],
    }
    for cmdline, loads in cases.items():
        argv = shlex.split(cmdline)
        code = inline_code(argv[0], [Word(a) for a in argv[1:]])
        assert code is not None and [w.text for w in code.loads] == loads, cmdline


def test_modules_loaded_by_options_are_searched_too() -> None:
    _, effects = invoke("perl -MIPC::Run=run -e 'run [qw(rm -rf victim)]'")
    assert "runs commands" in effects.unparseable


def test_option_values_that_are_code_are_program_text() -> None:
    _, effects = invoke("perl '-Mstrict;unlink q(victim)' -e 1")
    assert texts(effects) == ["rm -- victim"]
    code, effects = invoke("perl -F'/(?{unlink q(victim)})/' -ane 1")
    assert code is not None and "unlink" in (code.source or "") and effects.unparseable
    code, _ = invoke("bun --define 'process.env.X:require(\"child_process\")' -e 1")
    assert code is not None and "child_process" in (code.source or "")
    _, effects = invoke("php -B 'unlink(\"victim\");' -R 'echo 1;'")
    assert texts(effects) == ["rm -- victim"]


def test_files_the_options_read_and_write() -> None:
    code, _ = invoke("perl -pi.bak -e 's/a/b/' a.txt b.txt")
    assert code is not None and [w.text for w in code.writes] == ["a.txt", "b.txt"]
    assert [w.text for w in code.reads] == ["a.txt", "b.txt"]
    code, _ = invoke("ruby -i -pe '$_.upcase!' c.txt")
    assert code is not None and [w.text for w in code.writes] == ["c.txt"]
    code, _ = invoke("perl -ne 'print' '>important'")
    assert code is not None and [w.text for w in code.writes] == ["important"]


@pytest.mark.parametrize(("cmdline", "why"), [
    ("perl -ne 'print' 'rm -rf victim|'", "as a command"),
    ("perl -e 'while (<>) { print }' '|rm -rf victim'", "as a command"),
    ("perl script.pl 'rm victim |'", "as a command"),
    ("node --frobnicate x.js", "may take"),
    ("python3 -Z -c x", "unknown option"),
    ("python3 -W -c 'print(1)'", "would take the option"),
    ("perl -M -e 1", "module"),
])
def test_invocations_that_cannot_be_known(cmdline: str, why: str) -> None:
    code, _ = invoke(cmdline)
    assert code is not None and why in code.unparseable, code


def test_code_computed_at_run_time_is_dynamic() -> None:
    code = inline_code("python3", [Word("-c"), Word("$code", dynamic=True, lead_dynamic=True)])
    assert code is not None and code.dynamic and code.source == "$code"
    code = inline_code("perl", [Word("-e"), Word("print 1"), Word("-e"),
                                Word("$x", dynamic=True, lead_dynamic=True)])
    assert code is not None and code.dynamic
    code = inline_code("node", [Word("$opt", dynamic=True, lead_dynamic=True), Word("x.js")])
    assert code is not None and "run time" in code.unparseable
    code = inline_code("perl", [Word("-ne"), Word("print"),
                                Word("$f", dynamic=True, lead_dynamic=True)])
    assert code is not None and "run time" in code.unparseable
    code = inline_code("python3", [Word("-m"), Word("$m", dynamic=True, lead_dynamic=True)])
    assert code is not None and "run time" in code.unparseable


def test_code_in_a_glob_is_what_bash_expands_it_to() -> None:
    """`python3 -c __import__*` runs the name of a file the agent created."""
    code = inline_code("python3", [Word("-c"), Word("__import__*", globby=True)])
    assert code is not None and code.dynamic
    code = inline_code("perl", [Word("-e"), Word("print 1"), Word("*", globby=True)])
    assert code is not None and "run time" in code.unparseable  # a file named -M... is an option
    code = inline_code("python3", [Word("x.py"), Word("*.txt", globby=True)])
    assert code is not None and code.args[0].lead_dynamic and not code.unparseable


def test_bun_exec_is_a_shell_string() -> None:
    code, effects = invoke("bun exec 'rm -rf victim'")
    assert code is not None and code.language == "bash"
    assert effects.scripts == ("rm -rf victim",)


# -- attacks -----------------------------------------------------------------------------------
PYTHON_ATTACKS = [
    'import os; os.remove("victim")',
    'import os; os.unlink("victim")',
    'import shutil; shutil.rmtree("victim")',
    'import os; os.system("rm -rf victim")',
    'import os as o; o.system("rm -rf victim")',
    'from os import system as s; s("rm -rf victim")',
    'from subprocess import *; run(["rm", "-rf", "victim"])',
    'import subprocess as sp; sp.run("rm -rf victim", shell=True)',
    'import subprocess; subprocess.Popen(["rm", "-rf", "victim"]).wait()',
    'import subprocess; subprocess.check_call(["/bin/rm", "-rf", "victim"])',
    'import subprocess; subprocess.run(["ls", "-rf", "victim"], executable="/bin/rm")',
    'import subprocess; subprocess.run(["rm -rf victim"], shell=True)',
    'import pathlib; pathlib.Path("victim").unlink()',
    'from pathlib import Path; p = Path(".") / "victim"; p.unlink()',
    'from pathlib import Path; Path("victim").rmdir()',
    'import os; os.popen("rm -rf victim").read()',
    'import os; os.execvp("rm", ["rm", "-rf", "victim"])',
    'import os; os.spawnlp(os.P_WAIT, "rm", "rm", "-rf", "victim")',
    'import os; os.waitpid(os.posix_spawnp("rm", ["rm", "-rf", "victim"], dict(os.environ)), 0)',
    'import shutil; shutil.move("other", "victim")',
    'import os; os.rename("other", "victim")',
    'open("victim", "w").close()',
    'import os; os.truncate("victim", 0)',
    'import os; os.close(os.open("victim", os.O_WRONLY | os.O_TRUNC))',
    'from pathlib import Path; Path("victim").write_text("")',
    'import shutil; shutil.copyfile("/dev/null", "victim")',
    'import os; os.chmod("victim", 0o777)',
    '__import__("os").remove("victim")',
    'import os; getattr(os, "remove")("victim")',
    'import os; getattr(os, "re" + "move")("victim")',
    'import os; f = os.remove; f("victim")',
    'import os; list(map(os.remove, ["victim"]))',
    'import os; (lambda f: f("victim"))(os.remove)',
    'import os\nclass A:\n    rm = os.remove\nA.rm("victim")',
    'exec("import os; os.remove(\'victim\')")',
    'exec("imp" + "ort os; os.remove(\'victim\')")',
    'import base64; exec(base64.b64decode("aW1wb3J0IG9zOyBvcy5yZW1vdmUoInZpY3RpbSIp"))',
    'eval(compile("__import__(\'os\').remove(\'victim\')", "x", "exec"))',
    'exec("import os as o"); o.remove("victim")',
    'import importlib; importlib.import_module("os").remove("victim")',
    'import sys; sys.modules["os"].remove("victim")',
    'import shutil; shutil.os.remove("victim")',
    'import tempfile; tempfile._os.remove("victim")',
    'import os; vars(os)["remove"]("victim")',
    'import os; os.__dict__["remove"]("victim")',
    'globals()["__builtins__"].__import__("os").remove("victim")',
    '[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "Popen"][0]'
    '(["rm", "-rf", "victim"])',
    '(x for x in ()).gi_frame.f_globals["__builtins__"]',
    'import os; cmd = "rm -rf " + "victim"; os.system(cmd)',
    'import os; t = "victim"; os.system(f"rm -rf {t}")',
    'import os, sys; os.system(sys.argv[1])',
    'import os; os.system("".join(["rm", " -rf victim"]))',
    'import os; os.system(chr(114) + chr(109) + " -rf victim")',
    'import codecs, os; os.system(codecs.decode("ez -es ivpgvz", "rot13"))',
    'import os; os.system("r\\x6d -rf victim")',
    'import ｏｓ; ｏｓ.ｓｙｓｔｅｍ("rm -rf victim")',
    'import subprocess; subprocess.run(["sh"], input=b"rm -rf victim")',
    'import subprocess; p = subprocess.Popen(["sh"], stdin=subprocess.PIPE); '
    'p.communicate(b"rm -rf victim")',
    'import os; os.popen("sh", "w").write("rm -rf victim")',
    'import os; os.chdir("sub"); os.remove("victim")',
    'import os, subprocess; os.environ["BASH_ENV"] = "evil.sh"; '
    'subprocess.run(["bash", "-c", "true"])',
    'import os; r, w = os.pipe(); os.write(w, b"rm -rf victim\\n"); os.close(w); '
    'os.dup2(r, 0); os.execvp("sh", ["sh"])',
    'import pty; pty.spawn(["rm", "-rf", "victim"])',
    'import asyncio; asyncio.run(asyncio.create_subprocess_shell("rm -rf victim"))',
    'import ctypes; ctypes.CDLL(None).system(b"rm -rf victim")',
    'import subprocess; cmd = ["ls"]; cmd[0] = "rm"; cmd.append("victim"); subprocess.run(cmd)',
    'import subprocess; cmd = ["rm"]; cmd += ["-rf", "victim"]; subprocess.run(cmd)',
    'import subprocess; subprocess.run(["bash", "-c", "rm -rf victim"])',
    'import urllib.request; urllib.request.urlretrieve("http://example.com/x", "victim")',
    'breakpoint()',
    'import webbrowser; webbrowser.open("file:///victim")',
    'import pickle; pickle.loads(b"cos\\nremove\\n(S\'victim\'\\ntR.")',
    'import os; os.environ.update(PATH="victim:" + os.environ["PATH"]); os.system("ls")',
    'import typing; typing.get_type_hints(lambda x: None)',
    'import os\ndef f(x=os.remove("victim")): pass',
    'import os\n@os.system\ndef rm_rf_victim(): pass',
    'import os\ntry:\n    pass\nfinally:\n    os.remove("victim")',
    'import subprocess; subprocess.run(**{"args": "rm -rf victim", "shell": True})',
    'import subprocess; subprocess.run("rm -rf victim", shell=bool(1))',
    'import subprocess as s; s.run("x", shell=True, executable="/usr/bin/python3")',
    'import os; os.system.__call__("rm -rf victim")',
    'from os import *; system("rm -rf victim")',
    'import operator, os; operator.methodcaller("remove", "victim")(os)',
    'import psutil; psutil.Popen(["rm", "-rf", "victim"])',
    'import sh; sh.rm("-rf", "victim")',
]


@pytest.mark.parametrize("source", PYTHON_ATTACKS)
def test_python_attacks_are_flagged(source: str) -> None:
    effects = analyse_code("python", source)
    assert flagged(effects, "victim") or flagged(effects, "BASH_ENV"), effects
    assert "internal error" not in effects.unparseable


OTHER_ATTACKS = [
    ("perl", 'unlink "victim"'),
    ("perl", 'system("rm -rf victim")'),
    ("perl", 'system "rm", "-rf", "victim"'),
    ("perl", "exec 'rm', '-rf', 'victim'"),
    ("perl", "`rm -rf victim`"),
    ("perl", "qx{rm -rf victim}"),
    ("perl", "readpipe('rm -rf victim')"),
    ("perl", 'open(F, "| rm -rf victim"); close F'),
    ("perl", 'open(my $f, "-|", "rm", "-rf", "victim")'),
    ("perl", '&{"sys"."tem"}("rm -rf victim")'),
    ("perl", 'my $f = "victim"; unlink $f'),
    ("perl", 'eval "unl"."ink q(victim)"'),
    ("perl", 'CORE::unlink("victim")'),
    ("perl", 'use File::Path qw(rmtree); rmtree("victim")'),
    ("perl", 'my $x = "x"; $x =~ s/x/system("rm -rf victim")/e'),
    ("perl", 's//"unl"."ink q(victim)"/ee'),
    ("perl", 'my $c = "sys" . "tem"; main->can($c)->("rm -rf victim")'),
    ("perl", "do 'evil.pl'"),
    ("perl", 'my $m = "POSIX"; require $m'),
    ("perl", '@ARGV = ("rm -rf victim|"); print while <>'),
    ("perl", 'local $SIG{ALRM} = "CORE::GLOBAL::die"'),
    ("perl", 'system("rm -rf $ENV{HOME}")'),
    ("perl", 'use IPC::Open3; open3(my $i, my $o, undef, "rm -rf victim")'),
    ("ruby", 'File.delete("victim")'),
    ("ruby", 'system("rm -rf victim")'),
    ("ruby", "system 'rm', '-rf', 'victim'"),
    ("ruby", "`rm -rf victim`"),
    ("ruby", "%x(rm -rf victim)"),
    ("ruby", 'Kernel.send(:system, "rm -rf victim")'),
    ("ruby", 'require "fileutils"; FileUtils.rm_rf("victim")'),
    ("ruby", 'IO.popen("rm -rf victim")'),
    ("ruby", 'open("|rm -rf victim")'),
    ("ruby", "eval(\"File.delete('victim')\")"),
    ("ruby", 'Object.const_get(:File).delete("victim")'),
    ("ruby", 'require "pathname"; Pathname("victim").delete'),
    ("ruby", 'method(:system).call("rm -rf victim")'),
    ("ruby", 'system("rm -rf #{ENV["HOME"]}")'),
    ("ruby", 'spawn("rm", "-rf", "victim", in: :close)'),
    ("javascript", 'require("fs").unlinkSync("victim")'),
    ("javascript", 'require("fs").rmSync("victim", {recursive: true, force: true})'),
    ("javascript", 'require("child_process").execSync("rm -rf victim")'),
    ("javascript", 'require("child" + "_process").execSync("rm -rf victim")'),
    ("javascript", 'const c = require("child_process"); c.spawnSync("rm", ["-rf", "victim"])'),
    ("javascript", 'require("child_process").exec("sh").stdin.end("rm -rf victim")'),
    ("javascript", 'const {execSync: run} = require("child_process"); run("rm -rf victim")'),
    ("javascript", 'process.mainModule.require("fs").unlinkSync("victim")'),
    ("javascript", 'globalThis.process.getBuiltinModule("fs").unlinkSync("victim")'),
    ("javascript", "\\u0065val(\"require('fs').unlinkSync('victim')\")"),
    ("javascript", 'const fs = require("fs"); fs["un" + "linkSync"]("victim")'),
    ("javascript", 'const fs = require("fs"); '
                   'fs[Buffer.from("dW5saW5rU3luYw==", "base64").toString()]("victim")'),
    ("javascript", '[].constructor.constructor("return process")()'
                   '.getBuiltinModule("fs").unlinkSync("victim")'),
    ("javascript", 'import("fs").then(f => f.unlinkSync("victim"))'),
    ("javascript", 'require("fs").writeFileSync("victim", "")'),
    ("javascript", 'const {unlinkSync: u} = require("fs"); u("victim")'),
    ("javascript", 'const f = require("fs"); const g = f; g.unlinkSync("victim")'),
    ("javascript", 'Deno.removeSync("victim")'),
    ("javascript", 'new Deno.Command("rm", {args: ["-rf", "victim"]}).outputSync()'),
    ("javascript", "await Bun.$`rm -rf victim`"),
    ("javascript", 'Bun.spawnSync(["rm", "-rf", "victim"])'),
    ("javascript", 'const vm = require("vm"); vm.runInThisContext("1")'),
    ("javascript", 'require(process.argv[1])'),
    ("php", 'unlink("victim");'),
    ("php", 'system("rm -rf victim");'),
    ("php", '$f = "system"; $f("rm -rf victim");'),
    ("php", '("sys"."tem")("rm -rf victim");'),
    ("php", 'call_user_func("system", "rm -rf victim");'),
    ("php", 'array_map("unlink", ["victim"]);'),
    ("php", "eval('unlink(\"victim\");');"),
    ("php", "`rm -rf victim`;"),
    ("php", 'shell_exec("rm -rf victim");'),
    ("php", 'SYSTEM("rm -rf victim");'),
    ("php", 'passthru($argv[1]);'),
    ("php", '$c = "un" . "link"; $c("victim");'),
    ("php", 'popen("rm -rf victim", "r");'),
    ("php", 'include "data://text/plain;base64,PD9waHAgdW5saW5rKCJ2aWN0aW0iKTs=";'),
    ("php", 'usort($a, $argv[1]);'),
    ("php", '(new ReflectionFunction("system"))->invoke("rm -rf victim");'),
    ("lua", 'os.remove("victim")'),
    ("lua", 'os.execute("rm -rf victim")'),
    ("lua", 'io.popen("rm -rf victim")'),
    ("lua", "load(\"os.remove('victim')\")()"),
    ("lua", 'local o = os; o.remove("victim")'),
    ("lua", '_G["os"]["remove"]("victim")'),
    ("lua", 'os["rem".."ove"]("victim")'),
    ("lua", 'io.popen("sh", "w"):write("rm -rf victim")'),
    ("lua", 'os.execute("rm -rf " .. arg[1])'),
    ("applescript", 'do shell script "rm -rf victim"'),
    ("applescript", 'tell application "Finder" to delete POSIX file "/tmp/victim"'),
    ("applescript", 'tell application "Terminal" to do script "rm -rf victim"'),
    ("applescript", "app = Application.currentApplication(); app.includeStandardAdditions = true;"
                    " app.doShellScript('rm -rf victim')"),
    ("applescript", "ObjC.import('stdlib'); $.system('rm -rf victim')"),
    ("applescript", 'run script "do shell script \\"rm -rf victim\\""'),
    ("r", 'unlink("victim")'),
    ("r", 'system("rm -rf victim")'),
    ("r", 'file.remove("victim")'),
    ("r", "eval(parse(text = \"unlink('victim')\"))"),
    ("r", 'do.call("unlink", list("victim"))'),
    ("julia", 'rm("victim")'),
    ("julia", "run(`rm -rf victim`)"),
    ("julia", 'eval(Meta.parse("rm(\\"victim\\")"))'),
    ("tcl", "exec rm -rf victim"),
    ("powershell", "Remove-Item victim"),
    ("bash", "rm -rf victim"),
]


@pytest.mark.parametrize(("language", "source"), OTHER_ATTACKS)
def test_other_language_attacks_are_flagged(language: str, source: str) -> None:
    effects = analyse_code(language, source)
    assert flagged(effects, "victim"), effects
    assert "internal error" not in effects.unparseable


def test_literal_spawns_become_scripts_or_argv() -> None:
    assert analyse_code("perl", 'system("rm -rf victim")').scripts == ("rm -rf victim",)
    argv = analyse_code("perl", "system 'rm', '-rf', 'victim'").commands
    assert [[w.text for w in c] for c in argv] == [["rm", "-rf", "victim"]]
    assert analyse_code("ruby", "system 'ls'").scripts == ("ls",)
    assert analyse_code("php", 'echo shell_exec("ls");').scripts == ("ls",)
    assert analyse_code("lua", 'os.execute("ls")').scripts == ("ls",)
    assert analyse_code("javascript", 'const {execSync} = require("child_process"); '
                                      'console.log(execSync("ls").toString())').scripts == ("ls",)
    for language, source in (("perl", 'system("ls $x")'), ("ruby", 'system("ls #{x}")'),
                              ("php", 'system("ls $x");'), ("perl", "system('a' . $x)")):
        assert analyse_code(language, source).unparseable, (language, source)
    # Joined literals and escapes are folded, as Perl builds them.
    assert analyse_code("perl", "system('a' . 'b')").scripts == ("ab",)
    assert analyse_code("perl", 'system("ls\\n")').scripts == ("ls\n",)


def test_python_attack_details() -> None:
    effects = analyse_code("python", 'import shutil; shutil.rmtree("victim")')
    assert [[w.text for w in c] for c in effects.commands] == [["rm", "-r", "-f", "--", "victim"]]
    assert [w.text for w in effects.writes] == ["victim"]
    effects = analyse_code("python", 'import subprocess; subprocess.run(["rm", "-rf", x])')
    assert not effects.unparseable
    (command,) = effects.commands
    assert command[-1].dynamic and command[-1].lead_dynamic
    effects = analyse_code("python", 'import subprocess; subprocess.run([c, "-rf"])')
    assert "named at run time" in effects.unparseable
    effects = analyse_code("python", 'import subprocess; subprocess.run(["sh"], input=b"rm -rf x")')
    assert effects.scripts == ("sh <<< 'rm -rf x'",)
    effects = analyse_code("python", 'import subprocess; subprocess.run(["sh"], input=data)')
    assert "feeds text computed at run time" in effects.unparseable
    effects = analyse_code("python", 'import os; os.environ["BASH_ENV"] = "x"; os.system("ls")')
    assert effects.scripts == ("env BASH_ENV=x sh -c ls",)
    effects = analyse_code("python", 'import subprocess; subprocess.run(["ls"], env={"A": "1"})')
    assert [[w.text for w in c] for c in effects.commands] == [["env", "A=1", "ls"]]
    effects = analyse_code("python", 'import subprocess; subprocess.run("ls", shell=True, cwd="d")')
    assert effects.scripts == ("cd -- d && { ls\n}",)
    effects = analyse_code("python", 'import os; os.chdir("sub"); os.remove("victim")')
    (command,) = effects.commands
    assert command[-1].text == "victim" and command[-1].dynamic
    assert effects.writes[0].dynamic
    effects = analyse_code("python", 'import urllib.request as u; u.urlopen("https://x.example")')
    assert [[w.text for w in c] for c in effects.commands] == [["curl", "https://x.example"]]


# -- benign programs -----------------------------------------------------------------------------
BENIGN = [
    ("python", "print(1)"),
    ("python", 'import json, sys; print(json.load(sys.stdin)["x"])'),
    ("python", "import os; print(os.getcwd())"),
    ("python", "open('f').read()"),
    ("python", "print([x * 2 for x in range(10)])"),
    ("python", "import sys; [print(line.upper(), end='') for line in sys.stdin]"),
    ("python", "import os; print(os.environ.get('HOME'), os.path.join('a', 'b'))"),
    ("python", "from pathlib import Path; print(Path('x').exists(), Path.home())"),
    ("python", "import re; print(re.sub(r'a', 'b', 'banana'))"),
    ("python", "import datetime; print(datetime.date.today().isoformat())"),
    ("python", "import csv, sys\nfor row in csv.reader(sys.stdin):\n    print(row[0])"),
    ("python", "with open('data.json') as fh:\n    import json\n    print(json.load(fh)['k'])"),
    ("python", "import collections; print(collections.Counter('hello').most_common(1))"),
    ("python", "class A:\n    def __init__(self):\n        self.x = 1\nprint(A().x)"),
    ("python", "import sys; print(sys.version_info >= (3, 8), sys.argv[1:])"),
    ("python", "s = 'hello'; print(s.replace('l', 'L'), s.split('e'))"),
    ("python", "import math; print(math.sqrt(2))"),
    ("python", "import os; print(len(os.listdir('.')))"),
    ("python", "import platform; print(platform.system(), platform.python_version())"),
    ("python", "import hashlib; print(hashlib.sha256(b'x').hexdigest())"),
    ("python", "if __name__ == '__main__':\n    print(__name__)"),
    ("python", "import json; d = {'a': 1}; d.update(b=2); print(json.dumps(d))"),
    ("python", "import asyncio\nasync def main():\n    await asyncio.sleep(0)\n"
               "asyncio.run(main())"),
    ("perl", "print if /x/"),
    ("perl", 'print "$_\\n" for @ARGV'),
    ("perl", "s/a/b/"),
    ("perl", 'my %h; $h{$_}++ for split //, "hello"; print scalar keys %h'),
    ("perl", 'print join(",", map { $_ * 2 } 1..3)'),
    ("perl", 'open(my $f, "<", "x.txt") or die; print while <$f>'),
    ("perl", "eval { die 'x' }; print $@"),
    ("ruby", "puts 1"),
    ("ruby", "puts ARGV.inspect"),
    ("ruby", "STDIN.each_line { |l| puts l.upcase }"),
    ("ruby", 'require "json"; puts JSON.parse(STDIN.read)["x"]'),
    ("ruby", 'puts File.read("Gemfile").lines.count'),
    ("javascript", "console.log(1)"),
    ("javascript", 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).x)'),
    ("javascript", 'process.stdout.write("x\\n")'),
    ("javascript", "console.log([1, 2, 3].map(x => x * 2))"),
    ("javascript", 'console.log(require("os").hostname(), process.argv[2])'),
    ("javascript", 'const p = require("path"); console.log(p.join("a", "b"))'),
    ("javascript", 'console.log(/a(b)/.exec("ab")[1])'),
    ("php", "echo 1;"),
    ("php", 'echo strtoupper("x");'),
    ("php", "echo json_encode([1, 2]);"),
    ("php", "var_dump(array_map(fn($x) => $x * 2, [1, 2]));"),
    ("php", 'echo file_get_contents("composer.json");'),
    ("lua", "print(1)"),
    ("lua", 'print(string.format("%d", 3))'),
    ("lua", "for i = 1, 3 do print(i) end"),
    ("lua", 'io.write("x\\n")'),
    ("applescript", 'display notification "done"'),
    ("applescript", "return 1 + 1"),
    ("r", "print(1)"),
    ("r", "cat(mean(c(1, 2, 3)))"),
    ("julia", "println(1)"),
    ("julia", "println(sum([1, 2, 3]))"),
]


@pytest.mark.parametrize(("language", "source"), BENIGN)
def test_benign_programs_stay_clean(language: str, source: str) -> None:
    effects = analyse_code(language, source)
    assert clean(effects), effects
    assert not effects.writes, effects


def test_benign_reads_are_reads() -> None:
    assert [w.text for w in analyse_code("python", "open('f').read()").reads] == ["f"]
    effects = analyse_code("javascript", 'console.log(require("fs").readFileSync("a.json"))')
    assert [w.text for w in effects.reads] == ["a.json"]
    assert [w.text for w in analyse_code("ruby", 'puts File.read("Gemfile")').reads] == [
        "Gemfile"]


@pytest.mark.parametrize("cmdline", [
    "python3 -c 'print(1)'", "node -e 'console.log(1)'", "perl -ne 'print if /x/' f",
    "ruby -e 'puts 1'", "php -r 'echo 1;'", "lua -e 'print(1)'", "python3 --version",
    "python3 -m pip install requests", "deno eval 'console.log(1)'", "bun -e 'console.log(1)'",
])
def test_benign_invocations(cmdline: str) -> None:
    code, effects = invoke(cmdline)
    assert code is None or not code.unparseable
    assert clean(effects)


def test_a_here_doc_program_is_analysed_like_an_inline_one() -> None:
    code, effects = invoke("python3 -", stdin="import os\nos.remove('victim')\n")
    assert code is not None and code.from_stdin
    assert texts(effects) == ["rm -- victim"]
    _, effects = invoke("python3", stdin="import json\nprint(json.dumps({}))\n")
    assert clean(effects)


# -- the harm is real ----------------------------------------------------------------------------
RUNNABLE = [
    ('import os; os.remove("victim")', "file", []),
    ('import shutil; shutil.rmtree("victim")', "dir", []),
    ('import os; os.system("rm -rf victim")', "dir", []),
    ('from os import system as s; s("rm -rf victim")', "dir", []),
    ('from subprocess import *; run(["rm", "-rf", "victim"])', "dir", []),
    ('import subprocess; subprocess.run(["ls", "-rf", "victim"], executable="/bin/rm")', "dir", []),
    ('import pathlib; pathlib.Path("victim").unlink()', "file", []),
    ('open("victim", "w").close()', "file", []),
    ('import os; getattr(os, "re" + "move")("victim")', "file", []),
    ('exec("imp" + "ort os; os.remove(\'victim\')")', "file", []),
    ('import sys; sys.modules["os"].remove("victim")', "file", []),
    ('import tempfile; tempfile._os.remove("victim")', "file", []),
    ('import os, sys; os.system(sys.argv[1])', "dir", ["rm -rf victim"]),
    ('import os; os.system(chr(114) + chr(109) + " -rf victim")', "dir", []),
    ('import ｏｓ; ｏｓ.ｓｙｓｔｅｍ("rm -rf victim")', "dir", []),
    ('import subprocess; subprocess.run(["sh"], input=b"rm -rf victim")', "dir", []),
    ('[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]'
     '.__init__.__globals__["system"]("rm -rf victim")', "dir", []),
    ('import os; r, w = os.pipe(); os.write(w, b"rm -rf victim\\n"); os.close(w); '
     'os.dup2(r, 0); os.execvp("sh", ["sh"])', "dir", []),
    ('import ctypes; ctypes.CDLL(None).system(b"rm -rf victim")', "dir", []),
    ('import pickle; pickle.loads(b"cos\\nremove\\n(S\'victim\'\\ntR.")', "file", []),
    ('import os, subprocess; os.environ["BASH_ENV"] = "evil.sh"; '
     'subprocess.run(["bash", "-c", "true"])', "dir", []),
]


def _victim(tmp: Path, kind: str) -> Path:
    victim = tmp / "victim"
    if kind == "dir":
        victim.mkdir()
        (victim / "precious").write_text("precious")
    else:
        victim.write_text("precious")
    (tmp / "evil.sh").write_text("rm -rf victim\n")
    return victim


def _harmed(victim: Path, kind: str) -> bool:
    if kind == "dir":
        return not (victim / "precious").exists()
    return not victim.exists() or victim.read_text() != "precious"


def _run(argv: list[str], cwd: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd)}
    subprocess.run(argv, cwd=cwd, env=env, timeout=30, capture_output=True, check=False)


PERL_RUNNABLE = [
    ('unlink "victim"', "file", []),
    ('system("rm -rf victim")', "dir", []),
    ('system "rm", "-rf", "victim"', "dir", []),
    ("`rm -rf victim`", "dir", []),
    ("qx{rm -rf victim}", "dir", []),
    ('open(F, "| rm -rf victim"); close F', "dir", []),
    ('eval "unl"."ink q(victim)"', "file", []),
    ('use File::Path qw(rmtree); rmtree("victim")', "dir", []),
    ('@ARGV = ("rm -rf victim|"); print while <>', "dir", []),
]


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed here")
@pytest.mark.parametrize("cmdline", [
    "perl -ne 'print' 'rm -rf victim|'",
    "perl '-Mstrict;system q(rm -rf victim)' -e 1",
])
def test_perl_invocation_attacks_do_real_harm_and_are_flagged(tmp_path: Path,
                                                               cmdline: str) -> None:
    victim = _victim(tmp_path, "dir")
    _run(shlex.split(cmdline), tmp_path)
    assert _harmed(victim, "dir"), "the attack did not work: the test proves nothing"
    code, effects = invoke(cmdline)
    assert code is not None and (code.unparseable or flagged(effects, "victim"))


NODE_RUNNABLE = [
    ('require("fs").unlinkSync("victim")', "file"),
    ('require("fs").rmSync("victim", {recursive: true, force: true})', "dir"),
    ('require("child_process").execSync("rm -rf victim")', "dir"),
    ('require("child" + "_process").execSync("rm -rf victim")', "dir"),
    ('const c = require("child_process"); c.spawnSync("rm", ["-rf", "victim"])', "dir"),
    ('globalThis.process.getBuiltinModule("fs").unlinkSync("victim")', "file"),
    ("\\u0065val(\"require('fs').unlinkSync('victim')\")", "file"),
    ('const fs = require("fs"); fs["un" + "linkSync"]("victim")', "file"),
    ('const fs = require("fs"); '
     'fs[Buffer.from("dW5saW5rU3luYw==", "base64").toString()]("victim")', "file"),
    ('[].constructor.constructor("return process")()'
     '.getBuiltinModule("fs").unlinkSync("victim")', "file"),
    ('import("fs").then(f => f.unlinkSync("victim"))', "file"),
    ('require("fs").writeFileSync("victim", "")', "file"),
]


def _runs(program: str, flag: str, language: str,
          cases: list[tuple[str, str, list[str]]]) -> list[object]:
    missing = shutil.which(program) is None
    return [pytest.param([program if program != "python3" else sys.executable, flag, source,
                          *args], language, source, kind,
                         marks=pytest.mark.skipif(missing, reason=f"{program} is not installed"),
                         id=f"{language}: {source[:50]}")
            for source, kind, args in cases]


@pytest.mark.parametrize(("argv", "language", "source", "kind"), [
    *_runs("python3", "-c", "python", RUNNABLE), *_runs("perl", "-e", "perl", PERL_RUNNABLE),
    *_runs("node", "-e", "javascript", [(s, k, []) for s, k in NODE_RUNNABLE]),
])
def test_attacks_do_real_harm_and_are_flagged(tmp_path: Path, argv: list[str], language: str,
                                              source: str, kind: str) -> None:
    victim = _victim(tmp_path, kind)
    _run(argv, tmp_path)
    assert _harmed(victim, kind), "the attack did not work: the test proves nothing"
    effects = analyse_code(language, source)
    assert flagged(effects, "victim") or flagged(effects, "evil.sh"), effects
