"""Dollars as every readout writes them: plain decimals a reader can compare at a glance.

A run of a small model costs millionths of a dollar; Python's ``:g`` writes that ``8.32e-06``, which
no one reads as money. Below a cent: two significant digits in plain decimals (``$0.0000083``,
``$0.0042``); from a cent on: cents (``$0.25``, ``$8.32``, ``$1,234.50``). The terminal table, the
verdict, the HTML report (so ``levelfield view``) and the command line's messages all call
:func:`dollars`, so one cost reads the same everywhere. Any layer may import it.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

__all__ = ["dollars"]


def dollars(amount: Any, *, sign: bool = True, unknown: str = "unknown") -> str:
    """``amount`` in dollars as text: ``$0.0000083`` below a cent, ``$8.32`` from a cent on.

    Args:
        amount: the dollars (a float, an int, a numpy number); NaN, None or infinite is ``unknown``.
        sign: write the ``$`` (a column headed "($)" leaves it out).
        unknown: the text for an amount not known.
    """
    try:
        value = float(amount)
    except (TypeError, ValueError):
        return unknown
    if not math.isfinite(value):
        return unknown
    mark = "$" if sign else ""
    minus = "-" if value < 0 else ""
    size = abs(value)
    if size == 0:
        return f"{mark}0.00"
    if size < 0.01:
        # Two significant digits, written out: format(Decimal) never uses an exponent with "f".
        digits = format(Decimal(f"{size:.2g}"), "f")
        if Decimal(digits) >= Decimal("0.01"):  # 0.00996 rounds up to a cent
            return f"{minus}{mark}0.01"
        return f"{minus}{mark}{digits}"
    return f"{minus}{mark}{size:,.2f}"
