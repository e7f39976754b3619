"""Headless Chromium driven over the DevTools protocol, for the tests of pages (the report, the view).

The least of a DevTools client: numbered commands, events collected as they come. ``chromium()``
starts a browser with a fresh profile and yields its DevTools websocket address.
"""

import asyncio
import contextlib
import itertools
import json
import shutil
import subprocess
import time

import pytest

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
NO_CHROMIUM = "no chromium on PATH: install it (apt-get install chromium) to test pages in a browser"
PAGE_SECONDS = 120
"""How long a page may take to load (or an awaited event to come): generous, a loaded 2-core CI machine is slow."""


class Cdp:
    """Commands to one browser over its websocket, events kept in ``events``."""

    def __init__(self, ws):
        self.ws = ws
        self.ids = itertools.count(1)
        self.events = []

    async def send(self, method, params=None, session=None):
        msg_id = next(self.ids)
        msg = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        await self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    async def wait_for(self, method, after=0):
        """Wait for an event ``method`` among the events from position ``after`` on."""
        while not any(e.get("method") == method for e in self.events[after:]):
            self.events.append(json.loads(await self.ws.recv()))

    async def evaluate(self, expression, session):
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        return result["result"].get("value")

    async def load(self, action, session, timeout=PAGE_SECONDS):
        """Run ``action`` (a navigation, or script that clicks a link or submits a form) and wait until
        the page it leads to has loaded. Waits on the page itself, not on a ``Page.loadEventFired``: an
        event still in flight from an earlier load (about:blank's, a reload's) would end the wait
        before the new page is there. The page left is marked; the wait ends when an unmarked
        document is complete."""
        await self.evaluate("document.__levelfieldLeft = true", session)
        await action()
        deadline = time.monotonic() + timeout
        while True:
            try:
                if await self.evaluate("!document.__levelfieldLeft && document.readyState === 'complete'", session):
                    return
            except RuntimeError:  # the page's context went away mid-navigation: ask the next one
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no new page loaded within {timeout} s")
            await asyncio.sleep(0.05)

    async def wait_until(self, condition, timeout=PAGE_SECONDS):
        """Read events until ``condition(events)`` holds (AssertionError after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while not condition(self.events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"not seen within {timeout} s")
            try:
                self.events.append(json.loads(await asyncio.wait_for(self.ws.recv(), left)))
            except asyncio.TimeoutError:
                pass

    def errors(self):
        """Console errors, uncaught exceptions and failed loads seen so far."""
        return [
            e for e in self.events
            if e.get("method") == "Runtime.exceptionThrown"
            or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
            or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
        ]


@contextlib.contextmanager
def chromium(profile):
    """A headless Chromium with its profile in ``profile``; yields the DevTools websocket URL."""
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + PAGE_SECONDS
        while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start (exit code {proc.poll()})")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        yield f"ws://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
