"""Each interpreter's command-line options (as documented by its --help and man page)."""

from __future__ import annotations

from gateway.policy.shell.interp.argscan import spec


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


PYTHON = spec(
    flags="-b -B -d -E -h -i -I -O -P -q -s -S -u -v -V -x -R -3 -t -U "
          "--help --version --help-env --help-xoptions --help-all",
    values="-c -m -W -X -Q --check-hash-based-pycs",
    ends="-c -m",
)
PYTHON_QUERIES = frozenset({"-h", "-V", "--help", "--version", "--help-env", "--help-xoptions",
                            "--help-all"})

TIMEIT = spec(flags="-p -v -h --process --verbose --help",
              values="-n -r -s -u --number --repeat --setup --unit",
              aliases={"--setup": "-s"})

PERL = spec(
    flags="-a -c -f -g -h -n -p -s -S -t -T -u -U -v -w -W -X",
    values="-e -E -I",
    rest={"-0": r"x[0-9a-fA-F]*|[0-7]*", "-l": "[0-7]*", "-C": "[0-9]*[IOEioSDALa]*",
          "-D": "[0-9A-Za-z]*", "-d": "t?(?::.*)?", "-i": ".*", "-x": ".*", "-V": ".*",
          "-F": ".*", "-M": ".*", "-m": ".*"},
)
PERL_QUERIES = frozenset({"-v", "-h", "-V"})

RUBY = spec(
    flags="-a -c -d -h -l -n -p -s -S -v -w -y -U --verbose --version --copyright --help "
          "--jit --yjit --rjit --disable-gems --enable-gems --debug",
    values="-C -e -E -I -r --encoding --external-encoding --internal-encoding --enable "
           "--disable --dump --backtrace-limit --crash-report --parser",
    rest={"-0": "[0-7]*", "-i": ".*", "-x": ".*", "-W": "[0-2]|:[\\w-]+|", "-K": "[A-Za-z]?",
          "-T": "[0-9]*", "-F": ".*"},
    aliases={"--debug": "-d"},
    flag_pattern=r"--(yjit|rjit|jit)-",
)
RUBY_QUERIES = frozenset({"-h", "-v", "--help", "--version", "--copyright"})

_NODE_VALUES = (
    "--build-snapshot-config --conditions --cpu-prof-dir --cpu-prof-interval --cpu-prof-name "
    "--diagnostic-dir --disable-proto --disable-warning --dns-result-order --env-file "
    "--env-file-if-exists --eval --experimental-default-type --loader --experimental-loader "
    "--experimental-policy --experimental-sea-config --experimental-config-file "
    "--heap-prof-dir --heap-prof-interval --heap-prof-name --heapsnapshot-near-heap-limit "
    "--heapsnapshot-signal --icu-data-dir --import --input-type --debug-port --inspect-port "
    "--inspect-publish-uid --max-http-header-size "
    "--network-family-autoselection-attempt-timeout --openssl-config --policy-integrity "
    "--redirect-warnings --report-directory --report-dir --report-filename --report-signal "
    "--require --run --secure-heap --secure-heap-min --snapshot-blob --test-concurrency "
    "--test-name-pattern --test-skip-pattern --test-reporter --test-reporter-destination "
    "--test-shard --test-timeout --test-coverage-include --test-coverage-exclude --title "
    "--tls-cipher-list --tls-keylog --trace-event-categories --trace-event-file-pattern "
    "--trace-require-module --unhandled-rejections --use-largepages --v8-pool-size "
    "--watch-path --localstorage-file --stack-trace-limit -e -r -C"
)
NODE = spec(
    flags="-c -i -h -v --check --interactive --help --version --v8-options --test --watch "
          "--prof --prof-process --cpu-prof --heap-prof --jitless --expose-gc --frozen-intrinsics "
          "--pending-deprecation --throw-deprecation --preserve-symlinks --preserve-symlinks-main "
          "--enable-source-maps --abort-on-uncaught-exception --build-snapshot --completion-bash "
          "--enable-fips --force-fips --insecure-http-parser --openssl-legacy-provider "
          "--openssl-shared-config --use-bundled-ca --use-openssl-ca --zero-fill-buffers "
          "--disallow-code-generation-from-strings --node-memory-debug --permission "
          "--force-context-aware --huge-max-old-generation-size --interpreted-frames-native-stack "
          "--watch-preserve-output --test-only --test-force-exit --experimental-test-coverage",
    values=_NODE_VALUES,
    optional="-p --print",
    aliases={"--eval": "-e", "--require": "-r", "--conditions": "-C", "--print": "-p",
             "--check": "-c", "--interactive": "-i", "--help": "-h", "--version": "-v",
             "--experimental-loader": "--loader"},
    clusters=False,
    flag_pattern=r"--(no-|experimental-|trace-|harmony|allow-|tls-|report-|inspect|enable-|"
                 r"max-|stack-|expose-|use-|single-threaded|verify-)",
)
NODE_QUERIES = frozenset({"-h", "-v", "--v8-options", "--completion-bash"})
NODE_LOADS = ("-r", "--import", "--loader", "--env-file", "--env-file-if-exists",
              "--experimental-policy", "--snapshot-blob")

