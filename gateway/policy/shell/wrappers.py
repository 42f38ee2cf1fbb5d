"""Commands that run other commands, as data, and `unwrap`, which finds what they run.

For each wrapper: which options take a value (so the value is not mistaken for the command),
which take an optional value that must be attached (xargs -i, --replace=R), how many operands
come before the wrapped command, which options hold a shell string, and whether the words
that follow are joined and run by a shell. A wrapper that is missing here is still caught:
an unknown program whose arguments name a denied command is decided as unparseable (see
`programs.INERT` and the evaluator's look-ahead), so the table only makes decisions sharper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gateway.policy.shell.words import Word


@dataclass(frozen=True)
class Wrapper:
    value_opts: frozenset[str] = frozenset()
    """Options whose value is the next word unless attached (-uroot, --user=root)."""
    optional_opts: frozenset[str] = frozenset()
    """Options whose value is optional and only ever attached (xargs -i, -iR, --replace=R)."""
    operands: int = 0
    """Positional operands before the wrapped command (timeout DURATION, flock FILE)."""
    shell_opts: frozenset[str] = frozenset()
    """Options whose value is a shell script (su -c, script -c, flock -c, npx -c)."""
    query_opts: frozenset[str] = frozenset()
    """Options that make the wrapper only describe the command, not run it (command -v)."""
    assignments: bool = False
    """Leading NAME=value words are environment settings (env)."""
    joins_args: bool = False
    """The remaining words are joined and run by a shell (watch, ssh, sg)."""
    appends: bool = False
    """Arguments are added to the wrapped command at run time (xargs, parallel)."""
    shell_args: bool = False
    """The remaining words are the argv of a shell (su USER -c CMD)."""
    dashdash_shell: bool = False
    """Words after `--` are the argv of a shell (capsh -- -c CMD)."""
    each_script: bool = False
    """Each remaining word is a shell script of its own (hyperfine 'cmd1' 'cmd2')."""
    arg_lists: frozenset[str] = frozenset()
    """Separators after which words are arguments, not the command (parallel ::: a b)."""
    bare_shell: bool = False
    """Given no command, it starts a shell, which reads its stdin as code (script, setarch,
    su): `printf 'cmd' | script -q /dev/null` runs cmd."""


def _w(
    value: str = "",
    operands: int = 0,
    shell: str = "",
    query: str = "",
    *,
    optional: str = "",
    assignments: bool = False,
    joins: bool = False,
    appends: bool = False,
    shell_args: bool = False,
    dashdash_shell: bool = False,
    each_script: bool = False,
    arg_lists: str = "",
    bare_shell: bool = False,
) -> Wrapper:
    return Wrapper(
        frozenset(value.split()),
        frozenset(optional.split()),
        operands,
        frozenset(shell.split()),
        frozenset(query.split()),
        assignments,
        joins,
        appends,
        shell_args,
        dashdash_shell,
        each_script,
        frozenset(arg_lists.split()),
        bare_shell,
    )


_SUDO_VALUES = (
    "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role "
    "-t --type -T --command-timeout -U --other-user -R --chroot"
)
_SYSTEMD_RUN_VALUES = (
    "-u --unit -p --property --description --slice -E --setenv -M --machine --uid --gid "
    "--working-directory -H --host --nice --on-active --on-boot --on-startup "
    "--on-unit-active --on-unit-inactive --on-calendar --timer-property --path-property "
    "--socket-property --service-type -C --capsule --background --shell-prompt-prefix"
)
_DOCKER_EXEC_VALUES = "-e --env --env-file -u --user -w --workdir --detach-keys"
_DOCKER_RUN_VALUES = (
    "-v --volume -e --env --name -p --publish --network --net -u --user -w --workdir "
    "--entrypoint --mount --pid --ipc --cap-add --cap-drop --env-file -l --label --platform "
    "-m --memory --cpus --hostname -h --add-host --device --dns --log-driver --restart "
    "--runtime --security-opt --shm-size --ulimit --userns --uts --volumes-from "
    "--health-cmd --cidfile --pull --stop-signal --tmpfs --group-add --gpus"
)

_PERF_VALUES = ("-e --event -o --output -p --pid -t --tid -C --cpu -r --repeat -x "
                "--field-separator -F --freq -c --count -G --cgroup --post --pre")

WRAPPERS: dict[str, Wrapper] = {
    # coreutils and the shell's own
    "env": _w("-u --unset -C --chdir -a --argv0 --block-signal --default-signal "
              "--ignore-signal", shell="-S --split-string", assignments=True),
    "nice": _w("-n --adjustment"),
    "nohup": _w(),
    "stdbuf": _w("-i --input -o --output -e --error"),
    "timeout": _w("-s --signal -k --kill-after", operands=1),
    "chroot": _w("--userspec --groups --skip-chdir", operands=1),
    "runcon": _w("-u --user -r --role -t --type -l --range", operands=0),
    "time": _w("-f --format -o --output"),
    "command": _w(query="-v -V"),
    "builtin": _w(),
    "exec": _w("-a"),
    "coproc": _w(),
    "xargs": _w(
        "-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs "
        "-s --max-chars --process-slot-var",
        optional="-i --replace -e --eof -l",
        appends=True,
    ),
    # GNU parallel runs its command line through a shell; with no command, the arguments
    # after ::: are the commands. Both are handled by the scanner (joins + `:::`).
    "parallel": _w("-j --jobs -P -S --sshlogin --joblog -I --delay --timeout -n --max-args "
                   "-N --max-replace-args -L --max-lines -a --arg-file --colsep -C "
                   "--tmpdir --workdir --wd --results --res --sshloginfile --slf "
                   "--env --halt --retries --load --memfree --tag --tagstring -d --delimiter",
                   joins=True, appends=True, arg_lists="::: :::: :::+ ::::+"),
    "sem": _w("-j --jobs --id --timeout", joins=True),
    # sudo, doas, su and kin
    "sudo": _w(_SUDO_VALUES, query="-l --list -v --validate -k -K -V --version -e --edit",
               assignments=True),
    "doas": _w("-u -C -a"),
    "pkexec": _w("--user"),
    "run0": _w("--user -u --unit --description --property -p --setenv -D --chdir "
               "--machine --nice --slice --background -g --group"),
    # runuser -u USER [--] CMD runs an argv; runuser USER [ARGS] hands ARGS to a shell.
    "runuser": _w("-u --user -g --group -G --supp-group -s --shell -w --whitelist-environment",
                  operands=1, shell="-c --command --session-command", shell_args=True,
                  bare_shell=True),
    "su": _w("-g --group -G --supp-group -s --shell -w --whitelist-environment", operands=1,
             shell="-c --command --session-command", shell_args=True, bare_shell=True),
    "sg": _w("", operands=1, shell="-c", joins=True),
    "gosu": _w("", operands=1),
    "su-exec": _w("", operands=1),
    "setpriv": _w("--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps "
                  "--ambient-caps --bounding-set --securebits --pdeathsig --selinux-label "
                  "--apparmor-profile --landlock-access --landlock-rule --seccomp-filter"),
    "setuidgid": _w("", operands=1),
    "envuidgid": _w("", operands=1),
    "chpst": _w("-u -U -e -n -l -L -m -d -o -p -f -c -/ -b"),
    "softlimit": _w("-m -a -d -o -p -f -c -r -t -s -l"),
    "envdir": _w("", operands=1),
    # util-linux and process control
    "setsid": _w(),
    "taskset": _w("", operands=1),
    "chrt": _w("", operands=1),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "flock": _w("-w --timeout -E --conflict-exit-code", operands=1, shell="-c --command"),
    # script [FILE]: FILE is the typescript it writes; the command is -c's, else a shell
    "script": _w("-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m "
                 "--logging-format", operands=1, shell="-c --command", bare_shell=True),
    "unshare": _w("--map-user --map-group --setuid --setgid -S -G -R --root -w --wd "
                  "--propagation --setgroups --kill-child --map-users --map-groups "
                  "--mount-proc --mount-binfmt --monotonic --boottime -t --time "
                  "--load-interp"),
    "nsenter": _w("-t --target -S --setuid -G --setgid -r --root -w --wd -N --net-socket"),
    "prlimit": _w("-p --pid"),
    "choom": _w("-n --adjust -p --pid"),
    "uclampset": _w("-m -M -p --pid"),
    # setarch [ARCH] [options] [PROGRAM]: an ARCH is a word the look-ahead reads past
    "setarch": _w(bare_shell=True),
    "linux32": _w(bare_shell=True),
    "linux64": _w(bare_shell=True),
    "i386": _w(bare_shell=True),
    "x86_64": _w(bare_shell=True),
    "numactl": _w("-C -N -m -p -i --cpunodebind --membind --preferred --interleave "
                  "--physcpubind --cpubind"),
    "cgexec": _w("-g"),
    "cpulimit": _w("-l --limit -p --pid -e --exe"),
    "trickle": _w("-u -d -w -t -l -n"),
    "nocache": _w(),
    "eatmydata": _w(),
    "catchsegv": _w(),
    "valgrind": _w(),
    "strace": _w("-e -o -p -s -u -E -a -b -I -O -P -X"),
    "ltrace": _w("-e -o -p -s -u -a -n"),
    "unbuffer": _w(),
    "chronic": _w(),
    "ifne": _w(),
    "faketime": _w("-f", operands=1),
    "fakeroot": _w("-l --lib --faked -s -i -b"),
    "fakechroot": _w("-l --lib -d --elfloader -s --use-system-libs -e --environment -c "
                     "--config-dir"),
    "firejail": _w(),
    "bwrap": _w("--args --userns --userns2 --pidns --uid --gid --hostname --chdir --setenv "
                "--unsetenv --lock-file --sync-fd --remount-ro --exec-label --file-label "
                "--proc --dev --tmpfs --mqueue --dir --seccomp --add-seccomp-fd --block-fd "
                "--userns-block-fd --info-fd --json-status-fd --cap-add --cap-drop --perms "
                "--size --chmod"),
    "proot": _w("-r --rootfs -b --bind -m --mount -w --cwd -q --qemu -k --kernel-release"),
    "proxychains": _w("-f"),
    "proxychains4": _w("-f"),
    "torsocks": _w("-u -p -a -P"),
    "tsocks": _w(),
    "caffeinate": _w("-t -w"),
    "logsave": _w("", operands=1),
    "lckdo": _w("-w", operands=1),
    "setlock": _w("", operands=1),
    "dtach": _w("-c -A -n -r -e -z", operands=0),
    "daemonize": _w("-a -c -e -E -o -p -l -u"),
    "tini": _w("-s -e -p"),
    "dumb-init": _w("-r --rewrite"),
    "hyperfine": _w("-w --warmup -m --min-runs -M --max-runs -r --runs -p --prepare "
                    "-c --cleanup -P --parameter-scan -L --parameter-list -s --style "
                    "--export-json --export-csv --export-markdown -n --command-name",
                    each_script=True),
    "capsh": _w("", dashdash_shell=True),
    # systemd
    "systemd-run": _w(_SYSTEMD_RUN_VALUES),
    "systemd-inhibit": _w("--what --who --why --mode"),
    "systemd-cat": _w("-t --identifier -p --priority --stderr-priority --level-prefix "
                      "--namespace"),
    "systemd-nspawn": _w("-D --directory -i --image -M --machine -u --user --chdir "
                         "-E --setenv --bind --bind-ro --tmpfs --overlay -n --network-veth "
                         "--private-users --capability --drop-capability --property -S "
                         "--slice --register"),
    "systemd-socket-activate": _w("-l --listen -E --setenv --fdname"),
    "dbus-run-session": _w("--config-file --dbus-daemon"),
    "dbus-launch": _w("--config-file --autolaunch"),
    "ssh-agent": _w("-a -E -O -P -t", query="-k -l"),
    "gpg-agent": _w("--homedir --options --log-file"),
    "xvfb-run": _w("-n --server-num -e --error-file -f --auth-file -p --xauth-protocol "
                   "-s --server-args -w --wait"),
    # multi-call binaries: the first operand is the applet
    "busybox": _w(),
    "toybox": _w(),
    # remote and container runners: the wrapped command still runs, so it is analysed
    "ssh": _w("-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w", operands=1,
              joins=True),
    "sshpass": _w("-p -f -d -e -P"),
    "screen": _w("-S -c -e -h -p -T -t -s -Logfile"),
    "watch": _w("-n --interval -d --differences -q --equexit", joins=True),
    "entr": _w(),
    "nodemon": _w("-w --watch -e --ext -i --ignore -d --delay --signal", shell="-x --exec"),
    "watchexec": _w("-w --watch -e --exts -f --filter -i --ignore -d --debounce "
                    "-s --signal --shell --on-busy-update -E --env --workdir",
                    shell="-- "),
    "timelimit": _w("-t -T -s -S"),
    "npx": _w("-p --package --registry --cache --prefix", shell="-c --call"),
    "pnpx": _w("-p --package"),
    "bunx": _w("-p --package --bun"),
    "uvx": _w("--from --with --with-requirements --with-editable --python -p --index "
              "--default-index --index-url --extra-index-url --find-links -f --constraint "
              "-c --override --exclude-newer --directory --project --config-file --cache-dir"),
    "mpirun": _w("-n -np -c -H --host --hostfile -x --map-by --bind-to"),
    "srun": _w("-n --ntasks -N --nodes -p --partition -t --time -c --cpus-per-task "
               "-J --job-name -o --output -e --error --mem -A --account"),
    "start-stop-daemon": _w("-p --pidfile -x --exec -n --name -u --user -g --group "
                            "-c --chuid -r --chroot -d --chdir -N --nicelevel -k --umask "
                            "-s --signal -R --retry -a --startas"),
}
"""Wrapper name -> how to find the command it runs."""

SUB_WRAPPERS: dict[tuple[str, str], Wrapper] = {
    ("npm", "exec"): _w("-p --package -w --workspace --prefix", shell="-c --call"),
    ("npm", "x"): _w("-p --package -w --workspace --prefix", shell="-c --call"),
    ("pnpm", "exec"): _w("-C --dir -F --filter --reporter"),
    ("pnpm", "dlx"): _w("--package -C --dir", shell="-c --shell-mode"),
    ("yarn", "exec"): _w(),
    ("yarn", "dlx"): _w("-p --package"),
    ("bun", "x"): _w("-p --package"),
    ("bun", "exec"): _w(),
    ("pipx", "run"): _w("--spec --python --pip-args --index-url --editable"),
    ("uv", "run"): _w("--with --with-requirements --with-editable --python -p --package "
                      "--extra --group --only-group --index --find-links -f --directory "
                      "--project --env-file --config-file"),
    ("uv", "tool"): _w("--from --with --python -p", operands=1),
    ("poetry", "run"): _w("-C --directory -P --project"),
    ("pdm", "run"): _w("-p --project"),
    ("hatch", "run"): _w(),
    ("pipenv", "run"): _w(),
    ("rye", "run"): _w(),
    ("conda", "run"): _w("-n --name -p --prefix --cwd"),
    ("mamba", "run"): _w("-n --name -p --prefix --cwd"),
    ("micromamba", "run"): _w("-n --name -p --prefix --cwd"),
    ("bundle", "exec"): _w("--gemfile"),
    ("rbenv", "exec"): _w(),
    ("pyenv", "exec"): _w(),
    ("asdf", "exec"): _w(),
    ("mise", "exec"): _w("-C --cd -j --jobs"),
    ("mise", "x"): _w("-C --cd -j --jobs"),
    ("direnv", "exec"): _w("", operands=1),
    ("nix", "develop"): _w("--profile --arg --argstr -f --file --expr", shell="-c --command"),
    ("nix", "shell"): _w("--arg --argstr -f --file --expr", shell="-c --command"),
    ("ip", "netns"): _w("", operands=2),
    ("ip", "vrf"): _w("", operands=2),
    ("docker", "exec"): _w(_DOCKER_EXEC_VALUES, operands=1),
    ("podman", "exec"): _w(_DOCKER_EXEC_VALUES, operands=1),
    ("docker", "run"): _w(_DOCKER_RUN_VALUES, operands=1),
    ("podman", "run"): _w(_DOCKER_RUN_VALUES, operands=1),
    ("kubectl", "exec"): _w("-c --container -n --namespace --context -f --filename "
                            "--pod-running-timeout"),
    ("perf", "stat"): _w(_PERF_VALUES),
    ("perf", "record"): _w(_PERF_VALUES),
    ("perf", "trace"): _w(_PERF_VALUES),
    ("machinectl", "shell"): _w("-E --setenv --uid", operands=1),
    ("flatpak-spawn", ""): _w("--env --directory"),
    ("toolbox", "run"): _w("-c --container -d --distro -r --release"),
    ("distrobox-enter", ""): _w("-n --name -e --exec"),
    ("schroot", ""): _w("-c --chroot -u --user -d --directory -n --session-name"),
}
"""(program, subcommand) -> the wrapper that applies to what follows the subcommand.
`ip netns exec NAME cmd` takes the `exec NAME` as two operands; `uv tool run X` as one."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "busybox-sh", "rbash", "yash", "posh", "ksh93", "oksh", "lksh", "pdksh",
                    "bosh", "hush", "sash"})
