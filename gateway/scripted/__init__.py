"""A scripted Anthropic Messages API for tests and the demo: no network, no API key."""

from gateway.scripted.scenario import Scenario, ScriptedResponse, load_scenario
from gateway.scripted.server import RecordedRequest, ScriptedServer

__all__ = ["RecordedRequest", "Scenario", "ScriptedResponse", "ScriptedServer", "load_scenario"]
