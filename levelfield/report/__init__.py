"""The HTML report of a comparison: ``render_report(cmp)`` and ``write_report(cmp, path)``."""

from .html import render_report, write_report

__all__ = ["render_report", "write_report"]
