"""`tilewave say --server URL` (or $TILEWAVE_SERVER): the speech made by a running local `tilewave serve`, so that a
`say` costs only the synthesis, not torch's import and the model's load.

Only the standard library (urllib, json) is imported here: the point of the server path is that this process never
imports torch. Only loopback addresses are accepted, because the text is sent in the clear and a `say` must never
quietly become a call to another machine.
"""
from __future__ import annotations

import ipaddress
import json
import os
import urllib.error
import urllib.parse
import urllib.request

from tilewave.errors import InputError

SERVER_ENV = "TILEWAVE_SERVER"
API_KEY_ENV = "TILEWAVE_API_KEY"  # the same variable `tilewave serve` reads its key from
# a health check that fails this fast costs a `say` without a server nothing it would notice
HEALTH_TIMEOUT_S = 0.5
# the whole reply: a 4096-character input is minutes of speech, made on a CPU at a few times real time
SPEECH_TIMEOUT_S = 600.0


class ServerError(Exception):
    """The server answered a speech request with an error (its OpenAI-shaped message), or was lost mid-request.
    `status`: the HTTP status (None when the connection failed)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def configured_server(flag: str | None, no_server: bool) -> str | None:
    """The server's base URL from --server, else $TILEWAVE_SERVER (the flag wins); None with --no-server or neither.
    InputError for a URL that is not http(s) or whose host is not loopback."""
    if no_server:
        return None
    url = flag if flag is not None else os.environ.get(SERVER_ENV) or None
    return None if url is None else checked_url(url, "--server" if flag is not None else f"${SERVER_ENV}")


def checked_url(url: str, source: str) -> str:
    parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{source} {url!r} is not a server address; give one like http://127.0.0.1:8000")
    if not _loopback(parts.hostname):
        raise InputError(f"{source} {url!r} is not on this machine; `say` only talks to a server on loopback "
                         "(127.0.0.1, ::1 or localhost): use the server's own machine, or --no-server")
    try:
        parts.port  # noqa: B018 (urlsplit checks the port only when asked)
    except ValueError as exc:
        raise InputError(f"{source} {url!r} has a bad port: {exc}") from None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # any other name: its address is not ours to trust


def healthy(url: str) -> bool:
    """Whether the server answers GET /health with 200 (its model loaded) within HEALTH_TIMEOUT_S."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=HEALTH_TIMEOUT_S) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def speech(url: str, fields: dict) -> bytes:
    """The body of POST /v1/audio/speech with `fields`; ServerError with the server's message on an HTTP error or
    a connection lost mid-request."""
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(API_KEY_ENV)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(f"{url}/v1/audio/speech", data=json.dumps(fields).encode(), headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=SPEECH_TIMEOUT_S) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise ServerError(f"the server at {url} refused the request ({exc.code}): {_message(exc)}",
                          exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        raise ServerError(f"the server at {url} failed mid-request: {getattr(exc, 'reason', exc)}") from None


def _message(exc: urllib.error.HTTPError) -> str:
    body = exc.read()
    try:
        return json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", "replace").strip() or str(exc.reason)
