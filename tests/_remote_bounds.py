"""A server on 127.0.0.1 that serves its agent card badly: one byte at a time (``trickle``) or without end
(``huge``), counting the bytes it managed to send, so a test can see where the reader stopped."""

from __future__ import annotations

import socket
import threading

CARD = (b'{"name": "slow", "description": "an agent whose card trickles", "version": "1", "capabilities": {}, '
        b'"defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [], '
        b'"supportedInterfaces": [{"url": "http://127.0.0.1:1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}')


class BadCardServer:
    """``mode="trickle"``: the card one byte every ``every`` seconds (all of it would take minutes);
    ``mode="trickle_answers"``: the card at once, and every other answer (the probes') one byte at a time;
    ``mode="huge"``: a card that never ends (64 KB at a time, up to ``limit`` bytes), no Content-Length."""

    def __init__(self, mode: str, *, every: float = 0.5, limit: int = 1 << 30) -> None:
        self.mode, self.every, self.limit = mode, every, limit
        self.served = 0
        """Bytes of card body sent, over every connection."""
        self.requests = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _count(self, n: int) -> None:
        with self._lock:
            self.served += n

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        with conn:
            request = b""
            try:
                while b"\r\n\r\n" not in request:
                    got = conn.recv(4096)
                    if not got:
                        return
                    request += got
            except OSError:
                return
            with self._lock:
                self.requests += 1
            try:
                if self.mode == "trickle_answers" and request.startswith(b"GET"):  # the card at once, the rest trickles
                    card = CARD.replace(b"http://127.0.0.1:1", self.url.encode())
                    # Connection: close, since this server answers one request a connection: a client that
                    # kept the connection for its next request would read the close as an error (ReadError)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(card) + card)
                elif self.mode in ("trickle", "trickle_answers"):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(CARD))
                    for i in range(len(CARD)):
                        if self._stop.wait(self.every):
                            return
                        conn.sendall(CARD[i:i + 1])
                        self._count(1)
                else:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                                 b'{"name": "')
                    chunk = b"x" * (64 << 10)
                    while self.served < self.limit and not self._stop.is_set():
                        conn.sendall(chunk)
                        self._count(len(chunk))
            except OSError:  # the reader went away: where it stopped is what the test measures
                return

    def close(self) -> None:
        self._stop.set()
        self._accepting.join(timeout=5)
        self._sock.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> BadCardServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
