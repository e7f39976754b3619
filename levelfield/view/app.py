"""The web app of ``levelfield view``: a Starlette application over a :class:`Catalog` of runs.

Pages are addressed by query parameters (``/run?run=runs/v2&failed=1``), so every view is a
link. Runs and cases are looked up by id in the catalog, never opened by a path the URL gives;
an unknown run or case is a 404. Every response carries a Content-Security-Policy that allows
the view's own stylesheet and script and nothing else (no inline script, no other origin), and
``no-store``, since a page shows runs that change. With an auth token every request must bring
it: ``Authorization: Bearer TOKEN``, or ``?token=TOKEN`` once (the view then sets an HttpOnly
cookie and drops the token from the address).
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from .._core.errors import LevelfieldError
from .._serving import check_token
from ..comparison._comparability import EvaluatorsDifferError
from ..report.html import asset, report_sections
from . import diff_pages, pages
from .catalog import Catalog
from .diff import Side, diff_runs, pair_agents
from .query import CaseQuery

__all__ = ["create_app", "check_token", "COOKIE", "CSP"]

COOKIE = "levelfield_view_token"
CSP = ("default-src 'none'; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; img-src data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
"""Inline styles stay allowed: the report colours an agent's name with a style attribute."""

_STATIC = {
    "report.css": ("report", "style.css", "text/css"),
    "view.css": ("view", "view.css", "text/css"),
    "view.js": ("view", "view.js", "text/javascript"),
}
_LOOPBACK = ["127.0.0.1", "localhost", "::1", "[::1]"]


def create_app(roots: Sequence[str | Path], *, token: str | None = None, allowed_hosts: Sequence[str] | None = None,
               rescan: float = 1.0) -> Any:
    """The view's ASGI app over the runs under ``roots``.

    ``allowed_hosts``: the Host headers answered (default: the loopback names, which shuts out a
    web page that points its own domain at 127.0.0.1); ``["*"]`` answers any.
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.routing import Route

    if token is not None:
        check_token(token)
    catalog = Catalog(roots, rescan=rescan)
    static = {name: _static(*spec) for name, spec in _STATIC.items()}

    routes = [
        Route("/", partial(_runs, catalog)),
        Route("/run", partial(_run, catalog)),
        Route("/case", partial(_case, catalog)),
        Route("/diff", partial(_diff, catalog)),
        Route("/diff/case", partial(_diff_case, catalog)),
        Route("/api/version", partial(_version, catalog)),
        Route("/static/{name}", partial(_asset, static)),
    ]
    middleware = [
        Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts or _LOOPBACK)),
        Middleware(_Guard, token=token),
    ]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={404: _not_found, 405: _not_found})
    app.state.catalog = catalog
    return app


def _static(package: str, name: str, media: str) -> tuple[str, str]:
    if package == "report":
        return asset(name), media
    return resources.files(__package__).joinpath("static").joinpath(name).read_text(encoding="utf-8"), media


# -- guarding every request ---------------------------------------------------------------------


class _Guard:
    """Security headers on every response; with a token, only requests that bring it get through."""

    def __init__(self, app: Any, token: str | None = None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse, RedirectResponse

        if self.token:
            request = Request(scope)
            given = request.query_params.get("token")
            if given is not None and _same(given, self.token):
                # Once: set the cookie and send the browser to the address without the token in it.
                query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                response: Any = RedirectResponse(_own_path(scope["path"]) + (f"?{query}" if query else ""), status_code=303)
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
                await _secured(response)(scope, receive, send)
                return
            header = request.headers.get("authorization", "")
            bearer = header[7:] if header.lower().startswith("bearer ") else ""
            if not (_same(bearer, self.token) or _same(request.cookies.get(COOKIE, ""), self.token)):
                response = PlainTextResponse(
                    "levelfield view: this server needs its auth token: open the address it printed (with ?token=...) "
                    "or send 'Authorization: Bearer TOKEN'", status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await _secured(response)(scope, receive, send)
                return

        async def secure_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _HEADER_NAMES]
                message = {**message, "headers": headers + _HEADERS}
            await send(message)

        await self.app(scope, receive, secure_send)


_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
_HEADER_NAMES = {k for k, _ in _HEADERS}


def _own_path(path: str) -> str:
    """``path`` when it is one of this server's own (a single leading ``/``, no scheme, no host, also once
    unquoted), else ``/``: a browser reads ``//host`` or ``/\\host`` as another site, so redirecting to
    the path a request came in on as it is would send the token's holder anywhere."""
    for form in (path, unquote(path)):
        parts = urlsplit(form.replace("\\", "/"))
        if not form.startswith("/") or form.replace("\\", "/").startswith("//") or parts.scheme or parts.netloc:
            return "/"
    return path


