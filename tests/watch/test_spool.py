"""The watch spool's writes: each batched flush is a task the spool holds until it is done (the event
loop keeps only weak references to tasks), and ``drain`` waits for every request appended so far, so
what the receiver took before a stop is on disk when the spool is closed."""

from __future__ import annotations

import asyncio

from levelfield.watch.spool import JSON, Spool


async def test_flushes_are_held_until_done_and_drained_before_close(tmp_path):
    spool = Spool(tmp_path, fsync=False)
    spool.open()
    writers = [asyncio.create_task(spool.append(JSON, f'{{"n": {i}}}'.encode(), [f"trace-{i}"])) for i in range(40)]
    await asyncio.sleep(0)  # the writers queued their frames; the first flush is under way
    assert spool._flushing, "the flush in flight is held by the spool (the loop alone keeps a weak reference)"
    await spool.drain()
    assert not spool._flushing
    assert all(w.done() and not w.cancelled() for w in writers)
    segments = {w.result() for w in writers}
    spool.close()

    again = Spool(tmp_path)
    again.open()
    bodies = sorted(frame.body for frame in again.replay())
    assert bodies == sorted(f'{{"n": {i}}}'.encode() for i in range(40))
    assert len(segments) == 1


async def test_close_cancels_writes_still_in_flight(tmp_path):
    spool = Spool(tmp_path, fsync=False)
    spool.open()
    writer = asyncio.create_task(spool.append(JSON, b'{"n": 1}', ["t"]))
    await asyncio.sleep(0)
    flushing = set(spool._flushing)
    assert flushing
    spool.close()
    await asyncio.gather(*flushing, return_exceptions=True)
    assert all(task.cancelled() for task in flushing)
    writer.cancel()
