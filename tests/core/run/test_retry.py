"""The one retry loop (call_with_retries) and the one transient-error classifier (is_transient)
that agents, simulated users and judges share."""

import asyncio
import random

import pytest

import levelfield as lf
from levelfield._core.run.retry import BACKOFF_CAP, backoff_delay, call_with_retries, is_transient
from levelfield.judge import is_transient_judge_error


class Flaky:
    """A call that raises the errors it is given, in order, then answers "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.fixture
def sleeps(monkeypatch):
    """The seconds every asyncio.sleep was asked for (each then sleeps 0)."""
    asked: list[float] = []
    real = asyncio.sleep

    async def sleep(seconds, *args, **kwargs):
        asked.append(seconds)
        await real(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    return asked


# -- backoff ----------------------------------------------------------------------------------


def test_backoff_doubles_with_each_retry_below_its_full_jitter():
    assert [backoff_delay(n, 0.5, rng=lambda: 0.5) for n in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, 2.0]
    assert backoff_delay(3, 0.5, rng=lambda: 0.0) == 0.0


def test_backoff_with_a_seeded_random_stays_within_zero_and_its_ceiling():
    rng = random.Random(7)
    for retry in range(1, 8):
        ceiling = 0.1 * 2 ** (retry - 1)
        draws = [backoff_delay(retry, 0.1, cap=None, rng=rng.random) for _ in range(200)]
        assert all(0.0 <= d < ceiling for d in draws)
        # Full jitter spreads the waits over the whole range, not around the ceiling.
        assert min(draws) < ceiling * 0.1 and max(draws) > ceiling * 0.9


def test_backoff_never_exceeds_its_cap():
    assert backoff_delay(30, 1.0, cap=5.0, rng=lambda: 0.999) == pytest.approx(4.995)
    assert backoff_delay(30, 1.0, rng=lambda: 0.999) < BACKOFF_CAP
    assert backoff_delay(30, 1.0, cap=None, rng=lambda: 0.5) == 2.0 ** 28


def test_the_loop_waits_the_jittered_backoff_between_retries(sleeps):
    call = Flaky(lf.TransientAgentError("503"), lf.TransientAgentError("503"), lf.TransientAgentError("503"))
    tried = asyncio.run(call_with_retries(call, retries=3, backoff=0.1, cap=0.3, rng=lambda: 0.5))
    assert tried.value == "ok" and tried.error is None and tried.attempts == 4 and call.calls == 4
    assert sleeps == pytest.approx([0.05, 0.1, 0.15])  # 0.1, 0.2, then 0.4 capped at 0.3; halved by the draw


# -- retries ----------------------------------------------------------------------------------


def test_a_transient_error_that_persists_is_returned_after_the_retries():
    error = lf.TransientAgentError("429")
    call = Flaky(*[error] * 5)
    tried = asyncio.run(call_with_retries(call, retries=2, backoff=0.0))
    assert tried.value is None and tried.error is error and tried.attempts == 3 and call.calls == 3


def test_an_error_not_worth_retrying_is_returned_at_once():
    error = ValueError("bad input")
    call = Flaky(error)
    tried = asyncio.run(call_with_retries(call, retries=5, backoff=0.0))
    assert tried.error is error and tried.attempts == 1 and call.calls == 1


def test_the_caller_chooses_what_is_transient():
    call = Flaky(TimeoutError(), TimeoutError())
    assert asyncio.run(call_with_retries(call, retries=1, backoff=0.0)).attempts == 1  # an agent's: not marked
    call = Flaky(TimeoutError(), TimeoutError())
    tried = asyncio.run(call_with_retries(call, retries=2, backoff=0.0, transient=is_transient_judge_error))
    assert tried.value == "ok" and tried.attempts == 3


def test_its_own_cancelled_error_is_a_failure_not_a_retry():
    call = Flaky(asyncio.CancelledError(), asyncio.CancelledError())
    tried = asyncio.run(call_with_retries(call, retries=3, backoff=0.0))
    assert isinstance(tried.error, asyncio.CancelledError) and call.calls == 1


def test_cancelling_the_caller_mid_backoff_stops_the_loop():
    call = Flaky(*[lf.TransientAgentError("503")] * 5)

    async def main():
        task = asyncio.ensure_future(call_with_retries(call, retries=5, backoff=30.0, rng=lambda: 1.0))
        while call.calls == 0:
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)  # the task is in its 30 s backoff now
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), 5))
    assert call.calls == 1


def test_cancelling_the_caller_mid_call_is_raised_not_returned():
    started = asyncio.Event()

    async def hangs():
        started.set()
        await asyncio.sleep(30)

    async def main():
        task = asyncio.ensure_future(call_with_retries(hangs, retries=3, backoff=0.0))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), 5))


# -- the endpoint's limit ---------------------------------------------------------------------


class Limit:
    """An endpoint limit that absorbs the first ``absorb`` rate-limit answers (waits 0.5 s each)."""

    def __init__(self, absorb: int) -> None:
        self.absorb = absorb
        self.log: list[str] = []

    async def acquire(self) -> float:
        self.log.append("acquire")
        return 0.25

    def ended_with(self, exc, absorbed, max_wait=None):
        if isinstance(exc, lf.RateLimitedError) and absorbed < self.absorb:
            self.log.append("absorbed")
            return 0.5
        self.log.append("failed")
        return None

    def success(self, tokens=None):
        self.log.append(f"success {tokens}")

    def failed(self, tokens=None):
        self.log.append("failed")


def test_absorbed_rate_limits_are_waited_out_without_spending_a_retry(sleeps):
    limit = Limit(absorb=2)
    waits: list[tuple[float, bool]] = []
    call = Flaky(lf.RateLimitedError("429"), lf.RateLimitedError("429"))
    tried = asyncio.run(call_with_retries(call, retries=0, backoff=0.0, limit=limit, tokens=lambda v: len(v),
                                          on_wait=lambda s, absorbed: waits.append((s, absorbed))))
    assert tried.value == "ok" and tried.attempts == 1 and tried.calls == 3
    assert limit.log == ["acquire", "absorbed", "acquire", "absorbed", "acquire", "success 2"]
    assert waits == [(0.25, False), (0.5, True), (0.25, False), (0.5, True), (0.25, False)]
    assert sleeps == [0.5, 0.5]


def test_a_rate_limit_the_limit_does_not_absorb_is_the_retries_to_decide():
    limit = Limit(absorb=1)
    call = Flaky(*[lf.RateLimitedError("429")] * 4)
    tried = asyncio.run(call_with_retries(call, retries=1, backoff=0.0, limit=limit))
    assert isinstance(tried.error, lf.RateLimitedError) and tried.attempts == 2 and tried.calls == 3
    assert limit.log.count("failed") == 2


# -- the classifier ---------------------------------------------------------------------------


class Status(Exception):
    def __init__(self, status_code=None, code=None):
        super().__init__("provider error")
        if status_code is not None:
            self.status_code = status_code
        if code is not None:
            self.code = code


class RateLimitError(Exception):
    """A provider SDK's class, matched by name."""


