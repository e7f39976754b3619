"""Results: the run record (journal, save, load), ``EvalResult`` and ADK pass/fail criteria.

Imports ``core.errors``, ``core.data`` and ``core.score``."""
