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
- past ``_RISE`` (1.25) times the lowest, slow start grows ``_CSS`` (4) times more gently (RFC 9406's
  conservative slow start), as the median lags the window by a window of answers;
- past ``_QUEUED`` (1.5) times, it holds: calls wait in a queue ahead of the endpoint. A stall of our own
  process (a loaded machine that did not run the event loop for a moment) slows the answers of the calls
  in flight just as much, but no answer comes back while it lasts, where an endpoint with calls queued
  hands them back at its pace, one at least every answer's time. So a delay after a silence between two
  answers longer than ``_QUEUED`` times the lowest median (and than ``_JITTER``) only makes a queue
  *seen*: it is *confirmed* when ``_CONFIRM`` (4) answers of calls sent after it was seen queue too (a
  queue ahead of the endpoint delays every call sent while the window stays above what it serves; a
  stall, only those in flight). Unconfirmed, the hold ends and slow start goes on. A delay without such
  a silence is a queue at once: a round trip held at the lagging window lets more calls wait in front
  of a gate;
- a confirmed queue drains the window to ``DRAIN`` (1.25) times the calls the endpoint serves (its
  answers per second times the unqueued answer's time), so that few wait in front of it when it opens,
  and the window drains again while the queue lasts. Slow start then grows by half a call per answer
  (a window of answers 1.5 times the last instead of twice), as a drained queue refills fast;
- the endpoint served the drained window whole when a window of answers of calls sent a round trip
  after the drain (the first ones find its queue flushed by the drain) comes back at about the lowest
  latency (``_BACK``: half way to the ``DRAIN`` times the lowest that a window at the endpoint's
  capacity would show, by Little's law): the rate it was drained to was read low (a stall), and slow
  start doubles again.

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
its delay threshold in absolute time too)."""
_CONFIRM = 4
"""Answers of calls sent after a queue was seen whose median must show it too before the window drains: a stall of
ours delays only the calls in flight during it (on a loaded machine one drained the window of an agent that
refuses nothing to 4, and slow start took 1.5 times as long to reach its concurrency)."""
DRAIN = 1.25
"""The window a confirmed queue drains to, in calls the endpoint serves (its answers per second times the unqueued
answer's time): a few more than those keep it busy; the rest only wait in its queue."""
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
        self._ends: collections.deque[float] = collections.deque(maxlen=_LATEST + 1)  # when they (and one before) came back
        self.unqueued: float | None = None
        """The lowest median seconds of ``_LATEST`` answers in a row: answers that did not queue (None before)."""
        self._seen: int | None = None  # the last call sent when a queue showed, while it is not confirmed
        self._after: list[float] = []  # seconds the answers of calls sent after it took
        self._drained: int | None = None  # the last call sent when a confirmed queue drained the window
        # The last call sent when the answers of calls sent after the drain came back: the first of those found
        # the endpoint's queue flushed by the drain and say nothing of the drained window; those sent after them do.
        self._settled: int | None = None

    def answered(self, number: int, took: float, at: float) -> None:
        """The call numbered ``number`` (in the order calls were sent) was answered at ``at`` (seconds, monotonic)
        after ``took`` seconds."""
        self._latest.append(took)
        self._numbers.append(number)
        self._ends.append(at)
        if len(self._latest) == _LATEST:
            median = statistics.median(self._latest)
            self.unqueued = median if self.unqueued is None else min(self.unqueued, median)
        if self._seen is not None and number > self._seen and len(self._after) < _CONFIRM:
            self._after.append(took)

    def queueing(self) -> bool:
        """Whether the last ``_LATEST`` answers took, at the median, ``_QUEUED`` times the lowest such median:
        calls wait in a queue ahead of the endpoint (read by a refusal's cut: the endpoint serves fewer
        calls than it holds)."""
        return self.unqueued is not None and statistics.median(self._latest) > _QUEUED * self.unqueued

    def _delay(self, median: float) -> float:
        """How many times the lowest median ``median`` is; 1 for a rise of less than ``_JITTER``."""
        assert self.unqueued is not None
        return median / self.unqueued if median - self.unqueued >= _JITTER else 1.0

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
        delay = self._delay(median)
        if self._seen is not None and len(self._after) >= _CONFIRM:
            # The calls sent after the queue showed are back: they queued too (a queue), or not (a stall of ours).
            confirmed = self._delay(statistics.median(self._after)) > _QUEUED
            self._seen, self._after = None, []
            if confirmed:
                self._drained, self._settled = last, None
                return 0.0, True
        if delay > _QUEUED:
            if self._drained is not None:
                # A confirmed queue lasts (or refills): drained again, to what the endpoint serves now.
                self._drained, self._settled = last, None
                return 0.0, True
            if self._seen is None:
                ends = list(self._ends)
                silence = max(b - a for a, b in zip(ends, ends[1:]))
                if silence <= max(_QUEUED * self.unqueued, _JITTER):
                    self._drained, self._settled = last, None  # late at the endpoint's pace: its queue
                    return 0.0, True
                self._seen, self._after = last, []  # late after a silence: a stall, or a queue; the next calls tell
            # Held meanwhile: more calls would only lengthen a queue.
            return 0.0, False
        if delay > _RISE:
            return 1.0 / _CSS, False
        if self._drained is not None:
            return 1.0 / _ROSE, False
        return 1.0, False
