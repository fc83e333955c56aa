"""The wire: JSON over HTTP(S) to one bo server, with an API key, a connection per thread, and
retries with backoff on what is worth retrying. It knows nothing of studies or trials; errors
become :class:`ApiError`.

- **First contact fails fast.** Until the server has answered once, a refused connection, an
  unknown host, TLS spoken to a plain port (or plain HTTP to TLS) or no connection within
  ``connect_timeout`` (5 s) raises :class:`ConnectionFailed` at once, naming the URL and the
  cause: nothing will answer, and waiting two minutes in silence helps nobody. (To wait for a
  server that is starting, :meth:`bo_client.Client.wait_ready`.)
- **A server that has answered is waited for**: a restart, a dropped connection, 429 and
  502/503/504 are retried with backoff until the policy's deadline; each retry after the first
  few seconds logs one line (logger ``bo_client``: what failed, the attempt, the time left)."""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

__all__ = ["ApiError", "ConnectionFailed", "RetryPolicy", "Transport", "quote"]

Json = Any

logger = logging.getLogger("bo_client")

#: Retries within this many seconds of a request's first attempt are not logged.
QUIET_SECONDS = 3.0


def quote(segment: str) -> str:
    """One segment of a path, escaped (a display name may hold ``/``)."""
    return urllib.parse.quote(segment, safe="")


class ApiError(Exception):
    """The server refused a request: its HTTP status, Google's status name (``NOT_FOUND``,
    ``INVALID_ARGUMENT``, …) and its message, which names the field and the limit."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ConnectionFailed(Exception):
    """The server could not be reached: at first contact (at once, with the cause), or within the
    retry policy's time after it had answered."""


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
#: The retried statuses a proxy answers when a replica failed with the request in hand.
GATEWAY_STATUSES = frozenset({502, 504})


