"""Static checks of the metrics deployment: the Grafana dashboard, the Prometheus alert rules
and scrape config, the compose services that run them, and the Kubernetes scrape annotations
and Redis reference. Every metric and label a query names is one the gateway exposes: the
names come from a Prometheus text the gateway's own metrics code renders."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.telemetry import metric_names as M
from gateway.telemetry.metrics import MetricSettings, open_metrics
from gateway.telemetry.pricing import Usage
from gateway.tenancy.tokens import read_budgets
from gateway.types import Decision
from tests.prometheus_text import SCOPE_LABELS, samples

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
GRAFANA = DEPLOY / "grafana"


@pytest.fixture(scope="module")
def exposed() -> dict[str, set[str]]:
    """Every sample name the gateway exposes, with its label names."""
    metrics = open_metrics(MetricSettings(exporters=("prometheus",)))
    metrics.chat(team="t", model="m", usage=Usage(1, 1), duration_s=1, cost_usd=1.0,
                 error_type="529")
    metrics.decision(Decision("deny", "r"), "Bash", "t")
    metrics.compaction("auto", M.ARCHIVED, "t")
    metrics.hook("PreToolUse", 0.01)
    metrics.budget_refused("t", M.OVER_BUDGET)
    metrics.budget_unenforced("t")
    metrics.observe_budgets(lambda: [("t", "day", "m", 1.0, 2.0)])
    names: dict[str, set[str]] = {}
    for name, labels, _ in samples(metrics.prometheus_text()):
        names.setdefault(name, set()).update(set(labels) | set(SCOPE_LABELS))
    return names


def check_query(expr: str, exposed: dict[str, set[str]]) -> None:
    expr = re.sub(r'"[^"]*"', '""', expr)  # label values and legends are not names
    names_only = re.sub(r"\bby\s*\([^)]*\)|\{[^}]*\}", " ", expr)  # no label names left
    used = set(re.findall(r"\b(agent_gateway_\w+|gen_ai_\w+)\b", names_only))
    assert used, f"no gateway metric in {expr!r}"
    unknown = used - set(exposed)
    assert not unknown, f"{sorted(unknown)} are not exposed (have {sorted(exposed)})"
    labels_of_used = set().union(*(exposed[n] for n in used)) | {"le"}
    for name, matchers in re.findall(r"\b(\w+)\{([^}]*)\}", expr):
        for label in re.findall(r"(\w+)\s*=~?", matchers):
            assert label in exposed[name], f"{name} has no label {label}"
    for group in re.findall(r"\bby\s*\(([^)]*)\)", expr):
        for label in (g.strip() for g in group.split(",")):
            assert label in labels_of_used, f"no metric of {expr!r} has label {label}"


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GRAFANA / "dashboards" / "agent-gateway.json").read_text())
    return data


def test_the_dashboard_shows_what_a_platform_team_asks(exposed: dict[str, set[str]]) -> None:
    board = dashboard()
    titles = [p["title"] for p in board["panels"]]
    for wanted in ("Cost by team", "Cost by model", "Tokens", "Decisions by rule",
                   "Denials over time", "Compactions", "Budget remaining", "Hook latency"):
        assert any(t.startswith(wanted) for t in titles), (wanted, titles)
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "prometheus"
        for target in panel["targets"]:
            check_query(target["expr"].replace("$__rate_interval", "5m")
                        .replace("$__range", "1d").replace("$team", ".*"), exposed)
    (team,) = board["templating"]["list"]
    assert "agent_gateway_team" in team["query"]["query"]


def test_alert_rules_cover_budgets_denials_reloads_and_archives(
    exposed: dict[str, set[str]]
) -> None:
    rules = yaml.safe_load((GRAFANA / "alert-rules.yaml").read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    for name in ("AgentGatewayBudget80Percent", "AgentGatewayBudgetExhausted",
                 "AgentGatewayDenySpike", "AgentGatewayPolicyReloadErrors",
                 "AgentGatewayArchiveFailures", "AgentGatewayBudgetUnenforced"):
        assert name in alerts, name
        rule = alerts[name]
        check_query(rule["expr"], exposed)
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]
    assert ">= 0.8" in alerts["AgentGatewayBudget80Percent"]["expr"]
    assert ">= 1" in alerts["AgentGatewayBudgetExhausted"]["expr"]


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    return dict(compose["services"])


def _default(value: str) -> str:
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def test_compose_runs_redis_prometheus_and_grafana_provisioned(services: dict[str, Any]) -> None:
    gateway = services["gateway"]
    command = [str(c) for c in gateway["command"]]
    redis_url = command[command.index("--redis-url") + 1]
    assert redis_url.startswith("redis://redis:") and "redis" in services
    env = {k: _default(str(v)) for k, v in gateway["environment"].items()}
    assert "prometheus" in env["OTEL_METRICS_EXPORTER"].split(",")
    # Prometheus scrapes the gateway with the metrics token compose gives it
    prometheus = services["prometheus"]
    scrape_config = yaml.safe_load((DEPLOY / "prometheus.yaml").read_text())
    (job,) = scrape_config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["gateway:8787"]
    assert job["authorization"]["credentials"] == env["AGENT_GATEWAY_METRICS_TOKEN"]
    mounts = dict(v.split(":")[:2][::-1] for v in prometheus["volumes"])
    assert mounts["/etc/prometheus/prometheus.yml"] == "./prometheus.yaml"
    for rule_file in scrape_config["rule_files"]:
        assert (DEPLOY / mounts[rule_file]).is_file()
    # Grafana: the datasource the dashboard names, and the dashboard where the provider looks
    grafana = services["grafana"]
    gmounts = dict(v.split(":")[:2][::-1] for v in grafana["volumes"])
    provisioning = DEPLOY / gmounts["/etc/grafana/provisioning"]
    (source,) = yaml.safe_load(
        (provisioning / "datasources" / "prometheus.yaml").read_text())["datasources"]
    assert source["uid"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load(
        (provisioning / "dashboards" / "agent-gateway.yaml").read_text())["providers"]
    dashboards = DEPLOY / gmounts[provider["options"]["path"]]
    assert (dashboards / "agent-gateway.json").is_file()


def test_compose_teams_have_budgets_the_gateway_accepts(services: dict[str, Any]) -> None:
    env = services["gateway"]["environment"]
    tokens = DEPLOY / "compose-tokens.yaml"
    mounted = dict(v.split(":")[:2][::-1] for v in services["gateway"]["volumes"]
                   if v.startswith("./"))
    assert mounted[env["AGENT_GATEWAY_TOKENS_FILE"]] == "./compose-tokens.yaml"
    budgets = read_budgets(str(tokens))
    assert set(budgets) == {"team-a", "team-b"}
    for entry in yaml.safe_load(tokens.read_text())["tokens"]:
        assert entry["token_env"] in env


def test_k8s_scrape_annotations_and_redis_reference() -> None:
    deployment = yaml.safe_load((DEPLOY / "k8s" / "deployment.yaml").read_text())
    template = deployment["spec"]["template"]
    notes = template["metadata"]["annotations"]
    (container,) = template["spec"]["containers"]
    ports = {p["containerPort"] for p in container["ports"]}
    assert notes["prometheus.io/scrape"] == "true"
    assert int(notes["prometheus.io/port"]) in ports and notes["prometheus.io/path"] == "/metrics"
    env = {e["name"]: e for e in container["env"]}
    assert env["OTEL_METRICS_EXPORTER"]["value"] == "prometheus"
    secrets = {}
    for doc in yaml.safe_load_all((DEPLOY / "k8s" / "secret.yaml").read_text()):
        secrets[doc["metadata"]["name"]] = doc["stringData"]
    for name in ("AGENT_GATEWAY_REDIS_URL", "AGENT_GATEWAY_METRICS_TOKEN"):
        ref = env[name]["valueFrom"]["secretKeyRef"]
        assert ref["key"] in secrets[ref["name"]], name
    assert secrets["agent-gateway-redis"]["url"].startswith("redis://")


@pytest.mark.parametrize("bad", [
    "sum(rate(agent_gateway_cost_total[5m]))",  # not the exposed name (the unit is in it)
    "sum by (agent_gateway_tem) (agent_gateway_cost_USD_total)",
    'agent_gateway_cost_USD_total{agent_gateway_policy_decision="deny"}',
])
def test_the_query_check_catches_unknown_names(bad: str, exposed: dict[str, set[str]]) -> None:
    with pytest.raises(AssertionError):
        check_query(bad, exposed)