_DENO_FLAGS = (
    "-A -R -W -N -E -S -P -I -q -p -h -V --quiet --print --help --version --no-check --no-remote "
    "--no-npm --no-config --no-lock --cached-only --watch --no-clear-screen --inspect "
    "--inspect-brk --inspect-wait --reload --unstable --allow-all --check --frozen "
    "--no-prompt --node-modules-dir --vendor --env-file --lock --hmr --strace-ops --coverage "
    "--no-code-cache --unsafely-ignore-certificate-errors"
)
DENO = spec(
    flags=_DENO_FLAGS,
    values="-c -L --config --log-level --import-map --cert --location --ext --seed --preload "
           "--conditions --minimum-dependency-age --eval --eval-file",
    aliases={"--print": "-p", "--config": "-c", "--log-level": "-L", "--quiet": "-q",
             "--allow-all": "-A"},
    flag_pattern=r"--(allow-|deny-|unstable|no-|inspect|reload|watch|lock|env-file|check|v8-flags|"
                 r"tunnel|permission-set|coverage)",
)
DENO_SUBCOMMANDS = _words(
    "add approve-scripts audit bench bundle cache check clean compile completions coverage "
    "deploy doc fmt info init install jupyter lint lsp outdated publish remove serve task test "
    "types uninstall update upgrade vendor x help"
)

BUN = spec(
    flags="-b -i -h -v --bun --hot --watch --smol --silent --no-install --prefer-offline "
          "--prefer-latest --if-present --no-clear-screen --expose-gc --no-deprecation "
          "--throw-deprecation --zero-fill-buffers --no-addons --revision --version --help "
          "--no-env-file --no-macros --no-orphans",
    values="-e -p -r -c -d -l -F --eval --print --preload --require --import --cwd --env-file "
           "--config --tsconfig-override --define --loader --main-fields --extension-order "
           "--port --conditions --title --unhandled-rejections --console-depth "
           "--fetch-preconnect --max-http-header-size --dns-result-order --user-agent "
           "--elide-lines --filter --shell --install --jsx-factory --jsx-fragment "
           "--jsx-import-source --jsx-runtime",
    aliases={"--eval": "-e", "--print": "-p", "--preload": "-r", "--require": "-r",
             "--import": "-r", "--config": "-c", "--define": "-d", "--loader": "-l",
             "--filter": "-F", "--version": "-v", "--help": "-h"},
    flag_pattern=r"--(inspect|no-|prefer-|experimental-|use-|redis-|sql-)",
)
BUN_SUBCOMMANDS = _words(
    "install i add a remove rm update link unlink pm init create c upgrade build test outdated "
    "publish audit info patch patch-commit why x pack ci"
)
SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")

PHP = spec(
    flags="-a -C -e -h -H -i -l -m -n -q -s -v -w",
    values="-B -c -d -E -f -F -r -R -S -t -z --rf --rc --re --rz --ri",
    aliases={"--interactive": "-a", "--no-chdir": "-C", "--no-header": "-q", "--hide-args": "-H",
             "--syntax-check": "-l", "--modules": "-m", "--info": "-i", "--strip": "-w",
             "--version": "-v", "--help": "-h", "--syntax-highlight": "-s",
             "--no-php-ini": "-n", "--php-ini": "-c", "--define": "-d",
             "--process-begin": "-B", "--process-code": "-R", "--process-file": "-F",
             "--process-end": "-E", "--file": "-f", "--run": "-r", "--server": "-S",
             "--docroot": "-t", "--zend-extension": "-z", "--rfunction": "--rf",
             "--rclass": "--rc", "--rextension": "--re", "--rzendextension": "--rz",
             "--rextinfo": "--ri", "--ini": "--ini"},
)
PHP_NO_RUN = frozenset({"-h", "-i", "-m", "-v", "-l", "-s", "-w", "--ini", "--rf", "--rc", "--re",
                        "--rz", "--ri", "-S"})

LUA = spec(flags="-i -v -E -W", values="-e -l -j -b", rest={"-O": ".*"}, clusters=False)

OSASCRIPT = spec(flags="-i", values="-e -l -s")

RSCRIPT = spec(
    flags="--help --version --verbose --vanilla --no-environ --no-site-file --no-init-file "
          "--no-restore --no-save --save --restore --no-echo --quiet --silent --slave "
          "--no-readline --interactive --args -q -s",
    values="-e -f --file",
    aliases={"--file": "-f"},
    flag_pattern=r"--(no-|min-|max-|default-packages|encoding|gui|arch)",
)

JULIA = spec(
    flags="-h -v -i -q --help --version --quiet --help-hidden --interactive --project "
          "--code-coverage --track-allocation --optimize --debug-info",
    values="-e -E -L -J -p -t -C -H -m --eval --print --load --sysimage --procs --cpu-target "
           "--home --machine-file --module --threads --gcthreads --startup-file "
           "--handle-signals --sysimage-native-code --compiled-modules --pkgimages --banner "
           "--color --history-file --depwarn --warn-overwrite --warn-scope --min-optlevel "
           "--inline --check-bounds --math-mode --bug-report --heap-size-hint --image-codegen "
           "--permalloc-pkgimg --trim --worker --bind-to",
    rest={"-O": "[0-3]?", "-g": "[0-2]?"},
    aliases={"--eval": "-e", "--print": "-E", "--load": "-L", "--sysimage": "-J",
             "--procs": "-p", "--module": "-m", "--threads": "-t", "--cpu-target": "-C",
             "--home": "-H"},
)
