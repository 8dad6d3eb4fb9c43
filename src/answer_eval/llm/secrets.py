"""Keeping credentials out of everything the LLM graders write or print.

A grader's reply is untrusted text: a server, a proxy or a prompt injection can make it quote the
request's ``Authorization`` header. :class:`Redactor` removes from any text the API key itself,
any ``Bearer`` token, the value of an ``Authorization``, ``api-key`` or ``x-api-key`` header, and
the password or key a server URL carries (``https://user:PASSWORD@host``, ``?api-key=...``). The
LLM graders pass every reply, explanation and error through it before it is cached, returned,
written or printed.

A key of fewer than 8 characters (a local server's placeholder such as ``ollama``) is replaced
only where it stands as a whole word, so that it does not turn every word holding it into ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "Redactor", "plausible_variable_name", "url_secrets", "without_credentials"]

MASK = "***"

_SHORT_KEY = 8
# A Bearer token (8 token characters or more, so "the bearer of bad news" stays), or a credential
# header's value after its scheme, as a reply might quote them ("Authorization: Bearer sk-...").
_BEARER = re.compile(
    r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{7,}[A-Za-z0-9_~+/=-]"
)  # a full stop after it is the sentence's
_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?(?:authorization|x-api-key|api-key|api_key)[\"']?\s*[:=]\s*[\"']?(?:(?:basic|token)\s+)?)"
    r"(?!bearer\b)[^\s\"',;]*[^\s\"',;.)\]]"
)
_SECRET_QUERY = re.compile(r"(?i)^(?:api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature)$")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def plausible_variable_name(name: object) -> bool:
    """Whether ``name`` could be an environment variable's name (letters, digits, ``_``; not a digit first).

    An API key given where the name of its variable is asked for is told by this: keys hold ``-``
    or other characters a variable's name has not, so such a value is refused without being shown.
    """
    return isinstance(name, str) and _VARIABLE.fullmatch(name) is not None


def url_secrets(url: str | None) -> list[str]:
    """The password and the secret query values a server URL carries (to redact wherever they appear)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
    except ValueError:
        return []
    found += [value for name, value in parse_qsl(parts.query, keep_blank_values=False) if _SECRET_QUERY.match(name)]
    return [value for value in found if value]


def without_credentials(url: str | None) -> str | None:
    """``url`` with its password and secret query values masked (what a signature or a message may show)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}:{MASK}@{host}"
        query = [(name, MASK if _SECRET_QUERY.match(name) else value) for name, value in parse_qsl(parts.query, True)]
    except ValueError:
        return MASK  # not a URL one can take apart: show none of it
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), parts.fragment))


class Redactor:
    """Removes the secrets it is given, and any Bearer token or credential header, from text."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        """Redact each of ``secrets`` (empty ones ignored), longest first so no part of one is left."""
        kept = sorted({secret for secret in secrets if isinstance(secret, str) and secret.strip()}, key=len)
        self.secrets = tuple(reversed(kept))
        patterns = [
            re.escape(secret) if len(secret) >= _SHORT_KEY else rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])"
            for secret in self.secrets
        ]
        self._own = re.compile("|".join(patterns)) if patterns else None

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        if not text:
            return text
        if self._own is not None:
            text = self._own.sub(MASK, text)
        text = _BEARER.sub(rf"\g<1>{MASK}", text)
        return _HEADER.sub(rf"\g<1>{MASK}", text)