"""Shells whose language is close enough to bash that their scripts are scanned as bash."""
FOREIGN_SHELLS = frozenset({"pwsh", "powershell", "nu", "nushell", "xonsh", "elvish", "ion",
                            "oil", "osh", "ysh", "murex", "rc", "es"})
"""Shells of other languages: a script given to them is unparseable."""
SHELL_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
EVALS = frozenset({"eval"})
TRAPS = frozenset({"trap"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
FINDS = frozenset({"find", "gfind", "bfs"})


@dataclass(frozen=True)
class Unwrapped:
    """What a wrapper invocation runs."""

    inner: tuple[Word, ...] = ()
    """The wrapped command's argv (empty when it runs none)."""
    scripts: tuple[Word, ...] = ()
    """Shell strings it runs (su -c, env -S, watch's joined words)."""
    shell_argv: tuple[Word, ...] | None = None
    """Arguments handed to a shell as its own argv (su USER -c CMD)."""
    appends: bool = False
    problem: str = ""
    assignments: tuple[tuple[str, Word], ...] = ()
    """NAME=value settings the wrapper puts in the command's environment (env, sudo)."""


def unwrap(name: str, spec: Wrapper, words: Sequence[Word]) -> Unwrapped:
    """Find the command inside `words` (words[0] is the wrapper's own name).

    Options are read up to the wrapped command, also after the wrapper's own operands
    (`flock FILE -c CMD`, `su - USER -c CMD`); a shell-string option anywhere in that
    stretch is what runs.
    """
    i = 1
    operands = spec.operands
    scripts: list[Word] = []
    assignments: list[tuple[str, Word]] = []
    user_given = False
    while i < len(words):
        word = words[i]
        text = word.text
        if word.may_be_option:
            return Unwrapped(problem=f"{name} runs a command computed at run time")
        if spec.assignments and "=" in text and not text.startswith("-"):
            key, _, value = text.partition("=")
            assignments.append((key, Word(value, dynamic=word.dynamic)))
            i += 1
            continue
        if text == "--" and "--" not in spec.shell_opts:
            i += 1
            if spec.dashdash_shell or (spec.shell_args and not user_given):
                return _done(Unwrapped(scripts=tuple(scripts), shell_argv=tuple(words[i:])),
                             assignments)
            while operands and i < len(words):  # timeout -- 5 cmd
                operands, i = operands - 1, i + 1
            break
        if text == "-" and spec.shell_args:
            i += 1  # su - USER: a login shell
            continue
        if not text.startswith("-") or text == "-":
            if operands:
                operands, i = operands - 1, i + 1
                continue
            break
        shell_value = _shell_option(spec.shell_opts, words, i)
        if shell_value is not None:
            script, taken = shell_value
            if script.dynamic:
                return Unwrapped(problem=f"{name} runs text computed at run time")
            scripts.append(script)
            i += taken
            continue
        step, query, user = _option_step(spec, text)
        if query:
            return Unwrapped(scripts=tuple(scripts))
        if user and spec.shell_args:
            user_given, operands = True, 0  # runuser -u USER: no USER operand follows
        i += step
    if scripts:
        # su -c CMD: the option's script is what runs; trailing words are its arguments.
        return _done(Unwrapped(scripts=tuple(scripts)), assignments)
    return _done(_unwrapped(name, spec, tuple(words[i:]), user_given), assignments)


def _shell_option(options: frozenset[str], words: Sequence[Word], i: int
                  ) -> tuple[Word, int] | None:
    """(value, words taken) when words[i] is a shell-string option: -c CMD, -cCMD, -qc CMD,
    --command=CMD, --command CMD; `--` itself when it is one (watchexec -- CMD ...)."""
    text = words[i].text
    following = words[i + 1] if i + 1 < len(words) else Word("")
    if text == "--" and "--" in options:
        rest = words[i + 1 :]
        return Word(" ".join(w.text for w in rest), dynamic=any(w.dynamic for w in rest)), len(
            words) - i
    if text.startswith("--"):
        opt, eq, attached = text.partition("=")
        if opt not in options:
            return None
        return (Word(attached, dynamic=words[i].dynamic), 1) if eq else (following, 2)
    for j, char in enumerate(text[1:], start=2):
        if "-" + char in options:
            attached = text[j:]
            return (Word(attached, dynamic=words[i].dynamic), 1) if attached else (following, 2)
    return None


def _option_step(spec: Wrapper, text: str) -> tuple[int, bool, bool]:
    """(words the option takes, whether it makes the wrapper run nothing, whether it names
    the user to run as: runuser -u)."""
    user = text in ("-u", "--user") or text.startswith("--user=")
    if text.startswith("--"):
        opt, eq, _ = text.partition("=")
        if opt in spec.query_opts:
            return 1, True, user
        return (2 if (opt in spec.value_opts and not eq) else 1), False, user
    for j, char in enumerate(text[1:]):
        opt = "-" + char
        if opt in spec.query_opts:
            return 1, True, user
        if opt in spec.optional_opts:
            return 1, False, user
        if opt in spec.value_opts:
            user = user or opt == "-u"
            return (2 if j == len(text) - 2 else 1), False, user
    return 1, False, user


def _done(found: Unwrapped, assignments: list[tuple[str, Word]]) -> Unwrapped:
    return replace(found, assignments=tuple(assignments)) if assignments else found


def _unwrapped(name: str, spec: Wrapper, rest: tuple[Word, ...], user_given: bool
               ) -> Unwrapped:
    if not rest:
        return Unwrapped(shell_argv=()) if spec.bare_shell else Unwrapped()
    if spec.shell_args and not user_given:
        return Unwrapped(shell_argv=rest)
    if spec.arg_lists:
        return _with_arg_lists(name, spec, rest)
    if spec.each_script:
        if any(w.dynamic for w in rest):
            return Unwrapped(problem=f"{name} runs text computed at run time")
        return Unwrapped(scripts=rest)
    if spec.joins_args:
        if any(w.dynamic for w in rest):
            return Unwrapped(problem=f"{name} runs text computed at run time")
        return Unwrapped(scripts=(Word(" ".join(w.text for w in rest)),), appends=spec.appends)
    return Unwrapped(inner=rest, appends=spec.appends)


def _with_arg_lists(name: str, spec: Wrapper, rest: tuple[Word, ...]) -> Unwrapped:
    """parallel CMD ::: ARGS runs CMD (through a shell) with ARGS appended; with no CMD,
    each argument is itself a command line."""
    cut = next((k for k, w in enumerate(rest) if w.text in spec.arg_lists), len(rest))
    command, args = rest[:cut], [w for w in rest[cut:] if w.text not in spec.arg_lists]
    texts = command if command else tuple(args)
    if any(w.dynamic for w in texts):
        return Unwrapped(problem=f"{name} runs text computed at run time")
    if command:
        return Unwrapped(scripts=(Word(" ".join(w.text for w in command)),), appends=True)
    return Unwrapped(scripts=tuple(args))


def sub_wrapper(name: str, words: Sequence[Word],
                global_values: frozenset[str]) -> tuple[Wrapper, int] | None:
    """(wrapper, index of its subcommand word) for `npm exec ...`, `docker run ...`, ..."""
    table: Mapping[tuple[str, str], Wrapper] = SUB_WRAPPERS
    direct = table.get((name, ""))
    if direct is not None:
        return direct, 0
    i = 1
    while i < len(words):
        text = words[i].text
        if text.startswith("-"):
            i += 2 if (text in global_values and "=" not in text) else 1
            continue
        spec = table.get((name, text))
        return (spec, i) if spec is not None else None
    return None
