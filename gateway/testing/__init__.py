"""A scripted Anthropic Messages API for tests and the demo: no network, no API key."""

from gateway.testing.scenario import Scenario, ScriptedResponse, load_scenario
from gateway.testing.server import RecordedRequest, ScriptedServer

__all__ = ["RecordedRequest", "Scenario", "ScriptedResponse", "ScriptedServer", "load_scenario"]
