"""The command line: ``levelfield demo | eval | compare | report | plan | serve``."""

from .main import main

__all__ = ["main"]