class Marked(Exception):
    transient = True


class Hostile(Exception):
    def __getattr__(self, name):
        raise RuntimeError("no attributes here")


class MarkedBool(Exception):
    @property
    def transient(self):
        class Unsure:
            def __bool__(self):
                raise ValueError("cannot say")

        return Unsure()


def _response(status):
    class Response:
        status_code = status

    error = Exception("http error")
    error.response = Response()
    return error


# (the exception, transient for an agent, for a simulated user, for a judge): an agent's adapter
# marks what is worth retrying; a simulated user's model errors are retried too; a judge's
# timeouts and dropped connections as well.
CLASSIFIER = {
    "TransientAgentError": (lf.TransientAgentError("503"), True, True, True),
    "RateLimitedError": (lf.RateLimitedError("429", retry_after=1.0), True, True, True),
    "marked attribute": (Marked(), True, True, True),
    "error_type transient": (lf.AgentOutputError("x", error_type="transient"), True, True, True),
    "other AdapterError": (lf.AgentOutputError("x"), False, False, False),
    "ValueError": (ValueError("x"), False, False, False),
    "PermissionError": (PermissionError("bad key"), False, False, False),
    "RuntimeError": (RuntimeError("simulator model unreachable"), False, False, False),
    "TimeoutError": (TimeoutError(), False, False, True),
    "asyncio.TimeoutError": (asyncio.TimeoutError(), False, False, True),
    "ConnectionError": (ConnectionRefusedError(), False, False, True),
    "status 429": (Status(429), False, True, True),
    "status 503": (Status(503), False, True, True),
    "status 500": (Status(500), False, True, True),
    "status 408": (Status(408), False, True, True),
    "status 409": (Status(409), False, True, True),
    "status 400": (Status(400), False, False, False),
    "status 404": (Status(404), False, False, False),
    "code 429": (Status(code=429), False, True, True),
    "response 502": (_response(502), False, True, True),
    "response 401": (_response(401), False, False, False),
    "RateLimitError by name": (RateLimitError("slow down"), False, True, True),
    "SystemExit(500)": (SystemExit(500), False, False, False),
    "KeyboardInterrupt": (KeyboardInterrupt(), False, False, False),
    "CancelledError": (asyncio.CancelledError(), False, False, False),
    "hostile __getattr__": (Hostile(), False, False, False),
    "transient that cannot say": (MarkedBool(), False, False, False),
}


@pytest.mark.parametrize("name", list(CLASSIFIER))
def test_the_classifier_answers_each_caller_as_its_policy_says(name):
    exc, agent, simulator, judge = CLASSIFIER[name]
    assert is_transient(exc) is agent
    assert is_transient(exc, provider_errors=True) is simulator
    assert is_transient(exc, provider_errors=True, timeouts=True) is judge
    assert is_transient_judge_error(exc) is judge
