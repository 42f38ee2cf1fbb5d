"""Static checks of deploy/: the Dockerfile, docker-compose, the collector config and k8s/.

No container engine or cluster is needed: every YAML file is parsed (duplicate keys are an
error), and the structural facts the service relies on are asserted across files (a probe's
port resolves to the container port, a Secret the Deployment reads defines that key, ...).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from gateway.compaction import CompactionSettings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
PORT = 8787
STATE_DIR = "/var/lib/agent-gateway"
OTEL_ENV = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4318",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_SERVICE_NAME": "agent-gateway",
}


# --- loading ---------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (the last one would silently win)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)  # type: ignore[no-untyped-call]
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_all(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as fh:
        return [doc for doc in yaml.load_all(fh, Loader=_UniqueKeyLoader) if doc is not None]


def _load_one(path: Path) -> dict[str, Any]:
    docs = _load_all(path)
    assert len(docs) == 1, f"{path}: expected one YAML document, got {len(docs)}"
    assert isinstance(docs[0], dict), f"{path}: top level is not a mapping"
    return docs[0]


YAML_FILES = sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load_one(DEPLOY / "docker-compose.yaml")


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    svcs = compose["services"]
    assert isinstance(svcs, dict)
    return svcs


@pytest.fixture(scope="module")
def k8s_docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in _load_all(path):
            assert isinstance(doc, dict), f"{path}: a document is not a mapping"
            assert doc.get("apiVersion") and doc.get("kind"), f"{path}: apiVersion/kind missing"
            docs.append(doc)
    return docs


def _of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _only(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = _of_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def deployment(k8s_docs: list[dict[str, Any]]) -> dict[str, Any]:
    return _only(k8s_docs, "Deployment")


@pytest.fixture(scope="module")
def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    c: dict[str, Any] = containers[0]
    return c


@pytest.fixture(scope="module")
def configmaps(k8s_docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _of_kind(k8s_docs, "ConfigMap")}


@pytest.fixture(scope="module")
def secrets(k8s_docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for doc in _of_kind(k8s_docs, "Secret"):
        out[doc["metadata"]["name"]] = {**doc.get("data", {}), **doc.get("stringData", {})}
    return out


# --- every YAML file -------------------------------------------------------------------------


def test_deploy_has_the_expected_files() -> None:
    for name in (
        "Dockerfile",
        "docker-compose.yaml",
        "otel-collector.yaml",
        "compose-policy.yaml",
        "README.md",
        "k8s/kustomization.yaml",
    ):
        assert (DEPLOY / name).is_file(), f"deploy/{name} is missing"
    assert len(YAML_FILES) >= 10


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_yaml_parses_without_duplicate_keys(path: Path) -> None:
    docs = _load_all(path)
    assert docs, f"{path}: no YAML documents"


def test_duplicate_key_loader_rejects_duplicates() -> None:
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key 'a'"):
        yaml.load("a: 1\nb: 2\na: 3\n", Loader=_UniqueKeyLoader)


# --- Dockerfile ------------------------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def _expand(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m[1] or m[2], m[0]), value)


def _final_stage() -> tuple[str, list[tuple[str, str]]]:
    """The last stage's base image (ARGs expanded) and its instructions."""
    instrs = _instructions((DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    global_args: dict[str, str] = {}
    stage_start = None
    for i, (word, rest) in enumerate(instrs):
        if word == "ARG" and stage_start is None and "=" in rest:
            k, _, v = rest.partition("=")
            global_args[k] = v
        if word == "FROM":
            stage_start = i
    assert stage_start is not None, "Dockerfile has no FROM"
    base = _expand(instrs[stage_start][1].split()[0], global_args)
    stage = instrs[stage_start + 1 :]
    stage_args = dict(global_args)
    for word, rest in stage:
        if word == "ARG" and "=" in rest:
            k, _, v = rest.partition("=")
            stage_args[k] = v
    return base, [(w, _expand(r, stage_args)) for w, r in stage]


def _exec_form(rest: str) -> list[str]:
    assert rest.startswith("["), f"use the exec (JSON) form, not {rest!r}"
    value = yaml.safe_load(rest)
    assert isinstance(value, list)
    return [str(v) for v in value]


def test_dockerfile_base_is_python_312_slim() -> None:
    base, _ = _final_stage()
    assert re.fullmatch(r"python:3\.12(\.\d+)?-slim(-\w+)?", base), base


def test_dockerfile_installs_the_package() -> None:
    instrs = _instructions((DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    runs = [rest for word, rest in instrs if word == "RUN"]
    package = r"\bpip install (?:--?\S+ )*'?\.(\[[\w,]+\])?'?(?:\s|$)"
    installs = [extras for r in runs for extras in re.findall(package, r)]
    assert installs, runs
    # Both setups archive to an S3-compatible bucket: the image carries the s3 extra.
    assert any("s3" in extras for extras in installs), installs
    # --redis-url (session owners, team budgets) needs the redis extra in the image.
    assert any("redis" in extras for extras in installs), installs
    copied = " ".join(rest for word, rest in instrs if word == "COPY")
    for needed in ("pyproject.toml", "README.md", "gateway"):
        assert needed in copied, f"the package build needs {needed} copied in"


def test_dockerfile_runs_as_non_root(deployment: dict[str, Any]) -> None:
    _, stage = _final_stage()
    users = [rest for word, rest in stage if word == "USER"]
    assert users, "the final stage sets no USER (runs as root)"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), user
    # Numeric, so Kubernetes runAsNonRoot can verify it; the same uid as the Deployment's.
    assert user.isdigit(), f"USER {user!r} is not numeric"
    pod_sc = deployment["spec"]["template"]["spec"]["securityContext"]
    assert int(user) == pod_sc["runAsUser"]


def test_dockerfile_entrypoint_is_agent_gateway_serve() -> None:
    _, stage = _final_stage()
    entry = [_exec_form(r) for w, r in stage if w == "ENTRYPOINT"]
    cmd = [_exec_form(r) for w, r in stage if w == "CMD"]
    argv = (entry[-1] if entry else []) + (cmd[-1] if cmd else [])
    assert argv[:2] == ["agent-gateway", "serve"], argv
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    assert argv[argv.index("--port") + 1] == str(PORT)
    assert argv[argv.index("--policy") + 1] == "/etc/agent-gateway/policies/org.yaml"
    # Overridable: `docker run IMAGE serve ...` replaces CMD, the entrypoint stays.
    assert entry and entry[-1] == ["agent-gateway"]


def test_dockerfile_port_state_and_healthcheck() -> None:
    _, stage = _final_stage()
    exposed = " ".join(r for w, r in stage if w == "EXPOSE").split()
    assert str(PORT) in [p.split("/")[0] for p in exposed]
    env = " ".join(r for w, r in stage if w == "ENV")
    assert re.search(rf"\bAGENT_GATEWAY_HOME={re.escape(STATE_DIR)}(\s|$)", env), env
    health = [r for w, r in stage if w == "HEALTHCHECK"]
    assert health and f"{PORT}/healthz" in health[-1], health


def _dockerignore_excludes(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents wins."""

    def to_regex(pattern: str) -> re.Pattern[str]:
        out = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out, i = out + "(.*/)?", i + 3
            elif pattern.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pattern[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif pattern[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(pattern[i]), i + 1
        return re.compile(out + "$")

    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for raw in patterns:
        negate = raw.startswith("!")
        pat = str(PurePosixPath(raw.lstrip("!").strip("/")))
        rx = to_regex(pat)
        if any(rx.match(c) for c in candidates):
            excluded = not negate
    return excluded


def test_dockerignore_keeps_what_the_build_copies() -> None:
    ignore = DEPLOY / "Dockerfile.dockerignore"
    if not ignore.exists():
        pytest.skip("no Dockerfile.dockerignore")
    patterns = [
        line.strip()
        for line in ignore.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    for kept in (
        "pyproject.toml",
        "README.md",
        "gateway/cli/main.py",
        "gateway/telemetry/prices.yaml",
        "policies/org.yaml",
    ):
        assert not _dockerignore_excludes(kept, patterns), f"{kept} is excluded from the context"
    for dropped in (
        ".venv/bin/python",
        ".git/HEAD",
        "tests/conftest.py",
        "gateway/__pycache__/cli.cpython-312.pyc",
    ):
        assert _dockerignore_excludes(dropped, patterns), f"{dropped} is sent to the daemon"


def test_dockerignore_matcher_semantics() -> None:
    assert _dockerignore_excludes("a/b.py", ["*"])
    assert not _dockerignore_excludes("a/b.py", ["*", "!a"])
    assert _dockerignore_excludes("a/__pycache__/x.pyc", ["*", "!a", "**/__pycache__"])
    assert not _dockerignore_excludes("b.py", ["a"])


# --- docker-compose --------------------------------------------------------------------------

_INTERP = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def _interpolate(value: str) -> str:
    """Resolve `${VAR:-default}` to its default (the value with no environment set)."""
    return _INTERP.sub(lambda m: m[2] or "", value)


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: _interpolate(str(v)) for k, v in env.items()}


def _command(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command", [])
    return [_interpolate(str(c)) for c in (shlex.split(cmd) if isinstance(cmd, str) else cmd)]


def _binds(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> host path for bind mounts given relative to deploy/."""
    out = {}
    for vol in service.get("volumes", []):
        src, dst = vol.split(":")[:2] if isinstance(vol, str) else (vol["source"], vol["target"])
        if src.startswith("."):
            out[dst] = src
    return out


def test_compose_has_the_stack(services: dict[str, Any]) -> None:
    assert {"otel-collector", "jaeger", "minio", "gateway"} <= set(services)


def test_compose_gateway_builds_from_the_dockerfile(services: dict[str, Any]) -> None:
    build = services["gateway"]["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert context == REPO, "the build context must be the repository root"
    assert (context / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"


def test_compose_gateway_env(services: dict[str, Any]) -> None:
    env = _env(services["gateway"])
    for key, value in OTEL_ENV.items():
        assert env.get(key) == value, key
    # Token from the environment with a dev default: serve refuses 0.0.0.0 without one.
    raw = str(services["gateway"]["environment"]["AGENT_GATEWAY_TOKEN"])
    assert raw.startswith("${AGENT_GATEWAY_TOKEN:-"), raw
    assert env["AGENT_GATEWAY_TOKEN"], "the dev default token is empty"
    assert env["AWS_ACCESS_KEY_ID"] == _env(services["minio"])["MINIO_ROOT_USER"]
    assert env["AWS_SECRET_ACCESS_KEY"] == _env(services["minio"])["MINIO_ROOT_PASSWORD"]
    assert env.get("AGENT_GATEWAY_HOME", STATE_DIR) == STATE_DIR


def test_compose_gateway_serves_on_all_interfaces(services: dict[str, Any]) -> None:
    cmd = _command(services["gateway"])
    assert cmd[0] == "serve"
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    assert cmd[cmd.index("--port") + 1] == str(PORT)
    assert any(str(p).split(":")[-1] == str(PORT) for p in services["gateway"]["ports"])


def test_compose_policies_are_mounted_and_loaded(services: dict[str, Any]) -> None:
    gw = services["gateway"]
    binds = _binds(gw)
    assert "../policies" in binds.values() or "../policies/" in binds.values(), binds
    assert any(src.endswith("compose-policy.yaml") for src in binds.values()), binds
    cmd = _command(gw)
    policy_args = [cmd[i + 1] for i, c in enumerate(cmd) if c == "--policy"]
    assert policy_args, "serve gets no --policy"
    for arg in policy_args:
        mount = next((m for m in binds if arg == m or arg.startswith(m.rstrip("/") + "/")), None)
        assert mount, f"--policy {arg} is not in a mounted path"
        host = (DEPLOY / binds[mount] / PurePosixPath(arg).relative_to(mount)).resolve()
        if binds[mount] != "../policies":  # policies/ is another engineer's; may be absent
            assert host.is_file(), f"--policy {arg} -> {host} does not exist"
    compose_policy_target = next(m for m, s in binds.items() if s.endswith("compose-policy.yaml"))
    assert compose_policy_target in policy_args


def test_compose_policy_sets_the_s3_store_at_minio(services: dict[str, Any]) -> None:
    doc = _load_one(DEPLOY / "compose-policy.yaml")
    settings = CompactionSettings.model_validate(doc["compaction"])
    assert settings.store == "s3"
    assert settings.bucket == "agent-archives"
    assert settings.region == "us-east-1"
    endpoint = urlsplit(settings.endpoint_url or "")
    assert endpoint.hostname == "minio" and endpoint.port == 9000
    assert endpoint.hostname in services


def test_compose_creates_the_bucket(services: dict[str, Any]) -> None:
    init = [
        (name, svc)
        for name, svc in services.items()
        if str(svc.get("image", "")).split(":")[0].endswith("minio/mc")
    ]
    assert len(init) == 1, "one one-shot mc service"
    name, svc = init[0]
    script = " ".join(_command(svc))
    assert re.search(r"mc mb\b.*\blocal/agent-archives\b", script), script
    assert "http://minio:9000" in script
    assert svc.get("restart", "no") == "no"
    assert svc["depends_on"]["minio"]["condition"] == "service_healthy"
    assert "healthcheck" in services["minio"]
    assert services["gateway"]["depends_on"][name]["condition"] == (
        "service_completed_successfully"
    )


def test_compose_jaeger_and_collector(services: dict[str, Any]) -> None:
    jaeger = services["jaeger"]
    assert "jaegertracing/" in jaeger["image"]
    if "all-in-one" in jaeger["image"]:
        assert _env(jaeger).get("COLLECTOR_OTLP_ENABLED") == "true"
    assert any(str(p).startswith("16686:") for p in jaeger["ports"])

    col = services["otel-collector"]
    assert col["image"].startswith("otel/opentelemetry-collector-contrib:")
    binds = _binds(col)
    target = next(m for m, s in binds.items() if s.endswith("otel-collector.yaml"))
    assert f"--config={target}" in _command(col)
    published = {str(p).split(":")[-1] for p in col.get("ports", [])}
    assert {"4317", "4318"} <= published


def test_compose_images_are_pinned(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        if "image" in svc and "build" not in svc:
            tag = svc["image"].rpartition(":")[2]
            assert tag and tag != "latest" and "/" not in tag, f"{name}: pin {svc['image']}"


# --- collector config ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def collector() -> dict[str, Any]:
    return _load_one(DEPLOY / "otel-collector.yaml")


def test_collector_receives_otlp_grpc_and_http(collector: dict[str, Any]) -> None:
    protocols = collector["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert protocols["http"]["endpoint"] == "0.0.0.0:4318"


def test_collector_traces_pipeline_goes_to_jaeger(
    collector: dict[str, Any], services: dict[str, Any]
) -> None:
    traces = collector["service"]["pipelines"]["traces"]
    assert "otlp" in traces["receivers"]
    assert "batch" in traces["processors"]
    assert "batch" in collector["processors"]
    jaeger_exporters = [
        name
        for name in traces["exporters"]
        if name.split("/")[0] == "otlp"
        and collector["exporters"][name]["endpoint"] == "jaeger:4317"
    ]
    assert jaeger_exporters, traces["exporters"]
    assert collector["exporters"][jaeger_exporters[0]]["tls"]["insecure"] is True
    assert any(name.split("/")[0] == "debug" for name in traces["exporters"])
    assert "jaeger" in services


def test_collector_pipeline_components_are_defined(collector: dict[str, Any]) -> None:
    for pipeline in collector["service"]["pipelines"].values():
        for section in ("receivers", "processors", "exporters"):
            for name in pipeline.get(section, []):
                assert name in collector[section], f"{section}.{name} is not defined"
    for name in collector["service"].get("extensions", []):
        assert name in collector["extensions"]


# --- Kubernetes ------------------------------------------------------------------------------


def test_kustomization_lists_every_manifest() -> None:
    kust = _load_one(K8S / "kustomization.yaml")
    listed = set(kust["resources"])
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


def test_namespace_matches_kustomization(k8s_docs: list[dict[str, Any]]) -> None:
    kust = _load_one(K8S / "kustomization.yaml")
    assert _only(k8s_docs, "Namespace")["metadata"]["name"] == kust["namespace"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_renders() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(out.stdout) if d)
    assert kinds == sorted(
        [
            "Namespace",
            "ConfigMap",
            "Secret",  # tokens
            "Secret",  # S3 credentials
            "Secret",  # the audit key
            "Secret",  # the Redis URL
            "Deployment",
            "Service",
            "HorizontalPodAutoscaler",
            "PodDisruptionBudget",
        ]
    )


def _pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _container_port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    return next(p["containerPort"] for p in container["ports"] if p.get("name") == port)


def test_deployment_replicas_and_selector(deployment: dict[str, Any]) -> None:
    assert deployment["apiVersion"] == "apps/v1"
    assert deployment["spec"]["replicas"] >= 2
    assert _selects(deployment["spec"]["selector"]["matchLabels"], _pod_labels(deployment))


def test_deployment_security(deployment: dict[str, Any], container: dict[str, Any]) -> None:
    pod_sc = deployment["spec"]["template"]["spec"]["securityContext"]
    c_sc = container["securityContext"]
    assert pod_sc.get("runAsNonRoot") is True or c_sc.get("runAsNonRoot") is True
    assert pod_sc.get("runAsUser", c_sc.get("runAsUser")) not in (None, 0)
    assert c_sc["readOnlyRootFilesystem"] is True
    assert c_sc["allowPrivilegeEscalation"] is False
    assert "ALL" in c_sc["capabilities"]["drop"]


def _env_map(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def test_deployment_state_dir_is_an_empty_dir(
    deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    env = _env_map(container)
    home = env["AGENT_GATEWAY_HOME"]["value"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert home in mounts, f"AGENT_GATEWAY_HOME {home} is not mounted"
    assert "emptyDir" in volumes[mounts[home]["name"]]
    assert not mounts[home].get("readOnly", False)
    # With a read-only root, the writable places must all be mounts.
    assert "/tmp" in mounts


def test_deployment_resources(container: dict[str, Any]) -> None:
    for section in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            assert container["resources"][section][resource], f"{section}.{resource}"


def test_deployment_probes(container: dict[str, Any]) -> None:
    live = container["livenessProbe"]["httpGet"]
    ready = container["readinessProbe"]["httpGet"]
    assert live["path"] == "/healthz"
    assert ready["path"] == "/readyz"
    assert _container_port(container, live["port"]) == PORT
    assert _container_port(container, ready["port"]) == PORT


def test_deployment_serves_the_configmap_policies(
    deployment: dict[str, Any], container: dict[str, Any], configmaps: dict[str, Any]
) -> None:
    args = [*container.get("command", []), *container["args"]]
    assert args[0] == "serve"
    assert args[args.index("--host") + 1] == "0.0.0.0"
    assert args[args.index("--port") + 1] == str(PORT)
    policy_args = [args[i + 1] for i, a in enumerate(args) if a == "--policy"]
    assert policy_args
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = container["volumeMounts"]
    for arg in policy_args:
        path = PurePosixPath(arg)
        mount = next(m for m in mounts if PurePosixPath(m["mountPath"]) == path.parent)
        cm_name = volumes[mount["name"]]["configMap"]["name"]
        assert path.name in configmaps[cm_name]["data"], f"{arg} is not in ConfigMap {cm_name}"


def test_deployment_token_from_secret(
    container: dict[str, Any], secrets: dict[str, dict[str, str]]
) -> None:
    env = _env_map(container)
    assert "AGENT_GATEWAY_TOKEN" in env or "AGENT_GATEWAY_TOKENS_FILE" in env
    if "AGENT_GATEWAY_TOKEN" in env:
        ref = env["AGENT_GATEWAY_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert ref["key"] in secrets[ref["name"]], ref
        assert "value" not in env["AGENT_GATEWAY_TOKEN"]


def test_deployment_aws_credentials_from_secret(
    container: dict[str, Any], secrets: dict[str, dict[str, str]]
) -> None:
    env = _env_map(container)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        ref = env[key]["valueFrom"]["secretKeyRef"]
        assert ref["key"] in secrets[ref["name"]], ref


def test_deployment_otel_env(container: dict[str, Any]) -> None:
    env = {k: v.get("value") for k, v in _env_map(container).items()}
    endpoint = urlsplit(env["OTEL_EXPORTER_OTLP_ENDPOINT"] or "")
    assert endpoint.scheme == "http" and endpoint.port == 4318
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    assert env["OTEL_SERVICE_NAME"] == "agent-gateway"


def test_secrets_are_placeholders(secrets: dict[str, dict[str, str]]) -> None:
    assert secrets
    for name, data in secrets.items():
        for key, value in data.items():
            assert re.search(r"placeholder|replace-me|changeme", value, re.I), (
                f"Secret {name}.{key} does not look like a placeholder"
            )


def test_service(
    k8s_docs: list[dict[str, Any]], deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    svc = _only(k8s_docs, "Service")
    assert svc["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert _selects(svc["spec"]["selector"], _pod_labels(deployment))
    ports = svc["spec"]["ports"]
    assert [p["port"] for p in ports] == [PORT]
    assert _container_port(container, ports[0].get("targetPort", PORT)) == PORT


def _policy_files(configmaps: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for cm in configmaps.values():
        for key, text in cm.get("data", {}).items():
            if key.endswith((".yaml", ".yml")):
                doc = yaml.load(text, Loader=_UniqueKeyLoader)
                assert isinstance(doc, dict), key
                yield key, doc


def test_configmap_holds_the_policy_layers(configmaps: dict[str, Any]) -> None:
    policies = dict(_policy_files(configmaps))
    assert {"org.yaml", "team.yaml", "project.yaml"} <= set(policies)
    for name, doc in policies.items():
        perms = doc.get("permissions", {})
        assert set(perms) <= {"deny", "ask", "allow"}, name
        for rules in perms.values():
            assert all(isinstance(r, str) and r for r in rules), name


def test_configmap_archive_store_is_s3(configmaps: dict[str, Any]) -> None:
    stores = [
        CompactionSettings.model_validate(doc["compaction"])
        for _, doc in _policy_files(configmaps)
        if "compaction" in doc
    ]
    assert stores, "no policy file sets a compaction store"
    for settings in stores:
        assert settings.store == "s3" and settings.bucket, settings


def test_hpa(k8s_docs: list[dict[str, Any]], deployment: dict[str, Any]) -> None:
    hpa = _only(k8s_docs, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    spec = hpa["spec"]
    target = spec["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert spec["minReplicas"] >= 2
    assert spec["maxReplicas"] >= spec["minReplicas"]
    assert spec["maxReplicas"] == 10
    cpu = [m for m in spec["metrics"] if m["type"] == "Resource" and m["resource"]["name"] == "cpu"]
    assert cpu and cpu[0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 70}


def test_pdb(k8s_docs: list[dict[str, Any]], deployment: dict[str, Any]) -> None:
    pdb = _only(k8s_docs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert _selects(pdb["spec"]["selector"]["matchLabels"], _pod_labels(deployment))
    if "minAvailable" in pdb["spec"]:
        assert pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]


# --- README ----------------------------------------------------------------------------------


def test_readme_covers_running_and_viewing() -> None:
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for needle in (
        "docker compose -f deploy/docker-compose.yaml up",
        "http://localhost:16686",
        "ANTHROPIC_BASE_URL=http://localhost:8787",
        "agent-gateway settings --url http://localhost:8787",
        "kubectl apply -k deploy/k8s",
        "invoke_agent claude-code",
        "execute_tool",
        "compaction",
    ):
        assert needle in text, needle


def test_shipped_policies_load_with_the_real_policy_loader(tmp_path: Path) -> None:
    """The ConfigMap's layered policies and the compose store layer must pass `policy check`."""
    from gateway.policy import load_policy

    configmaps = [d for d in _load_docs_for_policy_test() if d.get("kind") == "ConfigMap"]
    data = {k: v for cm in configmaps for k, v in (cm.get("data") or {}).items()}
    ordered = []
    for name in ("org.yaml", "team.yaml", "project.yaml"):
        path = tmp_path / name
        path.write_text(data[name])
        ordered.append(str(path))
    assert load_policy(ordered).compaction_settings().store == "s3"
    repo = Path(__file__).resolve().parents[2]
    compose = load_policy(
        [str(repo / "policies/org.yaml"), str(repo / "deploy/compose-policy.yaml")]
    )
    assert compose.compaction_settings().endpoint_url == "http://minio:9000"


def _load_docs_for_policy_test() -> list[dict[str, Any]]:
    path = Path(__file__).resolve().parents[2] / "deploy/k8s/configmap.yaml"
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def test_collector_keeps_the_audit_trail_as_otlp_json_lines(
    collector: dict[str, Any], services: dict[str, Any]
) -> None:
    logs = collector["service"]["pipelines"]["logs"]
    assert "otlp" in logs["receivers"]
    files = [name for name in logs["exporters"] if name.split("/")[0] == "file"]
    assert files, logs["exporters"]
    path = collector["exporters"][files[0]]["path"]
    col = services["otel-collector"]
    mounted = [str(v).split(":")[1] for v in col["volumes"] if not str(v).startswith("./")]
    assert any(path.startswith(m + "/") for m in mounted), (path, mounted)
    assert _env(services["gateway"]).get("OTEL_LOGS_EXPORTER") == "otlp"


def test_deployment_audit_key_from_a_secret_outside_the_state(
    deployment: dict[str, Any], container: dict[str, Any], secrets: dict[str, dict[str, str]]
) -> None:
    env = {e["name"]: e for e in container["env"]}
    key_file = env["AGENT_GATEWAY_AUDIT_KEY_FILE"]["value"]
    state = env["AGENT_GATEWAY_HOME"]["value"]
    assert not key_file.startswith(state.rstrip("/") + "/")
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    mount = mounts[key_file.rsplit("/", 1)[0]]
    assert mount["readOnly"] is True
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"]
                  if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] in secrets
    assert key_file.rsplit("/", 1)[1] in secrets[volume["secret"]["secretName"]]
    assert env["OTEL_LOGS_EXPORTER"]["value"] == "otlp"
