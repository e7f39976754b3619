"""The queue ahead of an endpoint, read from its answers' latency: how slow start grows before any refusal.

A server may queue requests ahead of its limit (an intake short of CPU) and refuse none until the
queue rushes its gate all at once, so no refusal comes back while slow start opens the window to the
ceiling, to be refused together. Only the latency says so, as TCP's delay-based slow-start exits
read round-trip times (RFC 9406):

- the median time of the last ``_LATEST`` (8) answers against the lowest such median (answers that did
  not queue; the lowest, as the first answers may be slow while connections open). Medians of as many
  answers on both sides, so that answers whose times merely vary (long and short prompts) rarely pass
  for a queue, and one fast answer does not end one. A rise of less than ``_JITTER`` (50 ms) is none:
  an agent answering in 20 ms took 40-60 ms at times on a busy machine;
- a stall is not a queue. A loaded machine that does not run our event loop for a moment delays the
  answers of every call in flight, and then hands them back all together. An endpoint with calls queued
  answers one at least every answer's time, so when no answer came for longer than ``_QUEUED`` times
  the lowest median (and than ``_JITTER``), something stopped (our process, the network, the endpoint
  for a moment) and the calls in flight through that silence were late for it, not for a queue: their
  latency is not read. Read, it held slow start, or drained it to 4, while a 20 ms agent's answers came
  back in a burst after a 100-200 ms stall: the window took 1.5 times as long to reach its concurrency;
- past ``_RISE`` (1.25) times the lowest, slow start grows ``_CSS`` (4) times more gently (RFC 9406's
  conservative slow start), as the median lags the window by a window of answers;
- past ``_QUEUED`` (1.5) times, calls wait in a queue ahead of the endpoint: the window drains to
  ``DRAIN`` (1.25) times the calls the endpoint serves (its answers per second times the unqueued
  answer's time), so that few wait in front of it when it opens, and again while the queue lasts. Slow
  start then grows by half a call per answer (a window of answers 1.5 times the last instead of twice),
  as a drained queue refills fast;
- the endpoint served the drained window whole when a window of answers of calls sent a round trip
  after the drain (the first ones find its queue flushed by the drain) comes back at about the lowest
  latency (``_BACK``: half way to the ``DRAIN`` times the lowest that a window at the endpoint's
  capacity would show, by Little's law): it has room again, and slow start doubles again.

Once the endpoint refused a call, its refusals say more than the latency (see ``levelfield._core.run.limits``).
"""

from __future__ import annotations

import collections
import statistics

__all__ = ["DRAIN", "QueueSignal"]

_LATEST = 8
"""Answers whose median latency is read for queueing: most of them slow, not one (a long prompt, a busy moment)."""
_QUEUED = 1.5
"""How many times the lowest median latency of ``_LATEST`` answers in a row its last ones take when calls queue
ahead of it."""
_RISE = 1.25
"""How many times the lowest median latency the last answers take when they start to queue: slow start grows
``_CSS`` times more gently past it (RFC 9406's conservative slow start), as the median lags the window."""
_CSS = 4
"""How many times more slowly slow start grows while the latency rises (RFC 9406's CSS_GROWTH_DIVISOR)."""
_ROSE = 2
"""How many times more slowly slow start grows after a queue drained, when the latency is low again (a window of
answers 1.5 times the last instead of twice): the median lags the window, and a drained queue refills fast."""
_JITTER = 0.05
"""Seconds the median latency must exceed the lowest median by before it counts as a rise or a queue that slows
slow start or drains it: an agent answering in 20 ms took 40-60 ms at times on a busy machine (RFC 9406 clamps
its delay threshold in absolute time too). Nor is a shorter time without an answer a silence."""
DRAIN = 1.25
"""The window a queue drains to, in calls the endpoint serves (its answers per second times the unqueued answer's
time): a few more than those keep it busy; the rest only wait in its queue."""
_BACK = (1.0 + DRAIN) / 2
"""How many times the lowest median latency a window of answers after a drain takes, at most, when the endpoint
served the drained window whole: at its capacity, the drained window's answers would take ``DRAIN`` times the
lowest (Little's law), so half way to that is below it by more than the answers' spread."""


class QueueSignal:
    """The latency of one endpoint's last answers against the lowest: whether calls queue ahead of it, and how
    slow start grows before the endpoint refuses a call (see the module)."""

    def __init__(self) -> None:
        self._latest: collections.deque[float] = collections.deque(maxlen=_LATEST)  # seconds the last answers took
        self._numbers: collections.deque[int] = collections.deque(maxlen=_LATEST)  # their calls' numbers
        self.unqueued: float | None = None
        """The lowest median seconds of ``_LATEST`` answers in a row: answers that did not queue (None before)."""
        self._last_end: float | None = None  # when the last answer came back (any, read or not)
        self._silence: tuple[float, float] | None = None  # the last time no answer came back for long (from, to)
        self.stalled = 0
        """Answers whose latency was not read: their calls were in flight through a silence (see the module)."""
        self._drained: int | None = None  # the last call sent when a queue drained the window
        # The last call sent when the answers of calls sent after the drain came back: the first of those found
        # the endpoint's queue flushed by the drain and say nothing of the drained window; those sent after them do.
        self._settled: int | None = None

    def answered(self, number: int, sent: float, at: float) -> None:
        """The call numbered ``number`` (in the order calls were sent), sent at ``sent``, was answered at ``at``
        (seconds, monotonic)."""
        took = at - sent
        last, self._last_end = self._last_end, at
        if last is not None and self.unqueued is not None and at - last > max(_QUEUED * self.unqueued, _JITTER):
            self._silence = (last, at)
        # A call sent before the last silence began and answered after it ended was in flight through it. Keeping
        # the last one is enough: a call in flight through an earlier one and answered after this one spans it too.
        if self._silence is not None and sent <= self._silence[0] and at >= self._silence[1]:
            self.stalled += 1
            return
        self._latest.append(took)
        self._numbers.append(number)
        if len(self._latest) == _LATEST:
            median = statistics.median(self._latest)
            self.unqueued = median if self.unqueued is None else min(self.unqueued, median)

    def queueing(self) -> bool:
        """Whether the last ``_LATEST`` answers took, at the median, ``_QUEUED`` times the lowest such median:
        calls wait in a queue ahead of the endpoint (read by a refusal's cut: the endpoint serves fewer
        calls than it holds)."""
        return self.unqueued is not None and statistics.median(self._latest) > _QUEUED * self.unqueued

    def step(self, last: int) -> tuple[float, bool]:
        """Slow start's growth for this answer, before any refusal (calls per answer: 1 doubles the window per
        window of answers), and whether the window drains now to ``DRAIN`` times the calls the endpoint serves.
        ``last``: the number of the last call sent."""
        if self.unqueued is None:
            return 1.0, False
        median = statistics.median(self._latest)
        if self._drained is not None and min(self._numbers) > self._drained:
            if self._settled is None:
                self._settled = last
            elif min(self._numbers) > self._settled and median <= _BACK * self.unqueued:
                self._drained = self._settled = None  # the drained window was served whole: the endpoint has room
        delay = median / self.unqueued if median - self.unqueued >= _JITTER else 1.0
        if delay > _QUEUED:
            # More calls would only lengthen the queue: drained (again, while it lasts) to what the endpoint serves.
            # The median lags the window by a window of answers: holding alone let calls pile up in front of a gate.
            self._drained, self._settled = last, None
            return 0.0, True
        if delay > _RISE:
            return 1.0 / _CSS, False
        if self._drained is not None:
            return 1.0 / _ROSE, False
        return 1.0, False
