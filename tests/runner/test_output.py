from gateway.runner.output import ResultTracker, result_failure, visible_to_caller


def test_partial_stream_hidden_unless_asked() -> None:
    event = {"type": "stream_event", "event": {"type": "message_start"}}
    requesting = {"type": "system", "subtype": "status", "status": "requesting"}
    compacting = {"type": "system", "subtype": "status", "status": "compacting"}
    assert not visible_to_caller(event, include_partial=False)
    assert not visible_to_caller(requesting, include_partial=False)
    assert visible_to_caller(compacting, include_partial=False)
    assert visible_to_caller(event, include_partial=True)


def test_result_failure_names_subtype_and_errors() -> None:
    assert result_failure({"subtype": "success", "is_error": False}) is None
    assert (
        result_failure(
            {"subtype": "error_max_turns", "is_error": True, "errors": ["Reached maximum\n turns"]}
        )
        == "error_max_turns: Reached maximum turns"
    )
    api = {"subtype": "success", "is_error": True, "api_error_status": 529, "terminal_reason": None}
    assert result_failure(api) == "api_error: API error status 529"


def test_tracker_keeps_the_last_of_several_results() -> None:
    tracker = ResultTracker()
    for message in ({"type": "result", "n": 1}, {"type": "assistant"}, {"type": "result", "n": 2}):
        tracker(message)
    assert tracker.last == {"type": "result", "n": 2}
