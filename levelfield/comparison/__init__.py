"""The comparison wing: a :class:`Comparison` (``lf.Comparison``) and everything that reads one: its
cases (``_cases``), its record on disk (``_record``), its terminal text (``_text``) and verdict
(``_verdict``), robustness under faults (``_robustness``), a recorded baseline (``_baseline``), the
failures of its runs (``_failures``) and whether two results are comparable (``_comparability``).

Every module here is private: the public names are exported by ``levelfield`` itself (``lf.Comparison``,
``lf.EvaluatorsDifferError``, ...). Nothing here imports the report, the gate or the command line, which
read a comparison from above.
"""
