"""``levelfield watch``: score production traces as they arrive, journal them in time windows, alert on drift.

Above ``formats`` and ``core``; nothing below imports it. Its heavy packages (uvicorn, starlette,
opentelemetry-proto, the OTLP exporter, mlflow) are imported when a watcher starts. Modules:
``spool`` (accepted requests on disk until journaled), ``assembly`` (spans into traces),
``sampling`` (which traces are scored: a share, per-route rules), ``receiver`` (OTLP/HTTP),
``scoring`` (the scoring thread), ``windows`` (the windowed run records), ``drift`` (alerts
against a baseline), ``sources`` (a folder of trace files, MLflow), ``exporting`` (scores and
alerts over OTLP), ``assessments`` (scores back to MLflow), ``summary`` (what ``levelfield report
DIR`` shows), ``status`` (the watcher's counters), ``options`` (its options checked), ``service``
(the watcher that ties them together).
"""

from .service import Watcher, watch
from .status import WatchStats

__all__ = ["Watcher", "WatchStats", "watch"]
