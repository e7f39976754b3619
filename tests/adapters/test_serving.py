"""The socket and URL helpers every levelfield server shares (serve, view)."""

from __future__ import annotations

import pytest

from levelfield._serving import bind, is_loopback, url_of


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:80"),
        ("0.0.0.0", "http://127.0.0.1:80"),  # a wildcard is reached through loopback from here
        ("", "http://127.0.0.1:80"),
        ("::", "http://[::1]:80"),
        ("::1", "http://[::1]:80"),
        ("[::1]", "http://[::1]:80"),  # already bracketed: not twice
        ("localhost", "http://localhost:80"),
    ],
)
def test_the_url_a_client_here_reaches(host, url):
    assert url_of(host, 80) == url


def test_loopback_is_this_machine_only():
    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost", "LOCALHOST"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "my-host", ""]))


def test_bind_port_0_picks_a_free_port_and_a_taken_port_names_the_address():
    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert port > 0
        # SO_REUSEADDR does not let a second socket bind a port someone listens on.
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            bind("127.0.0.1", port)
    finally:
        sock.close()
