"""A watcher's options refused when out of range, before anything starts, naming the option."""

from __future__ import annotations

import math
from typing import Any

from .._core.data.prices import price_table
from .._core.errors import ConfigError

__all__: list[str] = []  # private to the watcher: _check_options


def _check_options(*, otlp_port: Any, auth_token: Any, alpha: Any, margin: Any, min_window: Any, export_otlp: Any,
                   prices: Any, max_body: Any) -> None:
    """Refuse an option out of its range before anything starts, naming it."""
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    def whole(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    if otlp_port is not None and not (whole(otlp_port) and 0 <= otlp_port <= 65535):
        raise ConfigError(f"otlp_port={otlp_port!r}: give a port from 0 (any free one) to 65535, or None for no receiver")
    if auth_token is not None:
        from .._serving import check_token

        check_token(auth_token, "auth_token")
    if not (number(alpha) and 0 < alpha < 1):
        raise ConfigError(f"alpha={alpha!r}: the drift alerts' significance level must be between 0 and 1 (e.g. 0.05)")
    if not (number(margin) and margin >= 0):
        raise ConfigError(f"margin={margin!r}: give 0 or more, in the metric's units (0.02 = 2 points)")
    if not (whole(min_window) and min_window >= 1):
        raise ConfigError(f"min_window={min_window!r}: give a whole number of traces, 1 or more")
    if not (whole(max_body) and max_body >= 1):
        raise ConfigError(f"max_body={max_body!r}: give a whole number of bytes, 1 or more")
    if export_otlp is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(export_otlp) if isinstance(export_otlp, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"export_otlp={export_otlp!r}: give the http(s):// URL of an OTLP/HTTP endpoint, "
                              "e.g. http://127.0.0.1:4318")
    if prices is not None:
        price_table(prices)  # read now: a missing or bad file is refused at start, not at the first judged trace
