"""The wire: JSON over HTTP(S) to one bo server, with an API key, a connection per thread, and
retries with backoff on what is worth retrying (429, 502/503/504, a refused or dropped
connection). It knows nothing of studies or trials; errors become :class:`ApiError`."""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

__all__ = ["ApiError", "ConnectionFailed", "RetryPolicy", "Transport"]

Json = Any


class ApiError(Exception):
    """The server refused a request: its HTTP status, Google's status name (``NOT_FOUND``,
    ``INVALID_ARGUMENT``, …) and its message, which names the field and the limit."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ConnectionFailed(Exception):
    """The server could not be reached within the retry policy's time."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying. Waits grow from ``initial`` by ``multiplier`` up to ``maximum``
    seconds, each with up to 50 % random jitter, or as the server's ``Retry-After`` says; the
    request gives up once ``deadline`` seconds have passed since its first attempt."""

    initial: float = 0.2
    maximum: float = 10.0
    multiplier: float = 2.0
    deadline: float = 120.0

    def wait(self, attempt: int) -> float:
        base = min(self.maximum, self.initial * self.multiplier**attempt)
        return base * (0.5 + random.random() / 2)


#: Statuses that mean "not now" rather than "no": the request changed nothing and may be resent.
RETRY_STATUSES = frozenset({429, 502, 503, 504})


class Transport:
    """Sends JSON requests to ``base_url``. Thread-safe: each thread keeps its own connection."""

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        *,
        timeout: float = 90.0,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"url must be http://HOST[:PORT] or https://…, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port
        self._prefix = parsed.path.rstrip("/")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "bo-client/0.1"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.timeout = timeout
        self.retry = retry
        self._sleep = sleep
        self._local = threading.local()
        #: Retries made so far, by reason (``"429"``, ``"503"``, ``"connection"``): for tests and logs.
        self.retries: Dict[str, int] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> Dict[str, Any]:
        # Picklable (Ray ships a searcher to its workers): connections and locks stay behind.
        state = dict(self.__dict__)
        del state["_local"], state["_lock"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def close(self) -> None:
        """Closes this thread's connection (others close when their threads end)."""
        self._drop_connection()

    def _count(self, reason: str) -> None:
        with self._lock:
            self.retries[reason] = self.retries.get(reason, 0) + 1

    def request(
        self,
        method: str,
        path: str,
        body: Optional[Json] = None,
        *,
        query: Optional[Mapping[str, str]] = None,
        on_ambiguous: Optional[Callable[[], Tuple[bool, Json]]] = None,
    ) -> Json:
        """Sends one request and returns the decoded JSON answer.

        Retries on 429/502/503/504 and on connection errors until the policy's deadline. A
        request that may have reached the server before its connection broke (the answer was
        lost) is *ambiguous*: when ``on_ambiguous`` is given it is asked first, and if it returns
        ``(True, value)`` — the change is already there — ``value`` is the answer instead of a
        resend. Requests without it are resent as they are (bo's create-study, suggest with its
        ``clientId`` and the reads are idempotent)."""
        url = self._prefix + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        start = time.monotonic()
        attempt = 0
        while True:
            sent = False
            reused = getattr(self._local, "conn", None) is not None
            try:
                conn = self._connection()
                conn.request(method, url, body=data, headers=self._headers)
                sent = True
                response = conn.getresponse()
                raw = response.read()
                status = response.status
                retry_after = response.getheader("Retry-After")
                if response.getheader("Connection", "").lower() == "close":
                    self._drop_connection()
            except (ConnectionError, http.client.HTTPException, socket.timeout, OSError) as e:
                self._drop_connection()
                elapsed = time.monotonic() - start
                if elapsed >= self.retry.deadline:
                    raise ConnectionFailed(f"{method} {self.base_url}{url}: {e} (gave up after {elapsed:.0f} s)") from e
                if not (reused and attempt == 0):
                    # A kept-alive connection the server has since closed fails at once; the
                    # first retry on a fresh one needs no wait.
                    self._count("connection")
                    self._sleep(self.retry.wait(attempt))
                attempt += 1
                if sent and on_ambiguous is not None:
                    try:
                        done, value = on_ambiguous()
                    except (ConnectionError, ConnectionFailed, OSError):
                        done, value = False, None
                    if done:
                        return value
                continue
            if status in RETRY_STATUSES and time.monotonic() - start < self.retry.deadline:
                self._count(str(status))
                wait = self.retry.wait(attempt)
                if retry_after is not None:
                    try:
                        wait = max(wait, min(float(retry_after), self.retry.maximum))
                    except ValueError:
                        pass
                self._sleep(wait)
                attempt += 1
                continue
            return _decode(status, raw)


def _decode(status: int, raw: bytes) -> Json:
    try:
        payload = json.loads(raw) if raw else {}
    except ValueError:
        payload = None
    if 200 <= status < 300:
        if payload is None:
            raise ApiError(status, "INVALID_RESPONSE", f"the server answered {raw[:200]!r}, not JSON")
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        err = payload["error"]
        raise ApiError(status, str(err.get("status", "")), str(err.get("message", "")))
    raise ApiError(status, "HTTP_ERROR", raw[:500].decode("utf-8", "replace"))
