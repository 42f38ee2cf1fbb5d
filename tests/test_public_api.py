import inspect

import claude_agent_sdk

import gateway


def test_all_names_resolve() -> None:
    for name in gateway.__all__:
        assert getattr(gateway, name) is not None, name


def test_query_mirrors_the_sdk_signature() -> None:
    ours = inspect.signature(gateway.query).parameters
    theirs = inspect.signature(claude_agent_sdk.query).parameters
    for name, param in theirs.items():
        assert name in ours, name
        assert ours[name].kind == param.kind
        assert ours[name].default == param.default
