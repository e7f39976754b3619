"""Running at the speed an endpoint allows: adaptive concurrency and rate limits per endpoint.

Every endpoint an evaluation calls (an agent, an A2A host, the judge model, the simulator model)
gets one :class:`EndpointLimit`: a bound on its calls in flight that follows the endpoint's rate
limits, and optional token buckets for ``requests_per_minute`` and ``tokens_per_minute``.

The controller (``adaptive=True``) is a loss-based window, as TCP congestion control is:

- on first contact it starts at half its ceiling, ``_FIRST`` (``_INITIAL``, 4, at least; issue #56: from 4
  slow start cost a fixed number of round trips, the same share of every run, where nothing refuses), or at
  the limit an earlier run learned for this endpoint (``levelfield._core.run.learned``), probed past slowly
  as after a cut, or at the calls an earlier run held in flight with none refused (its whole ceiling: where
  nothing refuses, the half start is paid once, not every run); it grows by slow start (RFC 5681 §3.1): one call more per
  answer while calls wait for the window (an answer when fewer calls than the window were wanted
  proves nothing about more, RFC 7661), so the window doubles per window of answers, up to the
  ceiling (``RunConfig.concurrency``, a judge's ``max_concurrency``), and never past twice the
  largest window an answered call was sent in. Calls that all hold their slots without answering
  for ``_RAMP`` seconds (slow agents; a refusal comes back sooner) also double it: they were admitted.
  A refusal before any answer cuts to the calls in flight when the refused call was sent (no floor: the
  first window went out at once, so those are what the endpoint held);
- until the endpoint refuses a call, slow start reads the answers' latency for a queue ahead of the
  endpoint (``levelfield._core.run.queue_signal``): it grows more gently as the latency rises, and
  drains the window to a few more than the calls the endpoint serves while the answers queue; the
  answers of calls in flight through a silence (a stall of our own process) are not read.
  A server may queue requests ahead of its limit and refuse none until the queue rushes it; a refusal
  then cuts the limit to the calls the endpoint served, its answers per second times the unqueued
  answer's time, not the calls queued in front of it;
- every call keeps the calls in flight when it was *sent*: a refusal is judged by those, not by
  what is in flight when it comes back (a growing window has sent more since);
- a refusal ("too many requests": HTTP 429, a 503 with ``Retry-After``, a provider's
  ``RateLimitError``) is first asked what it means. A capacity limit refuses by the number of calls
  in flight, so the same request sent again at once with as many calls in flight is refused too,
  most of the time; a per-request refusal (a gateway that refuses each request's first call, a
  cache warming, a per-prompt check) lets it through every time. So a request's first refusal is put on
  trial: it is sent again at once in the slot it held (after its ``Retry-After`` when it names one: a
  gateway refusing each request's first call may say when to come back, issue #56). Until
  ``_PASSES`` (4) retries in a row were admitted with at least as many calls in flight as their
  refused first call (fewer proves nothing: slots freed meanwhile), a first refusal also cuts the
  limit as a capacity signal would, and no more than ``_PASSES`` trials run at once among the first
  calls, one past them (slow start's overshoot refuses several calls together), and none for a call
  sent with more calls in flight than the largest window an answered call was sent in (the overshoot
  itself: its retry, sent at once into a full endpoint, was refused too, a refusal more in about one
  run of 64 behind 8 in two); once they
  were, the cuts are undone and first refusals leave the limit alone (the 429 storm of a gateway
  that refuses every first call runs at the ceiling). A retry refused too is a capacity signal,
  and while any of the last ``_VERDICTS`` (8) trials ended so, first refusals are capacity signals
  (one in ``_RETRIAL`` still tried, to keep the verdicts current). A refusal that says when to
  come back (``Retry-After`` > 0) is taken at its word at once;
- a capacity signal cuts the limit to the calls of ours in flight when the refused call was sent,
  or to what the endpoint carried when that is lower (Little's law over its last answers: answers
  per second times seconds per answer; past an overshoot the endpoint took calls in no order), but
  no lower than half the window at the end of slow start (which doubled it in the time a refusal
  took to come back; RFC 5681's FlightSize / 2) and 70 % after (CUBIC's factor, RFC 9438 §4.6).
  Refusals of calls sent before the last cut lower it no further than that (one cut per window
  sent, RFC 6582);
- when a lone call's refusal is a capacity signal (nothing else of ours in flight) the endpoint limits by
  time, not by concurrency: no call starts until its ``Retry-After`` has passed (without one, the
  call tries again a few times after short pauses, then its own retries decide), and the limit
  restarts from 1 with slow start up to half the old limit;
- once refused, it grows additively, one call per window of successes (congestion avoidance,
  AIMD), and from a level below where it was last refused to a level above it (``_SLOW_LEVELS``: at
  the usual pace the window reached the level above a few answers after the refused one, and a steady
  limit refused it at once) it probes ``_PROBE`` times more slowly, as CUBIC plateaus around its last
  maximum (RFC 9438 §4.2); each new cut at about the level of the last one
  halves that pace again (up to ``_MAX_PROBE_SCALE`` times), so a steady limit costs ever fewer 429s:
  one in about ``_PROBE * limit`` calls, then twice as many, and so on.

A refused call waits out the ``Retry-After`` it was given and is tried again without counting as
a failed attempt of its run (see ``levelfield._core.run.runner``). With ``adaptive=False`` the
bound is the fixed ceiling and rate-limit answers are ordinary transient errors, as before.

The endpoints' limits of one evaluation are kept by ``levelfield._core.run.endpoints``. The token
buckets (``levelfield._core.run.token_bucket``) count what the endpoint reports: a call takes one request token before it
starts and pays its reported tokens (``usage.total_tokens``) when it ends; a bucket in debt holds
new calls until it has refilled.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import weakref
from typing import Any

from .failures import rate_limit_of
from .limit_stats import LimitStats
from .queue_signal import DRAIN, QueueSignal
from .token_bucket import TokenBucket

__all__ = ["MAX_ABSORBED", "EndpointLimit"]

MAX_ABSORBED = 20
"""Rate-limit answers one call may absorb; past them a refusal counts as a failed attempt (the
caller's retries then decide), so an endpoint that refuses everything cannot hold a call forever."""
_LONE_TRIES = 3
"""Lone refusals without ``Retry-After`` one call absorbs (after 0.1, 0.2, 0.4 s) before its own retries decide."""
_LONE_PAUSE = 0.1
_BETA = 0.7
"""The most one refusal lowers the limit (to 70 %, CUBIC's factor, RFC 9438 §4.6), however few calls were in flight."""
_PROBE = 8
"""How many times more slowly the limit grows past the level where the endpoint last refused a call."""
_INITIAL = 4
"""The fewest calls in flight an adaptive limit starts at on first contact (or its ceiling when lower)."""
_FIRST = 0.5
"""The share of its ceiling an adaptive limit starts at on first contact with an endpoint (none learned): half,
so that the window reaches the ceiling after one window of answers (slow start doubles it) or ``_RAMP``
seconds of calls held without a refusal, while 64 calls behind a gateway admitting 8 refuse 24 at first,
not 56."""
_VERDICTS = 8
"""Trials remembered: one of them whose retry was refused too makes first refusals capacity signals."""
_FIRSTS = 16
"""First calls (not a refused call's retry) whose outcome the per-request verdict reads: refusals that are
per-request refuse (nearly) every first call, while a capacity limit admits most of them once the limit is
cut to it. A retry admitted with as many in flight can also be luck, a slot freed between the two."""
_PASSES = 4
"""Trials whose retry was admitted with at least as many calls in flight (and none refused among the
last ``_VERDICTS``) that show per-request refusals."""
_RETRIAL = 4
"""While first refusals count as capacity signals, one in this many is still put on trial."""
_RAMP = 0.25
"""Seconds without an answer or a refusal after which calls holding every slot double the window in slow
start: a refusal comes back sooner (a gateway answers 429 before it runs anything). A slow agent (1 s an
answer) reaches its ceiling 0.25 s into the run instead of after its first answers."""
_SLOW_LEVELS = 2
"""Levels probed slowly from the one where the endpoint last refused a call: it and the one above it."""
_MAX_PROBE_SCALE = 8
"""The most times more slowly again the limit probes past a level where it was refused in a row."""


class EndpointLimit:
    """The calls in flight to one endpoint: a bound that adapts to its rate limits, and optional buckets.

    ``ceiling``: the most calls in flight. ``adaptive``: follow the endpoint's 429s (see the module).
    ``requests_per_minute`` / ``tokens_per_minute``: token buckets. Belongs to one event loop.
    """

    def __init__(
        self,
        endpoint: str,
        ceiling: int,
        *,
        adaptive: bool = True,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        learned: int | None = None,
        carried: int | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.ceiling = max(1, int(ceiling))
        self.adaptive = adaptive
        self.window = float(self.ceiling)
        """The adaptive limit as a real number (the limit is its whole part)."""
        self.learned = learned if adaptive and learned is not None and 1 <= learned < self.ceiling else None
        """The limit an earlier run learned for this endpoint, where this one started (None: first contact)."""
        self.carried_earlier = carried if adaptive and self.learned is None and carried is not None and carried >= 1 else None
        """The calls in flight this endpoint carried in an earlier run without refusing one (None: not known)."""
        if adaptive:
            self.window = float(max(min(_INITIAL, self.ceiling), _FIRST * self.ceiling))
            if self.carried_earlier is not None:
                # An earlier run held this many in flight and none was refused: start there (slow start above it when
                # this run's ceiling is higher), not at half. A refusal still cuts at once, as on first contact.
                self.window = max(self.window, float(min(self.carried_earlier, self.ceiling)))
        self._threshold = float(self.ceiling)  # slow start below it, avoidance above
        self._refused_at: float | None = None  # the level where the endpoint last refused a call
        self._requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self._tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None
        self._paused_until = 0.0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None
        self._ramp_timer: asyncio.TimerHandle | None = None
        self._last_end = time.monotonic()
        self._last_start = 0.0
        self._took = 0.0
        self._sent_at = 0.0  # when the call that ended last was sent
        self._sent_window = self.window
        # The most calls in flight that the endpoint was shown to take: the calls in flight when an
        # answered call was sent (itself included), or calls held ``_RAMP`` seconds without a refusal.
        # Slow start never takes the window past twice that (one doubling per proof).
        self._proven: float = 0
        self._cuts = 0  # capacity cuts with calls of ours in flight (what a learned limit is kept for)
        self._first_level = 0.0  # what the endpoint took of the first window, when it refused some of it
        # Cuts in a row at (about) the same level: each one halves the speed of the probing past it.
        self._probe_scale = 1
        self._slow_levels = 0  # levels from the refused one up still to probe slowly
        self._last_cut: float | None = None
        # Calls (by their task) whose first refusal is on trial: their retry takes back their slot at once.
        self._again: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        # Their retries, until answered: the calls in flight when the refused first call was sent.
        self._trial: weakref.WeakKeyDictionary[asyncio.Task[Any], int] = weakref.WeakKeyDictionary()
        self._verdicts: collections.deque[bool] = collections.deque(maxlen=_VERDICTS)  # retry refused too?
        self._firsts: collections.deque[bool] = collections.deque(maxlen=_FIRSTS)  # a first call refused?
        # Calls refused once and not answered yet: their answer is a retry's, not a first call's.
        self._refused_calls: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self._first_refusals = 0
        # Each call in flight (by its task): its number and the calls in flight when it was sent, itself included.
        self._sent: weakref.WeakKeyDictionary[asyncio.Task[Any], tuple[int, int, float, float]] = weakref.WeakKeyDictionary()
        self._seq = 0
        # The last answers: (when it came, seconds it took), for what the endpoint carried.
        self._answers: collections.deque[tuple[float, float]] = collections.deque(maxlen=4 * self.ceiling)
        self._queue = QueueSignal()  # the answers' latency: slow start's reading of a queue ahead of the endpoint
        self._recover = 0  # calls numbered up to this were sent before the last cut: no second cut for them
        self._base = self.window  # the window before the last cut (the most a run of refusals lowers it from)
        # Before refusals are shown per-request, a first refusal cuts the limit as a capacity signal
        # would; this is what it was before, restored when they are shown per-request.
        self._undo: tuple[float, float] | None = None
        if self.learned is not None:
            # Where the endpoint refused in an earlier run: start there, as after a cut, and probe past it slowly.
            self.window = self._threshold = self._base = float(self.learned)
            self._refused_at = self.window + 1.0
            self._slow_levels = _SLOW_LEVELS
            self._proven = self.learned
        self.in_flight = 0
        self.start = self.limit if adaptive else self.ceiling
        """The calls in flight this limit started at."""
        self.history: list[int] = [self.limit] if adaptive else []
        """The limit each time it changed (the first 10,000 changes): the trajectory tests read."""
        self.per_request = 0
        # statistics
        self.calls = 0
        self.rate_limited = 0
        self.waited = 0.0
        self.peak = 0
        self._area = 0.0  # integral of in_flight over time
        self._busy = 0.0  # time with at least one call in flight
        self._mark = 0.0

    @property
    def limit(self) -> int:
        """Calls allowed in flight now."""
        return max(1, min(self.ceiling, int(self.window))) if self.adaptive else self.ceiling

    # -- taking and giving back --------------------------------------------------------------
    def _delay(self) -> float:
        """Seconds until a call may start as far as time goes (a pause, an empty bucket); 0: now."""
        delay = self._paused_until - time.monotonic()
        if self._requests is not None:
            delay = max(delay, self._requests.delay(1.0))
        if self._tokens is not None:
            delay = max(delay, self._tokens.delay(0.0))
        return max(delay, 0.0)

    def _changed(self) -> None:
        """Note the limit in :attr:`history` when it moved."""
        if self.adaptive and self.history[-1] != self.limit and len(self.history) < 10_000:
            self.history.append(self.limit)

    def _ready(self) -> bool:
        return self.in_flight < self.limit and self._delay() <= 0.0

    def _start(self, task: asyncio.Task[Any] | None) -> None:
        self._account()
        self.in_flight += 1
        self.calls += 1
        self._seq += 1
        self._last_start = time.monotonic()
        if task is not None:
            self._sent[task] = (self._seq, self.in_flight, self._last_start, self.window)
        self.peak = max(self.peak, self.in_flight)
        if self._requests is not None:
            self._requests.take(1.0)

    async def acquire(self) -> float:
        """Wait for room to start one call and take it; the seconds waited. Release with :meth:`success`,
        :meth:`refused` or :meth:`failed`."""
        task = asyncio.current_task()
        if task is not None and task in self._again:
            # A refused call sent again at once, in the slot it held: the test of its refusal.
            self._again.discard(task)
            self._start(task)
            return 0.0
        if not self._waiters and self._ready():
            self._start(task)
            return 0.0
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters.append(waiter)
        try:
            self._wake()
            while True:
                await waiter
                # Only the first waiter is ever woken, and it stays first until it leaves.
                if self._ready():
                    self._waiters.popleft()
                    self._start(task)
                    self._wake()  # there may be room for the next one too
                    waited = time.monotonic() - started
                    self.waited += waited
                    return waited
                waiter = self._waiters[0] = loop.create_future()  # the room went (a refusal): wait again
                self._wake()
        except BaseException:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            self._wake()
            raise

    def _wake(self) -> None:
        """Wake the first waiter when a call may start, or arm a timer for when one may."""
        if not self._waiters:
            return
        head = self._waiters[0]
        if head.done():
            return
        if self.in_flight >= self.limit:
            self._arm_ramp()
            return
        delay = self._delay()
        if delay <= 0.0:
            head.set_result(None)
        elif self._timer is None:
            loop = asyncio.get_running_loop()

            def fire() -> None:
                self._timer = None
                self._wake()

            self._timer = loop.call_later(delay, fire)

    def _arm_ramp(self) -> None:
        """In slow start, with every slot held and calls waiting: check again when the calls in flight will have
        been held ``_RAMP`` seconds since the last call went out or came back (not ``_RAMP`` from now: a check
        that found a call sent a moment before waited a whole ``_RAMP`` more)."""
        if not self.adaptive or self._ramp_timer is not None or self.window >= self._threshold:
            return
        due = max(self._last_start, self._last_end) + _RAMP - time.monotonic()
        self._ramp_timer = asyncio.get_running_loop().call_later(max(due, 0.0), self._ramp)

    def _ramp(self) -> None:
        """Double the window when the calls holding it have gone ``_RAMP`` seconds without an answer
        or a refusal: the endpoint admitted them (a refusal comes back at once) and may take more."""
        self._ramp_timer = None
        if not self._waiters or self.in_flight < self.limit or self.window >= self._threshold:
            return
        now = time.monotonic()
        # Every call in flight held _RAMP seconds (none sent or ended since): the endpoint took them.
        if now - self._last_end >= _RAMP and now - self._last_start >= _RAMP:
            self._proven = max(self._proven, self.in_flight)
            self.window = min(2 * self.window, 2.0 * self._proven, self._threshold, float(self.ceiling))
            self._changed()
            self._wake()
        self._arm_ramp()

    def _end(self, tokens: float | None, task: asyncio.Task[Any] | None) -> tuple[int, int]:
        """End this task's call; its number and the calls in flight when it was sent (itself included)."""
        self._account()
        self._last_end = time.monotonic()
        record: tuple[int, int, float, float] | None = self._sent.pop(task, None) if task is not None else None
        if record is None:  # not started by this task (a caller's own bookkeeping): as if sent now
            record = (self._seq, self.in_flight, self._last_end, self.window)
        self.in_flight -= 1
        if self._tokens is not None and tokens:
            self._tokens.take(float(tokens))
        self._sent_at = record[2]
        self._took = self._last_end - record[2]
        self._sent_window = record[3]
        return record[0], record[1]

    def carried(self, took: float | None = None) -> float | None:
        """Calls the endpoint has been holding for us at once, by Little's law over its last answers:
        answers per second times seconds per answer (None before three answers). Unlike the calls in
        flight when a refusal comes back, this counts only calls the endpoint took. ``took``: seconds
        per answer to count instead of their mean (those before any queue: the calls it was serving, not queueing)."""
        if len(self._answers) < 3:
            return None
        recent = [a for a in self._answers if a[0] >= self._answers[-1][0] - 4 * max(a[1] for a in self._answers)]
        if len(recent) < 3 or recent[-1][0] <= recent[0][0]:
            return None
        rate = (len(recent) - 1) / (recent[-1][0] - recent[0][0])
        if took is not None:
            return rate * took
        return rate * sum(a[1] for a in recent[1:]) / (len(recent) - 1)

    def _admitted(self, at: int, task: asyncio.Task[Any] | None) -> None:
        """The endpoint answered this task's call, sent with ``at`` calls in flight. When it was a
        refused call's retry sent with at least as many in flight as the refused call, the refusal was
        per-request: a capacity limit would have refused it too. With fewer (calls ended in between),
        it tells nothing, and no verdict is kept."""
        if task is None or task not in self._trial:
            return
        refused_at = self._trial.pop(task)
        if at < refused_at:
            return
        self._verdicts.append(False)
        self.per_request += 1
        if self._undo is not None and self._per_request():
            # Shown per-request: the cuts first refusals made are undone, and slow start goes on.
            window, threshold = self._undo
            self._undo = None
            self.window = max(self.window, window)
            self._threshold = max(self._threshold, threshold)
            self._refused_at = None
            self._probe_scale = 1
            self._last_cut = None
            self._cuts = 0  # per-request refusals: nothing to learn about the endpoint's capacity
            self._changed()
            self._wake()

    def _per_request(self) -> bool:
        """Whether this endpoint's first refusals are per-request: ``_PASSES`` retries admitted, none refused,
        and three in four of the last first calls refused (a capacity limit admits most first calls)."""
        firsts = self._firsts
        return (not any(self._verdicts) and len(self._verdicts) >= _PASSES
                and len(firsts) >= _PASSES and 4 * sum(firsts) >= 3 * len(firsts))

    def _on_trial(self, seq: int, at: int) -> bool:
        """Whether a request's first refusal (of call ``seq``, sent with ``at`` calls in flight) is put on trial
        rather than taken as a capacity signal: while none of the last ``_VERDICTS`` trials had its retry
        refused, and one first refusal in ``_RETRIAL`` after one had, so the verdicts stay current. Until
        refusals are shown per-request, no more than ``_PASSES`` trials at once among the first calls
        (the initial window, where a per-request gate shows itself), one past them, and none for a call
        sent before the last cut (the rest of a window already judged too large): against a capacity
        limit each costs a refusal more, and slow start's overshoot refuses several calls at once."""
        self._first_refusals += 1
        if self._per_request():
            return True
        if at <= _INITIAL:
            if len(self._trial) >= _PASSES:
                return False
        elif self._trial or seq <= self._recover or at > max(self._proven, _INITIAL):
            # Sent with more in flight than the largest window an answered call was sent in: slow start's
            # overshoot, a capacity limit's refusal most likely, and its retry would be refused too (a refusal more).
            return False
        return not any(self._verdicts) or self._first_refusals % _RETRIAL == 0

    def success(self, tokens: float | None = None) -> None:
        """A call ended with an answer (``tokens``: what it spent, for ``tokens_per_minute``)."""
        full = self.in_flight >= self.limit or bool(self._waiters)
        task = asyncio.current_task()
        number, at = self._end(tokens, task)
        self._answers.append((self._last_end, self._took))
        self._queue.answered(number, self._sent_at, self._last_end)
        if task is not None and task in self._refused_calls:
            self._refused_calls.discard(task)  # a refused call's retry: says nothing of first calls
        elif task is None or task not in self._trial:
            self._firsts.append(False)  # a call admitted at its first try
        self._proven = max(self._proven, self._sent_window)
        self._admitted(at, task)
        # Only while calls wait for the window does an answer show it too small (RFC 7661): an
        # endpoint given fewer calls than the window proves nothing about more.
        if self.adaptive and self.window < self.ceiling and full:
            if self.window < self._threshold:
                # Slow start: the window doubles per window of answers, and never past twice the largest
                # window an answered call was sent in (a bound: late answers of calls sent in a small
                # window cannot take it further while the refusals of its overshoot are on their way).
                # Until the endpoint refuses a call, it reads the answers' latency for a queue ahead of the
                # endpoint (see queue_signal): more calls would only lengthen it. Once it refused one, its refusals
                # say more (a server refusing each request's first call, in this process, answers later as more
                # are in flight).
                step = 1.0
                if not self.rate_limited:
                    step, drain = self._queue.step(self._seq)
                    served = self.carried(self._queue.unqueued) if drain else None
                    if served is not None:
                        # The median lags the window by a window of answers, so the hold comes late: the calls
                        # sent meanwhile wait in the endpoint's queue, and a queue that opens at once (a server
                        # whose intake queues ahead of its gate) rushes the gate with all of them. Drained to a
                        # few more than the endpoint serves, it loses no answer per second and rushes few.
                        self.window = min(self.window, max(DRAIN * served, float(min(_INITIAL, self.ceiling))))
                self.window = max(self.window, min(self.window + step, 2.0 * max(self._proven, _INITIAL)))
            elif self._refused_at is not None and self.window + 1.0 >= self._refused_at:
                # Probing past where the endpoint refused: slowly, and more slowly each time it refused there again.
                step = 1.0 / (_PROBE * self._probe_scale * self.window)
                self.window += step
                if self.window >= self._refused_at:
                    # A whole step past it without refusal. The level above is probed slowly too (a steady limit
                    # refused the level it was cut from, and at once the one above it); past that, it has room again.
                    self._refused_at = self._refused_at + 1.0 if self._slow_levels > 1 else None
                    self._slow_levels -= 1
            else:
                self.window += 1.0 / self.window
            self.window = min(self.window, float(self.ceiling))
            self._changed()
        self._wake()

    def failed(self, tokens: float | None = None) -> None:
        """A call ended with an error that says nothing about the endpoint's limits."""
        task = asyncio.current_task()
        _, at = self._end(tokens, task)
        self._admitted(at, task)
        self._wake()

    def refused(self, retry_after: float | None, *, pause: bool = True, sent: tuple[int, int] | None = None) -> float:
        """A call the endpoint refused for its rate limit; the seconds that call should wait before
        trying again (its ``Retry-After``, else 0). ``pause``: a lone refusal holds every call of
        the endpoint until then (the endpoint limits by time, e.g. a quota per minute). ``sent``:
        the call's number and the calls in flight when it was sent (ended already), else it ends here."""
        seq, at = self._end(None, asyncio.current_task()) if sent is None else sent
        self.rate_limited += 1
        wait = max(0.0, retry_after) if retry_after is not None else 0.0
        if self.adaptive:
            # The endpoint was full with the ``others`` of ours in flight when the call was sent (not
            # when its refusal came back: calls sent since, in a growing window, prove nothing).
            # Sent alone but refused with calls of ours in flight: those, as when it came back.
            others = at - 1 if at > 1 else self.in_flight
            if others > 0:
                new = seq > self._recover
                if new:
                    # Sent after the last cut: a new signal. Refusals of calls sent before it (a window
                    # too large, already cut) lower it to their level at most, never compounding below
                    # _BETA of the window they were sent in (TCP's one cut per window, RFC 6582).
                    self._base = self.window
                    self._recover = self._seq
                before = self.window
                # That is the window it carries. Not below _BETA, though: the endpoint may still hold
                # calls whose answers we already have (it frees them a moment later).
                # Slow start doubles the window in the time a refusal takes to come back: the first
                # cut may halve it (RFC 5681's FlightSize / 2), later ones take it to _BETA at most.
                # Beyond what the endpoint was shown to carry, the calls in flight when it was sent say
                # little (the window overshot, and the endpoint took calls in no order): what it carried.
                floor = (0.5 if self._threshold >= self.ceiling else _BETA) * self._base
                if not self._answers:
                    # No answer yet: every call in flight went out in the first window at once, and the endpoint
                    # holds those not refused yet (not the calls in flight when this one was sent: the first
                    # window's calls reach it in no set order). Each refusal of that window lowers it to them, so
                    # once the last is back the window is what the endpoint took.
                    floor = 1.0
                    others = max(1, self.in_flight)
                self._cuts += 1
                carried = self.carried()
                if carried is not None and self._queue.queueing():
                    # The answers queue ahead of the endpoint: the calls it served at once are those its
                    # unqueued answers' time holds at this rate (Little's law without the queue); the rest
                    # waited in front of it and rush it when the queue drains.
                    carried = min(carried, self.carried(self._queue.unqueued) or carried)
                level = float(others) if carried is None else min(float(others), max(1.0, round(carried)))
                self.window = min(self.window, max(level, floor))
                self._threshold = min(self._threshold, self.window)
                if not self._answers:
                    self._first_level = self.window
                if new:
                    # A new cut (not the rest of one) at about the level of the last: the endpoint's limit is
                    # steady there, and each probe past it costs a refusal: probe half as often. Higher: it
                    # moved, probe at the usual pace.
                    steady = self._last_cut is not None and self.window <= self._last_cut + 1.0
                    self._probe_scale = min(_MAX_PROBE_SCALE, 2 * self._probe_scale) if steady else 1
                self._last_cut = self.window
                # Probe slowly up to where it refused, and the level above it.
                self._refused_at = max(self.window + 1.0, min(before, float(at)))
                self._slow_levels = _SLOW_LEVELS
            else:
                # Refused with nothing else in flight: a limit in time, not in concurrency.
                if pause and retry_after is not None:
                    self._paused_until = max(self._paused_until, time.monotonic() + wait)
                self._threshold = max(1.0, self.window / 2)
                self.window = 1.0
            self._changed()
        self._wake()
        return wait

    def ended_with(self, exc: BaseException, absorbed: int, max_wait: float | None = None) -> float | None:
        """A call ended by ``exc``; when it is a rate-limit answer this limit absorbs, the seconds to
        wait before trying the call again, else None (an ordinary failure, for the caller's retries).

        A call's first refusal that names no time to wait is put on trial (see the module): the call
        is sent again at once in the slot it held (after ``_LONE_PAUSE`` when it
        was alone in flight, as the endpoint may still be freeing calls it answered). Its retry
        refused too (``absorbed`` > 0) is a capacity signal, as is a first refusal that says when to
        come back.

        Absorbed (``adaptive``, fewer than ``MAX_ABSORBED`` for this call so far): a refusal while
        other calls of ours were in flight (the limit falls to them), a lone refusal whose
        ``Retry-After`` says when to come back, up to ``max_wait`` seconds, or the first
        ``_LONE_TRIES`` lone refusals that do not say when. Past those, or when it asks for longer,
        a lone refusal is the caller's to retry or record (an exhausted quota)."""
        rate = rate_limit_of(exc)
        if rate is None:
            self.failed()
            return None
        lone = self.in_flight <= 1
        told = rate.retry_after is not None and (max_wait is None or rate.retry_after <= max_wait)
        task = asyncio.current_task()
        sent = self._end(None, task)
        if task is not None:
            self._refused_calls.add(task)
        if task is not None and task in self._trial:
            del self._trial[task]
            self._verdicts.append(True)  # the retry was refused too: this endpoint's refusals are capacity
        # A request's first refusal, with or without a Retry-After to obey (a gateway refusing each request's first
        # call may say when to come back: its retry, that long after, is admitted all the same).
        first = self.adaptive and absorbed == 0 and task is not None and (rate.retry_after is None or told)
        if first:
            self._firsts.append(True)
            if self._undo is None and not self._verdicts:
                # Before any trial's verdict: what the limit was before this first refusal cut it, trial or not (the
                # first window's refusals come back in no set order: those not on trial may cut it first).
                self._undo = (self.window, self._threshold)
        if first and task is not None and self._on_trial(*sent):
            self._again.add(task)
            self._trial[task] = sent[1]
            if not self._per_request() and sent[1] > 1:
                # Until refusals are shown per-request, one may be the endpoint's limit: it cuts the
                # limit as such (undone when its retry, or another's, shows it per-request).
                if self._undo is None:
                    self._undo = (self.window, self._threshold)
                self.refused(None, sent=sent)
            else:
                self.rate_limited += 1
            wait = _LONE_PAUSE if lone else 0.0
            if told and (rate.retry_after or 0.0) > 0:
                wait = max(wait, float(rate.retry_after or 0.0))  # a Retry-After is obeyed; its retry then takes its slot back
            self.waited += wait
            # No waiter is woken: the slot is this call's retry's, which the caller starts next
            # (at once, so nothing else takes it; or after a lone pause, when the limit has room anyway).
            return wait
        # A lone refusal that says nothing may be the endpoint still freeing calls it has answered:
        # tried again a few times after a short, growing pause, then left to the caller.
        untold = lone and not told and absorbed < _LONE_TRIES
        absorb = self.adaptive and absorbed < MAX_ABSORBED and (told or not lone or untold)
        wait = self.refused(rate.retry_after if told else None, pause=absorb, sent=sent)
        if not absorb:
            return None
        if untold:
            wait = _LONE_PAUSE * 2 ** absorbed
        self.waited += wait
        return wait

    def lesson(self) -> int | str | None:
        """What to keep of this endpoint for the next run (``levelfield._core.run.learned``): the limit it ran
        at when its capacity refused calls; ``"carried"`` when, with nothing learned, it held its whole ceiling in
        flight without refusing a call (the next run starts at it, not at half); ``"forget"`` when it reached the
        ceiling otherwise (past a learned limit: ``"forget"``, or the higher limit it reached); None when there is
        nothing to learn."""
        if not self.adaptive or not self.calls:
            return None
        if self._cuts and not self._per_request():
            # The limit at the end, or what the endpoint took of the first window when that is more: later cuts
            # also follow our own lag (a loaded machine counts calls the endpoint has already answered), and a
            # start too high costs one cut next time where one too low is probed past slowly.
            level = max(self.limit, int(self._first_level))
            return "forget" if level >= self.ceiling else level
        if self.learned is not None and self.limit > self.learned:
            return "forget" if self.limit >= self.ceiling else self.limit
        if self.learned is None and not self.rate_limited and self.limit >= self.ceiling:
            if self.peak >= self.ceiling:
                return "carried"  # held its whole ceiling in flight, none refused: the next run starts there
            return "forget"  # an endpoint learned under a lower ceiling may be forgotten by another evaluation
        return None

    # -- statistics ------------------------------------------------------------------------
    def _account(self) -> None:
        now = time.monotonic()
        if self.in_flight > 0:
            span = now - self._mark
            self._area += self.in_flight * span
            self._busy += span
        self._mark = now

    def stats(self) -> LimitStats:
        """What this endpoint's limit did so far."""
        self._account()
        mean = self._area / self._busy if self._busy > 0 else 0.0
        return LimitStats(
            endpoint=self.endpoint,
            ceiling=self.ceiling,
            limit=self.limit,
            mean_in_flight=round(mean, 2),
            peak_in_flight=self.peak,
            calls=self.calls,
            rate_limited=self.rate_limited,
            per_request=self.per_request,
            waited_seconds=round(self.waited, 3),
            adaptive=self.adaptive,
            start=self.start,
            learned=self.learned is not None,
        )

    def __repr__(self) -> str:
        return f"EndpointLimit({self.endpoint!r}, limit={self.limit}, ceiling={self.ceiling}, in_flight={self.in_flight})"
