"""Hard deadlines for decisions: whichever comes first, the decision or its deadline, answers.

Claude Code lets a tool run when a hook overruns its timeout (unless the handler says
`onFailure: block`, as the generated settings do). The cooperative budgets (the shell
analysis', the hard-link search's) end most slow decisions; a deadline ends any other, well
inside the hook's timeout, with a deny that is recorded.

A `Ticket` says who answers: the decision claims it just before it records itself; the
deadline expires it. Exactly one of them gets it, so a decision recorded is the decision
answered, and a decision past its deadline never records itself after the deny.

`alarm` is the command hook's deadline: SIGALRM, not a cooperative budget. Past the deadline
its handler raises DeadlineExceeded in the main thread wherever the decision is (a blocking
system call is interrupted; C code holding the interpreter delays it until it returns). The
handler writes nothing: a record is never half-written by it under the audit log's lock, and
an append the exception interrupts cuts its partial line back off or leaves the record its
checkpoint announced, which the next append accepts (audit/log.py). When the deadline finds
the decision recording itself, the recording gets `grace_s` more, then is interrupted too.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Literal

RECORD_GRACE_S = 2.0
"""How long a decision that is recording itself when its deadline passes may take to finish,
and how long the deny given at the deadline may take to be recorded."""

State = Literal["deciding", "recording", "expired"]
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers


class DeadlineExceeded(BaseException):
    """The deadline passed. A BaseException: the decision path turns every Exception into a
    deny it may not be able to record; this one unwinds it to where the deadline's deny is
    recorded."""


class Ticket:
    """Who answers one decision: the decision (`record`) or its deadline (`expire`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: State = "deciding"

    @property
    def state(self) -> State:
        return self._state

    def record(self) -> bool:
        """The decision is about to record itself: True if it may (it answers), False when
        its deadline has passed (the deadline's deny answers; nothing is recorded)."""
        with self._lock:
            if self._state == "expired":
                return False
            self._state = "recording"
            return True

    def expire(self, *, blocking: bool = True) -> bool:
        """The deadline passed: True when the deadline answers (the decision had not begun
        recording), False when the decision is recording itself and answers. A signal
        handler passes blocking=False: the lock may be held by the code it interrupted, which
        is then about to record."""
        if not self._lock.acquire(blocking):
            return False
        try:
            if self._state == "recording":
                return False
            self._state = "expired"
            return True
        finally:
            self._lock.release()


@contextmanager
def alarm(seconds: float, ticket: Ticket | None = None,
          grace_s: float | None = None) -> Iterator[None]:
    """Raise DeadlineExceeded in the main thread `seconds` from now (SIGALRM, a real-time
    interval timer), unless the block has ended. With a `ticket` the deadline expires it;
    if the decision is recording itself, the recording gets `grace_s` (RECORD_GRACE_S) more
    first."""
    grace = RECORD_GRACE_S if grace_s is None else grace_s
    previous: _Handler = signal.getsignal(signal.SIGALRM) or signal.SIG_DFL
    late = False

    def fire(_signum: int, _frame: FrameType | None) -> None:
        nonlocal late
        if ticket is not None and not late and not ticket.expire(blocking=False):
            late = True  # recording itself: let it finish, within the grace
            signal.setitimer(signal.ITIMER_REAL, grace)
            return
        signal.signal(signal.SIGALRM, previous)  # one raise, and nothing left armed
        what = "recording it" if late else "deciding"
        raise DeadlineExceeded(f"{what} took longer than the {seconds:g} s deadline")

    signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        _disarm(previous)


def _disarm(previous: _Handler) -> None:
    """Stop the timer and restore the previous handler; an alarm already pending is dropped
    (ignored while blocked, then discarded)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.signal(signal.SIGALRM, previous)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
