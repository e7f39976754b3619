"""The command line: ``levelfield demo | eval | compare | report | plan | view | watch | serve | a2a-check |
judge-check``, one module per command (``add_parser`` and ``run``), put together by ``main``."""

from .main import main

__all__ = ["main"]
