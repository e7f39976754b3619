"""The entry points, private: ``evaluate``/``aevaluate`` and ``EvalTask`` (``evaluation``),
``compare``/``acompare`` (``comparing``), what both do around the engine (``shared``) and experiment
logging to MLflow (``experiment``). Users reach them as ``lf.evaluate``, ``lf.compare``, ``lf.EvalTask``.
"""