class Transport:
    """Sends JSON requests to ``base_url``. Thread-safe: each thread keeps its own connection."""

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        *,
        timeout: float = 90.0,
        connect_timeout: float = 5.0,
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
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "bo-client/0.2"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retry = retry
        #: Whether the server has answered a request (until then, connection failures are final).
        self.answered = False
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
            # Connecting waits `connect_timeout`; an answer may take `timeout`.
            conn = cls(self._host, self._port, timeout=self.connect_timeout)
            self._local.conn = conn
            conn.connect()
            if conn.sock is not None:
                conn.sock.settimeout(self.timeout)
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
        lost), or before a proxy answered 502/504 for a replica that failed, is *ambiguous*: when ``on_ambiguous`` is given it is asked first, and if it returns
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
                if not self.answered:
                    raise ConnectionFailed(f"{method} {self.base_url}{url}: {_cause(e, self._scheme)}") from None
                elapsed = time.monotonic() - start
                if elapsed >= self.retry.deadline:
                    raise ConnectionFailed(f"{method} {self.base_url}{url}: {_cause(e, self._scheme)} (gave up after {elapsed:.0f} s)") from e
                if not (reused and attempt == 0):
                    # A kept-alive connection the server has since closed fails at once; the
                    # first retry on a fresh one needs no wait.
                    self._count("connection")
                    wait = self.retry.wait(attempt)
                    self._log_retry(method, url, _cause(e, self._scheme), attempt, start, wait)
                    self._sleep(wait)
                attempt += 1
                if sent and on_ambiguous is not None:
                    done, value = _already_there(on_ambiguous)
                    if done:
                        return value
                continue
            self.answered = True
            if status in RETRY_STATUSES and time.monotonic() - start < self.retry.deadline:
                self._wait_out(status, retry_after, method, url, attempt, start)
                attempt += 1
                if status in GATEWAY_STATUSES and on_ambiguous is not None:
                    # A proxy's 502/504: the replica behind it may have applied the request and
                    # then failed before answering, so it is ambiguous too.
                    done, value = _already_there(on_ambiguous)
                    if done:
                        return value
                continue
            return _decode(status, raw)

    def download(self, path: str, dest: "os.PathLike[str] | str", *, query: Optional[Mapping[str, str]] = None) -> int:
        """Streams ``GET path`` into the file ``dest`` a part at a time (never the whole answer in
        memory) and returns its size in bytes. The file appears only when the answer is whole:
        it is written beside it as ``dest.partial`` and renamed. A failure before or during the
        body (429/503, a dropped connection, a body cut off) starts over within the retry
        policy's deadline; an error status is an :class:`ApiError`."""
        url = self._prefix + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        partial = f"{os.fspath(dest)}.partial"
        headers = dict(self._headers, Accept="*/*")
        start = time.monotonic()
        attempt = 0
        try:
            while True:
                try:
                    conn = self._connection()
                    conn.request("GET", url, headers=headers)
                    response = conn.getresponse()
                    status = response.status
                    if status != 200:
                        raw = response.read()
                        retry_after = response.getheader("Retry-After")
                        self.answered = True
                        if status in RETRY_STATUSES and time.monotonic() - start < self.retry.deadline:
                            self._wait_out(status, retry_after, "GET", url, attempt, start)
                            attempt += 1
                            continue
                        _decode(status, raw)
                        raise ApiError(status, "HTTP_ERROR", f"the server answered {status}")
                    self.answered = True
                    size = 0
                    with open(partial, "wb") as out:
                        while True:
                            part = response.read(1 << 16)
                            if not part:
                                break
                            out.write(part)
                            size += len(part)
                    # A body cut off by the server (a failure part way) raises IncompleteRead above.
                    if response.getheader("Connection", "").lower() == "close":
                        self._drop_connection()
                    os.replace(partial, dest)
                    return size
                except (ConnectionError, http.client.HTTPException, socket.timeout) as e:
                    self._drop_connection()
                    if not self.answered:
                        raise ConnectionFailed(f"GET {self.base_url}{url}: {_cause(e, self._scheme)}") from None
                    elapsed = time.monotonic() - start
                    if elapsed >= self.retry.deadline:
                        raise ConnectionFailed(f"GET {self.base_url}{url}: {_cause(e, self._scheme)} (gave up after {elapsed:.0f} s)") from e
                    self._count("connection")
                    wait = self.retry.wait(attempt)
                    self._log_retry("GET", url, _cause(e, self._scheme), attempt, start, wait)
                    self._sleep(wait)
                    attempt += 1
        finally:
            if os.path.exists(partial):
                os.remove(partial)

    def wait_operation(self, op: Json, *, timeout: float = 3600.0) -> Json:
        """Polls a long-running operation until it is done; raises its error as :class:`ApiError`."""
        deadline = time.monotonic() + timeout
        wait = 0.05
        while not op.get("done"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"operation {op.get('name')} not done after {timeout:.0f} s")
            time.sleep(wait)
            wait = min(wait * 1.5, 2.0)
            op = self.request("GET", "/v1/" + "/".join(quote(s) for s in op["name"].split("/")))
        if op.get("error"):
            err = op["error"]
            raise ApiError(200, str(err.get("status", err.get("code", ""))), str(err.get("message", "")))
        return op

    def _wait_out(self, status: int, retry_after: Optional[str], method: str, url: str, attempt: int, start: float) -> None:
        """Waits before resending after a "not now" status: the backoff, or longer when the
        server's ``Retry-After`` says so (up to the policy's maximum)."""
        self._count(str(status))
        wait = self.retry.wait(attempt)
        if retry_after is not None:
            try:
                wait = max(wait, min(float(retry_after), self.retry.maximum))
            except ValueError:
                pass
        self._log_retry(method, url, f"the server answered {status}", attempt, start, wait)
        self._sleep(wait)

    def _log_retry(self, method: str, url: str, what: str, attempt: int, start: float, wait: float) -> None:
        elapsed = time.monotonic() - start
        if elapsed + wait >= QUIET_SECONDS:
            left = max(0.0, self.retry.deadline - elapsed)
            logger.warning(
                "%s %s%s: %s; retry %d in %.1f s (giving up in %.0f s)", method, self.base_url, url, what, attempt + 1, wait, left
            )


def _cause(e: BaseException, scheme: str) -> str:
    """What a connection failure means, in the words of someone setting up a client."""
    if isinstance(e, ConnectionRefusedError):
        return "connection refused: nothing listens there (is bo-server running, on that port?)"
    if isinstance(e, socket.gaierror):
        return f"unknown host ({e.strerror or e})"
    if isinstance(e, ssl.SSLError):
        return f"TLS failed ({e.reason or e}): is the server speaking plain HTTP? then use http://"
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "no answer in time (a firewall, or the wrong host?)"
    if isinstance(e, (http.client.BadStatusLine, http.client.RemoteDisconnected, ConnectionResetError)) and scheme == "http":
        # What a TLS port does with a plain request: garbage, or the connection closed or reset.
        return "the server closed the connection without an HTTP answer: does it speak TLS? then use https://"
    if isinstance(e, ConnectionResetError):
        return "the connection was reset"
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


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


def _already_there(on_ambiguous: Callable[[], Tuple[bool, Json]]) -> Tuple[bool, Json]:
    """Asks ``on_ambiguous`` whether an ambiguous request's change is already on the server; a
    server it cannot reach either counts as "not there" (the request is resent)."""
    try:
        return on_ambiguous()
    except (ConnectionError, ConnectionFailed, OSError):
        return False, None
