"""Commands that run other commands: kept as data so new wrappers are one line.

For each wrapper: which options take a value (so the value is not mistaken for the command),
how many positional operands come before the wrapped command, and which options hold a
shell string instead of an argv.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wrapper:
    value_opts: frozenset[str] = frozenset()
    """Options whose value is the next word unless attached (-uroot, --user=root)."""
    operands: int = 0
    """Positional operands before the wrapped command (timeout DURATION, flock FILE)."""
    shell_opts: frozenset[str] = frozenset()
    """Options whose value is a shell script (su -c, script -c, flock -c)."""
    query_opts: frozenset[str] = frozenset()
    """Options that make the wrapper only describe the command, not run it (command -v)."""
    assignments: bool = False
    """Leading NAME=value words are environment settings (env)."""
    joins_args: bool = False
    """The remaining words are joined and run by a shell (watch, ssh)."""
    argv_opt: str = ""
    """The wrapped argv follows this option only (runuser -u x -- cmd uses '--')."""


def _w(
    value: str = "",
    operands: int = 0,
    shell: str = "",
    query: str = "",
    *,
    assignments: bool = False,
    joins: bool = False,
) -> Wrapper:
    return Wrapper(
        frozenset(value.split()),
        operands,
        frozenset(shell.split()),
        frozenset(query.split()),
        assignments,
        joins,
    )


WRAPPERS: dict[str, Wrapper] = {
    "env": _w("-u --unset -C --chdir -a --argv0", shell="-S --split-string", assignments=True),
    "sudo": _w(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role "
        "-t --type -T --command-timeout -U --other-user -R --chroot",
        query="-l --list -v --validate -k -K -V",
    ),
    "doas": _w("-u -C -a"),
    "pkexec": _w("--user"),
    "run0": _w("--user -u --unit --description --property -p --setenv"),
    "runuser": _w("-u --user -g --group -G --supp-group -s --shell", shell="-c --command"),
    "su": _w("-g --group -G --supp-group -s --shell -w", shell="-c --command"),
    "sg": _w("", operands=1, shell="-c"),
    "timeout": _w("-s --signal -k --kill-after", operands=1),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "chrt": _w("", operands=1),
    "nohup": _w(),
    "stdbuf": _w("-i --input -o --output -e --error"),
    "time": _w("-f --format -o --output"),
    "command": _w(query="-v -V"),
    "builtin": _w(),
    "exec": _w("-a"),
    "coproc": _w(),
    "xargs": _w(
        "-a --arg-file -d --delimiter -E -e --eof -I -i --replace -L -l --max-lines -n "
        "--max-args -P --max-procs -s --max-chars --process-slot-var"
    ),
    "parallel": _w("-j --jobs -S --sshlogin --joblog -I --delay --timeout"),
    "setsid": _w(),
    "taskset": _w("", operands=1),
    "flock": _w("-w --timeout -E --conflict-exit-code", operands=1, shell="-c --command"),
    "watch": _w("-n --interval -d --differences -q --equexit", joins=True),
    "script": _w("-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m "
                 "--logging-format", shell="-c --command"),
    "busybox": _w(),
    "chroot": _w("--userspec --groups", operands=1),
    "unshare": _w("--map-user --map-group --setuid --setgid -S -G -R --root -w --wd"),
    "nsenter": _w("-t --target -S --setuid -G --setgid -r --root -w --wd"),
    "strace": _w("-e -o -p -s -u -E -a -b -I -O -P -X"),
    "ltrace": _w("-e -o -p -s -u -a -n"),
    "valgrind": _w(),
    "catchsegv": _w(),
    "unbuffer": _w(),
    "faketime": _w("", operands=1),
    "firejail": _w(),
    "proxychains": _w("-f"),
    "proxychains4": _w("-f"),
    "torsocks": _w("-u -p -a -P"),
    "caffeinate": _w("-t -w"),
    "systemd-run": _w("-u --unit -p --property --description --slice -E --setenv -M "
                      "--machine --uid --gid --working-directory"),
    "dbus-launch": _w(),
    "prlimit": _w("-p --pid"),
    "cgexec": _w("-g"),
    "numactl": _w("-C -N -m -p -i --cpunodebind --membind --preferred --interleave "
                  "--physcpubind"),
    "ssh": _w("-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w", operands=1,
              joins=True),
}
"""Wrapper name -> how to find the command it runs."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "busybox-sh"})
SHELL_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
EVALS = frozenset({"eval"})
TRAPS = frozenset({"trap"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
FINDS = frozenset({"find", "gfind"})