def _secured(response: Any) -> Any:
    for key, value in _HEADERS:
        response.headers[key.decode()] = value.decode()
    return response


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


# -- pages ---------------------------------------------------------------------------------------


def _html(text: str, status: int = 200) -> Any:
    from starlette.responses import HTMLResponse

    return HTMLResponse(text, status_code=status)


def _missing(what: str) -> Any:
    return _html(pages.not_found_page(what), 404)


async def _not_found(request: Any, exc: Any) -> Any:
    if getattr(exc, "status_code", 404) == 405:
        return _html(pages.not_found_page("this address only answers GET"), 405)
    return _missing(f"no page at {request.url.path}")


def _params(request: Any) -> dict[str, str]:
    return {k: v for k, v in request.query_params.items()}


async def _runs(catalog: Catalog, request: Any) -> Any:
    params = _params(request)
    runs = catalog.runs()
    against = params.get("baseline", "")
    against = against if against in runs else ""
    rows = [(run_id, index, catalog.baseline(run_id, against) if against else catalog.baseline(run_id))
            for run_id, index in runs.items()]
    return _html(_versioned(pages.runs_page(rows, params, sorted(runs)), catalog.version()))


def _versioned(page: str, version: str) -> str:
    # The version the page was rendered at: the script compares the polled one with it.
    return page.replace('<body data-poll=', f'<body data-version="{version}" data-poll=', 1)


async def _run(catalog: Catalog, request: Any) -> Any:
    run_id = request.query_params.get("run", "")
    index = catalog.get(run_id)
    if index is None:
        return _missing(f"no run {run_id!r} under the served folders")
    query = CaseQuery.parse(_params(request))
    cmp, why = catalog.comparison(run_id)
    cases = pages.cases_section(run_id, index, query)
    report = None
    if cmp is not None:
        report = report_sections(cmp, cases=cases, case_link=lambda cid: f"/case?{urlencode({'run': run_id, 'case': cid})}")
    page = pages.run_page(run_id, index, query, sorted(catalog.runs()), report=report, why_not=why)
    return _html(_versioned(page, catalog.version(run_id)))


async def _case(catalog: Catalog, request: Any) -> Any:
    run_id = request.query_params.get("run", "")
    case_id = request.query_params.get("case", "")
    index = catalog.get(run_id)
    if index is None:
        return _missing(f"no run {run_id!r} under the served folders")
    position = index.position(case_id)
    if position is None:
        return _missing(f"run {run_id!r} has no case {case_id!r}")
    try:
        case, runs = index.detail(position)
    except LevelfieldError as exc:
        return _html(pages.not_found_page(f"this case cannot be read back: {exc}"), 500)
    return _html(_versioned(pages.case_page(run_id, index, position, case, runs), catalog.version(run_id)))


def _sides(catalog: Catalog, request: Any) -> tuple[Side, Side] | Any:
    q = request.query_params
    a_id, b_id = q.get("a", ""), q.get("b", "")
    if not a_id or not b_id:
        return _html(pages.not_found_page("pick two runs to diff: one as A (the baseline) and one as B (the new run)"), 400)
    a, b = catalog.get(a_id), catalog.get(b_id)
    for run_id, index in ((a_id, a), (b_id, b)):
        if index is None:
            return _missing(f"no run {run_id!r} under the served folders")
    assert a is not None and b is not None
    pair = pair_agents(a, b, q.get("agent_a", ""), q.get("agent_b", ""))
    if pair is None:
        return _html(pages.not_found_page("one of these runs has no agent yet"), 404)
    return Side(a_id, a, pair[0]), Side(b_id, b, pair[1])


