"""Precision of the Bash analysis under a platform policy, and the attacks next to it.

A project holds `.env` (and `app/.env`), the home directory `.ssh/id_rsa`; the policy is the
platform one (command rules for rm -rf, sudo, curl, ...; `Read(**/.env)`,
`Read(~/.ssh/**)`). Each attack is denied and, run in a real bash against the same
directories, prints the secret: the denial is not about a harmless form. Each benign
command is neither denied nor asked.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gateway.policy import Policy, decide, explain
from gateway.types import ToolCall
from tests.policy.conftest import SECRET


def _decide(policy: Policy, command: str, cwd: Path) -> str:
    """As the hook decides: the shell hands the evaluator its environment."""
    call = ToolCall("Bash", {"command": command}, cwd=str(cwd), environ=dict(os.environ))
    return decide(policy, call).kind


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com"}


def _setup(script: str, cwd: Path, home: Path) -> None:
    if script:
        subprocess.run(["bash", "-c", script], cwd=cwd, env=_env(home), check=True,
                       capture_output=True, timeout=30)


def _run(command: str, cwd: Path, home: Path) -> str:
    env = _env(home)
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    return done.stdout


VARIABLE_ATTACKS = [
    # a later binding runs first in a loop; either branch may bind
    "f=a.txt; for i in 1 2; do cat $f; f=.env; done",
    'if [ -z "$Q" ]; then f=.env; else f=a.txt; fi; cat $f',
    # bindings the walk did not see: a loop variable, `builtin export`, name references
    "f=a.txt; for f in .env; do cat $f; done",
    "f=a.txt; builtin export f=.env; cat $f",
    "declare -n f=g; g=.env; cat $f",
    "f=.e; f+=nv; cat $f",
    # operators inside ${...} are not plain references
    "f=a; cat ${f/a/.env}",
    # variables bash sets while the command runs
    "echo .env >/dev/null; cat $_",
    "cd ~/.ssh && cat $PWD/id_rsa",
    # an unquoted expansion is split into fields and globbed
    "f='x .env'; cat $f 2>/dev/null",
    "f='.e*'; cat $f",
    # operators with a literal word are followed
    "f=x/.env; cat ${f##*/}", "f=.env.bak; cat ${f%.bak}", "cat ${F:-.env}",
    "for f in app/.env.x; do cat \"${f%.x}\"; done",
]


@pytest.mark.parametrize("command", VARIABLE_ATTACKS)
def test_paths_through_variables_are_denied(policy: Policy, project: Path, in_home: Path,
                                            command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


VARIABLE_BENIGN = [
    "f=a.txt; cat $f", "out=src/main.py; cat \"$out\"", "for f in a b; do cat $f.txt; done",
    "d=src; ls $d && cat $d/main.py", "cd src && cat $PWD/main.py",
    "for f in *.py; do echo \"$f\"; done",
    'for f in *.txt; do mv "$f" "${f%.txt}.md"; done', "f=a.env.bak; cat ${f%.bak}",
    'for f in src/*.py; do cp "$f" "/tmp/${f##*/}"; done',
]


@pytest.mark.parametrize("command", VARIABLE_BENIGN)
def test_paths_through_known_variables_are_not_denied(policy: Policy, project: Path,
                                                      in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


_REPO = "git init -q . && git add .env a.txt && git commit -qm x && echo CHANGED >> .env"
GLOB_ATTACKS = [
    # glob options the command turns on
    ("shopt -s dotglob; cat *", ""), ("GLOBIGNORE=x; cat *", ""),
    ("shopt -s nocaseglob; cat .E*", ""), ("bash -O dotglob -c 'cat *'", ""),
    ("shopt -s globstar dotglob; cat **/.env", ""),
    # bash syntax Python's glob reads otherwise
    ("cat .[^x]nv", ""), ("cat .[[:alpha:]]nv", ""), ("cat {.env,a.txt}", ""),
    ("cat .e{n,x}v", ""), ("cat app/.{e,}nv", ""),
    # programs that match patterns themselves: quoted, still a pattern
    ("git diff -- '*.env'", _REPO), ("git diff -- ':(icase).ENV'", _REPO),
]


@pytest.mark.parametrize(("command", "setup"), GLOB_ATTACKS)
def test_globs_are_expanded_as_bash_does(policy: Policy, project: Path, in_home: Path,
                                         command: str, setup: str) -> None:
    _setup(setup, project, in_home)
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


GLOB_BENIGN = [
    # quoted text is never a glob
    "grep '*.txt' a.txt", 'echo "*"', "echo '*'", "grep -c '[0-9]' a.txt", "cat '.e*' 2>/dev/null",
    "printf '%s\\n' '[a-z]*'", "awk '/^[#;]/ {next} {print}' a.txt",
    # a glob that matches nothing is passed as it is, when nothing creates files first
    "cat *.txt | wc -l", "cat *.md 2>/dev/null | wc -l", "wc -l src/*.rs", "gzip -k */*.csv",
    # process substitutions are pipes, not files
    "diff <(sort a.txt) <(sort a.txt)", "comm -12 <(sort a.txt) <(sort a.txt)",
    "cat a.* src/*.py",
]


@pytest.mark.parametrize("command", GLOB_BENIGN)
def test_quoted_text_and_empty_globs_are_not_denied(policy: Policy, project: Path,
                                                    in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


PATTERN_ATTACKS = [
    # a glob that matches nothing yet, after a step that creates files it cannot name
    ("tar xf backup.tar && cat restore/.e*",
     "mkdir restore && cp .env restore/ && tar cf backup.tar restore && rm -r restore"),
    ("tar xf backup.tar && cat restore/*/.env", "mkdir -p restore/k && cp .env "
     "restore/k/ && tar cf backup.tar restore && rm -r restore"),
]


@pytest.mark.parametrize(("command", "setup"), PATTERN_ATTACKS)
def test_a_pattern_that_may_name_a_protected_file_is_denied(
        policy: Policy, project: Path, in_home: Path, command: str, setup: str) -> None:
    _setup(setup, project, in_home)
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


PATTERN_BENIGN = [
    # the names a pattern allows are not ones a rule is about
    "make >/dev/null 2>&1; cat build/*.txt", "npm run build && cat dist/*.js",
    "tar xf x.tar && wc -l out/*.csv", "git diff -- '*.py'", "git add 'src/*.py'",
    # an unknown program's quoted arguments are patterns it may match, not paths
    "perl -lane 'print $F[0]' data.txt", "rename 's/\\.jpeg$/.jpg/' *.jpeg",
    "frob --include '*.c' src",
]


@pytest.mark.parametrize("command", PATTERN_BENIGN)
def test_a_pattern_no_rule_is_about_is_not_denied(policy: Policy, project: Path,
                                                  in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


SELECTION_ATTACKS = [
    # xargs's input is a known literal: its words are the command's arguments
    "xargs cat <<< .env", "xargs -I{} cat {} <<< .env", "printf '.env' | xargs cat",
    "echo .env | xargs cat", "echo app/.env | xargs -n1 cat", "printf '.env\\0' | xargs -0 cat",
    "printf 'a.txt,.env' | xargs -d, cat", "xargs sh -c 'cat \"$1\"' _ <<< .env",
    # find: the files it selects
    "find . -maxdepth 1 -name '.e*' -exec cat {} \\;", "find . -name '.env' -exec cat {} +",
    "find . -iname '.ENV' -exec cat {} \\;", "find app -exec cat {} \\; 2>/dev/null",
    "find . -path '*/app/.e*' -exec cat {} +", "find . -name .env -execdir cat {} \\;",
    "find . -exec sh -c 'cat \"$1\"' _ {} \\; 2>/dev/null",
    "find . -name .env -exec sh -c 'cat \"$0\"' {} \\;",
    "ln .env x.py && find . -name '*.py' -samefile .env -exec cat {} + ; rm -f x.py",
    "find . -print0 | xargs -0 cat 2>/dev/null", "find . -name '.e*' | xargs cat",
    "find . -name '.e*' -o -name x -exec cat {} \\; ; find . -name '.e*' -exec cat {} \\;",
    # a producer whose output is not known, to a consumer that reads files
    "ls -a | xargs cat 2>/dev/null", "git ls-files | xargs cat",
]


@pytest.mark.parametrize("command", SELECTION_ATTACKS)
def test_files_xargs_or_find_reads_are_checked(policy: Policy, project: Path, in_home: Path,
                                               command: str) -> None:
    _setup("git init -q . && git add -A" if "git" in command else "", project, in_home)
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


def test_find_delete_is_a_write(policy: Policy, project: Path, in_home: Path) -> None:
    workflows = project / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "ci.yml").write_text("on: push\n")
    command = "find . -path './.github/*' -delete"
    assert _decide(policy, command, project) == "deny"
    _run(command, project, in_home)
    assert not (workflows / "ci.yml").exists()
    assert _decide(policy, "find . -name '*.pyc' -delete", project) == "abstain"


SELECTION_BENIGN = [
    "find . -name '*.py' -exec cat {} +", "find . -type f -name '*.py' | xargs grep -l TODO",
    "find . -name '*.o' -exec rm -f {} \\;", "find . -name '*.sh' -exec chmod +x {} \\;",
    "find src -type f | xargs wc -l", "find . -name '*.py' -print0 | xargs -0 wc -l",
    "find . -name '*.bak' | xargs rm -f", "find . -name '*.tmp' -print0 | xargs -0 rm -f",
    "find . -name '*.py' -exec sh -c 'wc -l \"$1\"' _ {} \\;", "echo a b c | xargs -n1",
    "seq 1 10 | xargs -I{} echo item {}", "echo a.txt | xargs cat", "xargs -n1 echo < a.txt",
    "find . -maxdepth 2 -type d", "git ls-files '*.py' | xargs wc -l",
]


@pytest.mark.parametrize("command", SELECTION_BENIGN)
def test_selections_no_rule_is_about_are_not_denied(policy: Policy, project: Path,
                                                    in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


OPTION_GLOB_ATTACKS = [
    # a file named -rf in the directory: the glob expands to it, an option
    ("rm -f *", "touch -- -rf"), ("rm -* victim", "touch -- -rf"),
    ("rm -[r]f victim", "touch -- -rf"), ("cd victim/.. && rm -f *", "touch -- -rf"),
    # an earlier step creates it
    ("cp -- x/* . && rm -f *", "mkdir x && touch -- x/-rf"),
    ("touch -- -rf; rm -f *", ""), ("echo > -rf; rm -f *", ""),
]


@pytest.mark.parametrize(("command", "setup"), OPTION_GLOB_ATTACKS)
def test_a_glob_that_may_expand_to_an_option_is_denied(
        policy: Policy, project: Path, in_home: Path, command: str, setup: str) -> None:
    (project / "victim").mkdir()
    (project / "victim" / "data").write_text("precious\n")
    _setup(setup, project, in_home)
    assert _decide(policy, command, project) == "deny", command
    _run(command, project, in_home)
    assert not (project / "victim").exists(), command


OPTION_GLOB_BENIGN = [
    "rm -f *.o", "rm -f build/*.o", "rm -f *.txt", "rm *.log 2>/dev/null", "rm -f -- *",
    "mv *.txt /tmp/ 2>/dev/null", "echo x > out.log && rm -f *.o", "rm -f ./*",
]


@pytest.mark.parametrize("command", OPTION_GLOB_BENIGN)
def test_globs_that_expand_to_no_option_are_not_options(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    (project / "victim").mkdir()
    assert _decide(policy, command, project) == "abstain", command


def test_a_glob_stays_a_possible_option_where_a_step_may_create_names(
        policy: Policy, project: Path, in_home: Path) -> None:
    for command in ("make >/dev/null; rm -f *.o", "tar xf x.tar; rm -f *",
                    "f=$(mktemp); rm -f *.o"):
        assert _decide(policy, command, project) == "deny", command


@pytest.mark.parametrize(("command", "setup"), [
    ("perl -n *", "touch -- '-esystem(q(rm -rf victim))'"),
    ("perl -ne print * >/dev/null", "touch -- 'rm -rf victim|'"),
    ("touch -- 'rm -rf victim|'; perl -ne print *vict* >/dev/null 2>&1", ""),
])
def test_a_glob_perl_would_read_as_code_is_denied(policy: Policy, project: Path,
                                                 in_home: Path, command: str,
                                                 setup: str) -> None:
    (project / "victim").mkdir()
    _setup(setup, project, in_home)
    assert _decide(policy, command, project) == "deny", command
    _run(command, project, in_home)
    assert not (project / "victim").exists(), command


@pytest.mark.parametrize("command", [
    "perl -pi -e 's/foo/bar/g' *.py", "perl -pi -e 's/foo/bar/g' src/*.py",
    "perl -ne 'print if /x/' *.txt", "python3 src/*.py",
])
def test_globs_to_plain_names_are_not_denied_for_interpreters(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


TYPED_BENIGN = [
    # PIDs, dates, owners, modes, numbers, expressions: not files
    "top -b -n 1 -p $(pgrep -d, python)", "kill -9 $(pgrep -f webpack)",
    "kill -HUP $(cat /tmp/app.pid 2>/dev/null)", "renice -n 5 -p $(pgrep make)",
    'touch -d "$(date -r a.txt) - 2 hours" a.txt', 'date -d "$when" +%F',
    'chown -R "$USER" src', 'chmod 644 src/main.py', 'chmod -w a.txt', 'expr "$n" + 1',
    'test -n "$x" && echo set', 'jq --arg v "$x" .a a.txt', 'sleep "$((n * 2))"',
    'truncate -s "$size" a.txt', 'mkdir -m "$mode" -p build', "rename 's/a/b/' *.jpeg",
    'numfmt --to=iec "$bytes"', 'lsof -t -i:"$port"',
]


@pytest.mark.parametrize("command", TYPED_BENIGN)
def test_arguments_typed_by_program_are_not_paths(policy: Policy, project: Path,
                                                  in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


def test_jq_rawfile_reads_the_file(policy: Policy, project: Path, in_home: Path) -> None:
    for command in ("jq -n --rawfile x .env '$x'", "jq -n --slurpfile x app/.env '$x' || :"):
        assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run("jq -n --rawfile x .env '$x'", project, in_home)


def test_a_mode_that_looks_like_an_option_still_names_the_file(
        policy: Policy, project: Path, in_home: Path) -> None:
    workflow = project / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("on: push\n")
    for command in ("chmod -w .github/workflows/ci.yml", "chmod a-w,u+x .github/workflows/ci.yml",
                    "chown --reference=a.txt .github/workflows/ci.yml"):
        assert _decide(policy, command, project) == "deny", command
    _run("chmod -w .github/workflows/ci.yml", project, in_home)
    assert not workflow.stat().st_mode & 0o200


@pytest.mark.parametrize("command", ['frob "$x"', "frob $(cat list)"])
def test_an_unknown_programs_run_time_arguments_stay_uncertain(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command


LISTING_BENIGN = [
    "ls *.txt | xargs -I{} mv {} {}.bak", "ls *.bak 2>/dev/null | xargs -r rm",
    "ls -1 a.txt src/*.py | xargs wc -l", "grep -rl TODO src | xargs sed -i 's/TODO/DONE/'",
    "grep -l x a.txt | xargs cat",
]


@pytest.mark.parametrize("command", LISTING_BENIGN)
def test_listed_files_no_rule_is_about_are_not_denied(policy: Policy, project: Path,
                                                      in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


@pytest.mark.parametrize("command", [
    "ls -A | xargs cat 2>/dev/null", "ls -d .e* | xargs cat", "ls app/.e* | xargs cat",
    "grep -rl KEY . | xargs cat", "grep -l KEY a.txt .env | xargs cat",
    "ls app | xargs -I{} cat app/{} 2>/dev/null; ls -a app | xargs -I{} cat app/{} 2>/dev/null",
])
def test_listed_files_a_rule_is_about_are_denied(policy: Policy, project: Path,
                                                 in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "ln -s ~ h; cat h/.ssh/id_rsa", "ln -s ~/.ssh k && cat k/id_rsa", "ln -s app k; cat k/.e*",
    "mkdir d && ln -s ../.env d/x && cat d/x", "cp -s \"$PWD/.env\" x.txt; cat *.txt",
])
def test_a_symbolic_link_the_command_makes_reads_its_target(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "ln -s ../shared/config.yaml config.yaml", "ln -sf src/main.py main.py",
    "ln -s src lib && ls lib",
])
def test_links_to_unprotected_files_are_not_denied(policy: Policy, project: Path,
                                                   in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


def test_a_link_to_a_variable_target_reads_what_it_holds(policy: Policy, project: Path,
                                                         in_home: Path) -> None:
    command = 'ln -s "$HOME" h; cat h/.ssh/id_rsa'
    assert _decide(policy, command, project) == "deny"
    assert SECRET in _run(command, project, in_home)


@pytest.mark.parametrize("command", [
    "find . -name '.e*' | while read -r f; do cat \"$f\"; done",
    "echo .env | while read f; do cat \"$f\"; done", "for f in $(echo .env); do cat $f; done",
    "for f in $(find . -name .env); do cat \"$f\"; done",
    "while read -r f; do cat \"$f\"; done < <(find app -name '.e*')",
    "while read -r f; do cat \"$f\"; done <<< .env",
    "for f in $(ls -a); do cat \"$f\" 2>/dev/null; done",
])
def test_loops_over_listed_files_read_them(policy: Policy, project: Path, in_home: Path,
                                           command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    'for f in $(ls *.log 2>/dev/null); do gzip "$f"; done',
    "for f in $(find . -name '*.py'); do wc -l \"$f\"; done",
    "find . -name '*.py' | while read -r f; do wc -l \"$f\"; done",
    "while read -r f; do wc -l \"$f\"; done < <(find src -type f)",
])
def test_loops_over_listed_files_no_rule_is_about(policy: Policy, project: Path,
                                                  in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# A command that acts on a directory recursively acts on everything under it.
RECURSIVE_READS = [
    "grep -r top-secret .", "grep -R KEY", "grep -rn DB app", "egrep -ri key .",
    "grep -d recurse KEY .", "grep -rn --include='.e*' KEY .",
    "tar cf - . | tar xOf -", "tar cf - app | tar xOf -",
    "zip -qr -0 - . | tr -cd '[:print:]\\n'",
    "mkdir -p ../empty && diff -rN . ../empty",
    "cp -r . ../copy && grep -h KEY ../copy/*.txt ../copy/.e* 2>/dev/null",
    "cp -a app ../copy2 && cat ../copy2/.e*",
]


@pytest.mark.parametrize("command", RECURSIVE_READS)
def test_a_recursive_read_of_a_tree_holding_a_protected_file_is_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "rm -rf .github", "rm -r -f -- .github", "mv .github ../gone", "chmod -R 000 .github",
    "rm -r ./.github/../.github", "rm -R ~+",
])
def test_a_recursive_write_over_a_protected_file_is_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    workflow = project / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("on: push\n")
    assert _decide(policy, command, project) == "deny", command
    before = workflow.stat()
    _run(command, project, in_home)
    try:
        after = workflow.stat()
        changed = (after.st_mode, after.st_ino) != (before.st_mode, before.st_ino)
    except OSError:
        changed = True
    assert changed, command


@pytest.mark.parametrize("command", [
    "grep -rn TODO src", "grep -rn --include='*.py' print .", "grep -r --include=*.py x",
    "chmod -R go-w build", "mv build dist", "tar czf ../src.tgz src", "zip -qr ../src.zip src",
    "cp -r src ../lib", "mv src lib", "chmod -R u+w src", "mkdir -p ../b && rsync -a src/ ../b/",
    "diff -r src src", "cp -r src/. ../x", "grep -r print src/*.py",
])
def test_recursive_commands_over_trees_without_protected_files_are_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("o\n")
    assert _decide(policy, command, project) == "abstain", command


def test_a_recursive_read_is_left_to_the_os_sandbox_in_a_sandboxed_session(
        policy: Policy, project: Path, in_home: Path) -> None:
    call = ToolCall("Bash", {"command": "grep -r KEY ."}, cwd=str(project))
    assert decide(policy, call, sandboxed=True).kind == "abstain"
    assert decide(policy, call).kind == "deny"


@pytest.mark.parametrize("command", [
    'echo "$(<.env)"', "echo $(< app/.env)", 'x=$(<.env); echo "$x"', 'echo "k: $(< ./.env)"',
    "git diff --no-index /dev/null .env", "git -C . diff --no-index a.txt app/.env",
    "git blame .env", "git log -p --all -- app/.env; git diff --cached .env",
])
def test_reads_by_substitution_or_git_path_are_denied(policy: Policy, project: Path,
                                                     in_home: Path, command: str) -> None:
    _setup("git init -q . && git add -A && git commit -qm one" if "git" in command else "",
           project, in_home)
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "echo $(<a.txt)", "git diff HEAD~1 --stat", "git log --oneline -5", "git show HEAD",
    "git blame src/main.py", "git diff --no-index a.txt src/main.py", "git log -n 3",
])
def test_substitution_and_git_reads_of_other_files_are_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


@pytest.mark.parametrize("command", [
    "cp .env{,.bak} && cat .env.bak", "mv app/.env{,.txt} && cat app/.env.txt",
    "cp {.env,notes} && cat notes", "cp .en{v,} && cat .en",
])
def test_brace_expansion_makes_the_words_programs_get(policy: Policy, project: Path,
                                                     in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "cp a.txt{,.bak}", "mkdir -p src/{a,b}", "cp src/main.py{,.orig}", "touch f{1..3}.txt",
    "mv a.txt{,.old}",
])
def test_brace_expansion_of_other_files_is_not_denied(policy: Policy, project: Path,
                                                      in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


@pytest.mark.parametrize(("setup", "command"), [
    ("git add -A && git commit -qm one", "git rm -r -q .github"),
    ("", "git clean -fdqx"), ("", "git clean -fd -- .github"),
])
def test_git_removing_a_tree_over_a_protected_file_is_denied(
        policy: Policy, project: Path, in_home: Path, setup: str, command: str) -> None:
    workflow = project / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("on: push\n")
    _setup(f"git init -q . {'&& ' + setup if setup else ''}", project, in_home)
    assert _decide(policy, command, project) == "deny", command
    _run(command, project, in_home)
    assert not workflow.exists(), command


@pytest.mark.parametrize("command", [
    "git rm -r --cached .github", "git clean -n", "git clean -fd src", "git rm -r src",
])
def test_git_over_other_trees_or_without_removing_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    assert _decide(policy, command, project) == "abstain", command


def test_a_sandboxed_session_leaves_to_the_sandbox_only_trees_a_rule_can_reach(
        policy: Policy, project: Path, in_home: Path) -> None:
    """The audit record says `enforced_by: sandbox` only where the kernel may have refused
    something: not for a file's `mv`, nor a tree no rule's names can be in."""
    (project / "build").mkdir()

    def held(command: str) -> int:
        call = ToolCall("Bash", {"command": command}, cwd=str(project))
        return len(explain(policy, call, sandboxed=True).held)

    assert held("grep -r KEY .") > 0
    assert held("mv a.txt b.txt") == 0
    assert held("chmod -R go-w build") == 0


@pytest.mark.parametrize("command", [
    "cat $'.env\\0x'", "cat \"$(printf '.env\\0')\"", "cat \"$(printf '.e\\0nv')\"",
])
def test_a_nul_in_a_name_is_what_bash_makes_of_it(policy: Policy, project: Path,
                                                  in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", ["bash ./tool", "xargs bash <<< './tool x -rf'"])
def test_a_binary_file_run_as_a_script_is_decided_not_read_as_one(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    """Its bytes are no script (they held NULs the paths then carried into os calls)."""
    (project / "tool").write_bytes(Path("/bin/true").read_bytes())
    assert _decide(policy, command, project) == "deny", command


# -- a binding first in a list always runs before the rest ------------------------------------
@pytest.mark.parametrize("command", [
    't=$(mktemp) && mv "$t" a.txt', 't=$(mktemp) && cat "$t"',
    'tmp=$(mktemp) && jq ".name = 1" package.json > "$tmp" && mv "$tmp" package.json',
    'd=$(mktemp -d) && cd "$d" && touch x', 'out=$(mktemp) || exit 1; sort a.txt > "$out"',
])
def test_a_temporary_file_bound_first_in_a_list_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


@pytest.mark.parametrize("command", [
    'true || t=a.txt; cat "${t:-.env}"', '{ t=a.txt; } > /nonexistent/f; cat "${t:-.env}"',
    'ls /nonexistent && t=a.txt; cat "${t:-.env}"', 't=a.txt && t=.env; cat "$t"',
])
def test_a_binding_that_may_not_run_leaves_the_variable_unknown(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command
