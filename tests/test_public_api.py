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


def test_lazily_loaded_packages_resolve_every_name() -> None:
    import gateway.audit
    import gateway.telemetry

    for module in (gateway.audit, gateway.telemetry):
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"