def _agents_form(a: Side, b: Side) -> str:
    if len(a.index.agents) <= 1 and len(b.index.agents) <= 1:
        return ""
    from ..report.html import escape as esc

    def options(side: Side) -> str:
        return "".join(f'<option value="{esc(x)}"{" selected" if x == side.agent else ""}>{esc(x)}</option>' for x in side.index.agents)

    return (
        f'<form class="controls" method="get" action="/diff"><input type="hidden" name="a" value="{esc(a.run_id)}">'
        f'<input type="hidden" name="b" value="{esc(b.run_id)}"><label>agent of A <select name="agent_a">{options(a)}</select></label>'
        f'<label>agent of B <select name="agent_b">{options(b)}</select></label><button type="submit">compare</button></form>'
    )


async def _diff(catalog: Catalog, request: Any) -> Any:
    sides = _sides(catalog, request)
    if not isinstance(sides, tuple):
        return sides
    a, b = sides
    allow = request.query_params.get("allow_different_evaluators", "") in ("1", "true", "yes")
    try:
        diff = diff_runs(a, b, allow_different_evaluators=allow, warn=False)
    except EvaluatorsDifferError as exc:
        anyway = pages.href("/diff", a=a.run_id, b=b.run_id, agent_a=a.agent, agent_b=b.agent, allow_different_evaluators=1)
        return _html(diff_pages.evaluators_differ_page(str(exc), anyway), 409)
    metric = request.query_params.get("metric", "")
    if metric and metric not in diff.metrics:
        return _missing(f"these runs share no metric {metric!r}")
    page = CaseQuery.parse(_params(request)).page
    return _html(_versioned(diff_pages.diff_page(diff, metric=metric, page=page, agents_form=_agents_form(a, b)),
                            catalog.version()))


async def _diff_case(catalog: Catalog, request: Any) -> Any:
    sides = _sides(catalog, request)
    if not isinstance(sides, tuple):
        return sides
    a, b = sides
    case_id = request.query_params.get("case", "")
    pa, pb = a.index.position(case_id), b.index.position(case_id)
    if pa is None or pb is None:
        return _missing(f"case {case_id!r} is not in both runs")
    try:
        case_a, runs_a = a.index.detail(pa)
        case_b, runs_b = b.index.detail(pb)
    except LevelfieldError as exc:
        return _html(pages.not_found_page(f"this case cannot be read back: {exc}"), 500)
    # Scores as each run's statistics count them (a failed run as 0 under its rule), as the diff compared them.
    runs_a = [(r, a.index.counted(pa, r, s)) for r, s in runs_a if r.agent_name == a.agent]
    runs_b = [(r, b.index.counted(pb, r, s)) for r, s in runs_b if r.agent_name == b.agent]
    differs = (case_a.reference, case_a.reference_trajectory) != (case_b.reference, case_b.reference_trajectory)
    back = pages.href("/diff", a=a.run_id, b=b.run_id, agent_a=a.agent, agent_b=b.agent)
    return _html(_versioned(diff_pages.diff_case_page(back, a, b, case_b, runs_a, runs_b, differs), catalog.version()))


async def _version(catalog: Catalog, request: Any) -> Any:
    from starlette.responses import JSONResponse

    run_id = request.query_params.get("run") or None
    if run_id is not None and catalog.get(run_id) is None:
        return JSONResponse({"error": "no such run"}, status_code=404)
    return JSONResponse({"version": catalog.version(run_id)})


async def _asset(static: dict[str, tuple[str, str]], request: Any) -> Any:
    from starlette.responses import Response

    found = static.get(request.path_params["name"])
    if found is None:
        return _missing("no such file")
    return Response(found[0], media_type=found[1])

