"""Statistics: intervals, paired tests, sample-size planning, change detection, judge correction.

Imports ``core.errors``, ``core.data`` and ``core.results`` (for types only)."""
