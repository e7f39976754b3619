"""How wide text shows in a terminal, for plain-text tables that line up with Chinese and Japanese.

A wide (W) or full-width (F) character takes two columns, a combining mark or a zero-width
character none (Unicode's East Asian Width property, as terminals apply it). Any layer may import it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["width", "ljust", "rjust"]


def _columns(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def width(text: str) -> int:
    """The columns ``text`` takes in a terminal."""
    if text.isascii():
        return len(text)
    return sum(_columns(ch) for ch in text)


def ljust(text: str, columns: int) -> str:
    """``text`` padded with spaces on the right to ``columns`` terminal columns."""
    return text + " " * max(0, columns - width(text))


def rjust(text: str, columns: int) -> str:
    """``text`` padded with spaces on the left to ``columns`` terminal columns."""
    return " " * max(0, columns - width(text)) + text
