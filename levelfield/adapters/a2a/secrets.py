"""Credentials sent but never recorded: which header and query names carry one, every form of
their values a server could echo (a Bearer token alone, a Basic pair decoded, percent-encoded),
one pattern that replaces them by ``***``, and URLs shown to a person with theirs hidden."""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Mapping

__all__ = ["is_credential_name", "hide_url_credentials"]

_REDACTED = "***"


_CREDENTIAL_NAME = re.compile(
    r"auth|token|key|secret|passw|pwd|cookie|session|credential|signature|bearer|jwt|^sig$|^code$", re.IGNORECASE
)


def is_credential_name(name: str) -> bool:
    """Whether a header or query parameter named ``name`` carries a credential (its value is redacted).

    By name: ``Authorization``, ``Proxy-Authorization``, ``X-API-Key``, ``api-key``, ``Cookie``,
    ``X-Auth-Token``, ``?token=``, ``?access_token=``, ``?sig=``... A header such as ``X-Tag`` or a
    parameter such as ``?tenant=`` is sent as it is and never redacted.
    """
    return bool(_CREDENTIAL_NAME.search(name))


def _header_secrets(name: str, value: str) -> list[str]:
    """The secret strings in one credential header's value: the whole value and the parts a server
    may echo alone (the token after ``Bearer``, a Basic pair decoded, each cookie's value)."""
    found = [value]
    scheme, _, rest = value.partition(" ")
    if rest and " " not in rest.strip():
        found.append(rest.strip())  # "Bearer s3cret": a server may echo the token alone
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(rest.strip(), validate=True).decode()
            except ValueError:
                pair = ""
            if ":" in pair:
                found += [pair, pair.partition(":")[2]]
    if "cookie" in name.lower():
        found += [v.strip() for _, _, v in (c.partition("=") for c in value.split(";"))]
    return found


def _secrets(
    headers: Mapping[str, str], auth: tuple[str, str] | None, params: list[tuple[str, str]]
) -> tuple[str, ...]:
    """Every credential string to redact, longest first (so a token inside a value goes too).

    Exact values of any length: the credential headers' values, the URL's password and
    ``user:password`` (and the Basic header it becomes), credential query values; each also as
    it appears percent-encoded in a URL. A user name alone is no secret and stays.
    """
    found: list[str] = []
    for name, value in headers.items():
        if is_credential_name(name):
            found += _header_secrets(name, value)
    if auth:
        pair = f"{auth[0]}:{auth[1]}"
        found += [auth[1], pair, base64.b64encode(pair.encode()).decode()]
    found += [value for name, value in params if is_credential_name(name)]
    every = set(found)
    for value in found:
        every.update((urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")))
    return tuple(sorted((v for v in every if v), key=len, reverse=True))


_WHOLE_WORD = 8
"""Secrets shorter than this are replaced only where they stand alone (not inside a longer word):
``pw`` is redacted in "password pw", never in "pwd"; a longer one is replaced wherever it occurs."""


def _secret_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex matching every secret exactly (short ones as whole words), longest first."""
    if not secrets:
        return None
    alternatives = [
        re.escape(s) if len(s) >= _WHOLE_WORD else rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])"
        for s in secrets
    ]
    return re.compile("|".join(alternatives))


def hide_url_credentials(text: str) -> str:
    """``text`` with the password and credential query values of every http(s) URL in it shown as ``***``.

    For text shown to a person (a command to run again): the user name, host, path and other
    parameters stay, so the place the credentials go back is visible.
    """

    def hide(match: re.Match[str]) -> str:
        parts = urllib.parse.urlsplit(match.group(0))
        netloc = parts.netloc
        user, at, host = netloc.rpartition("@")
        if at and ":" in user:
            netloc = f"{user.partition(':')[0]}:{_REDACTED}@{host}"
        query = "&".join(
            f"{name}={_REDACTED}" if is_credential_name(urllib.parse.unquote_plus(name)) and sep else f"{name}{sep}{value}"
            for name, sep, value in (item.partition("=") for item in parts.query.split("&") if item)
        )
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))

    return re.sub(r"https?://[^\s'\"]+", hide, text)
