"""GET requests to one or more ``sluice serve`` endpoints: keep-alive connections, the bearer
token, redirects, retries with back-off, fail-over between URLs, and bodies read into one buffer.

The standard library's ``http.client`` does the HTTP: it keeps a connection open between requests
(``urllib`` opens a new one per request) and ``readinto`` reads a body straight into a buffer of
its content length, which the arrays then view. ``requests``/``urllib3`` would add a dependency
and read bodies in chunks that must be joined, a copy of every batch.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import urljoin, urlsplit

from .errors import AuthError, BadRequestError, HTTPError, NotFoundError, ServerError, SluiceError, UnreachableError

#: ``alloc(n)`` returns a writable buffer of at least ``n`` bytes for a response body.
Alloc = Callable[[int], Any]

_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
# Idle keep-alive connections kept per server (one per prefetching thread is the most used at once).
_IDLE_PER_ORIGIN = 8
# Errors that a new connection or a later attempt may not see again.
_TRANSIENT = (OSError, http.client.HTTPException)


@dataclass
class Response:
    """A response: its status, the buffer its body was read into, the body's size, the final URL."""

    status: int
    body: Any
    size: int
    url: str

    def text(self) -> str:
        return bytes(memoryview(self.body)[: self.size]).decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.text())

    def error_message(self) -> str:
        """The server's ``{"error": ...}`` message, else the body's first line."""
        text = self.text()
        try:
            msg = json.loads(text).get("error")
            if isinstance(msg, str):
                return msg
        except (ValueError, AttributeError):
            pass
        return text.strip().splitlines()[0][:200] if text.strip() else "(no message)"


class _Retry(Exception):
    """A transient failure: try again (after a back-off) on a new connection, perhaps another URL."""

    def __init__(self, url: str, why: str, final: Optional[SluiceError] = None) -> None:
        super().__init__(why)
        self.url = url
        self.why = why
        self.final = final


def _origin(url: str) -> Tuple[str, str, int, str]:
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise SluiceError(f"{url!r} is not an http(s) URL of a sluice serve (e.g. http://127.0.0.1:8080)")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise SluiceError(f"{url!r} has a port that is not a number from 0 to 65535") from None
    return u.scheme, u.hostname, port, u.path.rstrip("/")


class Transport:
    """Sends GETs to a list of equivalent base URLs (each serving the same plan).

    Example::

        t = Transport(["http://127.0.0.1:8080"], token="T")
        r = t.get("/v1/info", "application/json")
    """

    def __init__(
        self,
        urls: Union[str, Sequence[str]],
        token: Optional[str] = None,
        retries: int = 5,
        retry_delay: float = 0.1,
        timeout: float = 60.0,
    ) -> None:
        self.urls: List[str] = [urls] if isinstance(urls, str) else list(urls)
        if not self.urls:
            raise SluiceError("no server URL given")
        for u in self.urls:
            _origin(u)
            if urlsplit(u).query or urlsplit(u).fragment:
                raise SluiceError(f"{u!r} has a query or fragment: give the base URL of a sluice serve (e.g. http://127.0.0.1:8080)")
        if token is not None:
            # http.client would raise "Invalid header value b'Bearer ...'", the token in the message.
            bad = next((i for i, ch in enumerate(token) if ch < " " or "\x7f" <= ch < "\xa0" or ch > "\xff"), None)
            if bad is not None:
                ch = token[bad]
                what = (
                    "a line break (read from a file with its newline?)"
                    if ch in "\r\n"
                    else "a character an HTTP header cannot carry"
                    if ch > "\xff"
                    else "a control character"
                )
                raise SluiceError(f"the token holds {what} at position {bad} of {len(token)}")
        if not isinstance(retries, int) or retries < 0:
            raise SluiceError(f"retries must be a non-negative integer, got {retries!r}")
        if not retry_delay >= 0 or not timeout > 0:
            raise SluiceError(f"retry_delay must be >= 0 and timeout > 0, got {retry_delay!r} and {timeout!r}")
        self.token = token
        self.retries = retries
        self.retry_delay = float(retry_delay)
        self.timeout = float(timeout)
        self._lock = threading.Lock()
        self._idle: Dict[Tuple[str, str, int], List[http.client.HTTPConnection]] = {}
        self._pid = os.getpid()

    def __getstate__(self) -> Dict[str, Any]:
        # Open connections stay behind: a spawn-started DataLoader worker (or a pickle) opens its own.
        d = dict(self.__dict__)
        del d["_lock"], d["_idle"]
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._lock = threading.Lock()
        self._idle = {}
        self._pid = os.getpid()

    def _take(self, key: Tuple[str, str, int]) -> Tuple[http.client.HTTPConnection, bool]:
        """An idle keep-alive connection to ``key`` (and True), or a new one (and False)."""
        with self._lock:
            if self._pid != os.getpid():
                # A forked DataLoader worker: the parent's sockets are the parent's. Close this
                # process's copies of them (the parent's stay open) and start afresh.
                for conns in self._idle.values():
                    for c in conns:
                        c.close()
                self._idle, self._pid = {}, os.getpid()
            conns = self._idle.get(key)
            if conns:
                return conns.pop(), True
        scheme, host, port = key
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        return cls(host, port, timeout=self.timeout), False

    def _give(self, key: Tuple[str, str, int], c: http.client.HTTPConnection) -> None:
        with self._lock:
            conns = self._idle.setdefault(key, [])
            if len(conns) < _IDLE_PER_ORIGIN and self._pid == os.getpid():
                conns.append(c)
                return
        c.close()

    def close(self) -> None:
        """Closes the idle connections (a request in flight closes or keeps its own when done).

        Example::

            t.close()
        """
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for c in conns:
                c.close()

    def _once(self, url: str, accept: str, alloc: Optional[Alloc]) -> Response:
        """One request, following redirects; raises _Retry on a transient failure."""
        headers = {"Accept": accept}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for _ in range(_MAX_REDIRECTS + 1):
            scheme, host, port, _prefix = _origin(url)
            key = (scheme, host, port)
            u = urlsplit(url)
            target = (u.path or "/") + (f"?{u.query}" if u.query else "")
            # A reused keep-alive connection the server has since closed fails at once; that is
            # not the server failing, so it gets one immediate retry on a new connection.
            for fresh_try in (0, 1):
                conn, reused = self._take(key)
                try:
                    conn.request("GET", target, headers=headers)
                    resp = conn.getresponse()
                    break
                except _TRANSIENT as e:
                    conn.close()
                    if reused and fresh_try == 0 and isinstance(e, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)):
                        continue
                    raise _Retry(url, _why(e)) from e
            try:
                if resp.status in _REDIRECTS:
                    resp.read()
                    loc = resp.getheader("Location")
                    if not loc:
                        raise SluiceError(f"{url}: HTTP {resp.status} redirect without a Location")
                    nxt = urljoin(url, loc)
                    if self.token and scheme == "https" and urlsplit(nxt).scheme != "https":
                        raise SluiceError(f"{url}: refusing a redirect from https to {nxt}: the bearer token would travel in clear text")
                    url = nxt
                else:
                    size, body = _read_body(resp, alloc if resp.status == 200 else None)
                    r = Response(resp.status, body, size, url)
            except _TRANSIENT as e:
                conn.close()
                raise _Retry(url, _why(e)) from e
            except BaseException:
                conn.close()
                raise
            if resp.will_close:
                conn.close()
            else:
                self._give(key, conn)
            if resp.status in _REDIRECTS:
                continue
            if resp.status >= 500:
                raise _Retry(url, f"HTTP {resp.status}", ServerError(resp.status, url, r.error_message()))
            return r
        raise SluiceError(f"{url}: more than {_MAX_REDIRECTS} redirects")

    def get(self, path: str, accept: str, alloc: Optional[Alloc] = None, primary: int = 0) -> Response:
        """GET ``path`` (e.g. ``/v1/batches/3``) from the first URL that answers.

        Transient failures (connection errors, a body cut off, 5xx) are retried ``retries`` times
        with a doubling back-off, each attempt on the next URL of the list, starting at
        ``urls[primary % len(urls)]``. 4xx answers come back to the caller.

        Example::

            r = t.get("/v1/batches/0", "application/msgpack", alloc=bytearray)
        """
        delay = self.retry_delay
        last: Optional[_Retry] = None
        n = len(self.urls)
        for attempt in range(self.retries + 1):
            base = self.urls[(primary + attempt) % n]
            try:
                return self._once(base.rstrip("/") + path, accept, alloc)
            except _Retry as e:
                last = e
                if attempt < self.retries:
                    time.sleep(delay)
                    delay *= 2
        assert last is not None
        if last.final is not None:
            raise last.final from None
        where = "the server" if n == 1 else f"any of {', '.join(self.urls)}"
        raise UnreachableError(f"{last.url}: cannot reach {where} ({last.why}) after {self.retries + 1} attempts") from None


def _why(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "timed out"
    if isinstance(e, ssl.SSLCertVerificationError):
        return f"its TLS certificate is not trusted: {e.verify_message}"
    if isinstance(e, ssl.SSLError):
        # OpenSSL's words ("[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)") mean a plain-HTTP server, most often.
        return "the TLS handshake failed: is it an http:// server? sluice serve speaks plain HTTP unless a proxy in front adds TLS"
    if isinstance(e, http.client.IncompleteRead):
        return f"body cut off after {len(e.partial)} bytes"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    text = str(e) or type(e).__name__
    return text.splitlines()[0]


def _read_body(resp: http.client.HTTPResponse, alloc: Optional[Alloc]) -> Tuple[int, Any]:
    """The body, read into ``alloc(content-length)`` when both are known, else into a new bytes."""
    length = resp.getheader("Content-Length")
    n = int(length) if length is not None and length.isdigit() else None
    if alloc is None or n is None:
        data = resp.read()
        if n is not None and len(data) != n:
            raise http.client.IncompleteRead(data, n - len(data))
        return len(data), data
    buf = alloc(n)
    view = memoryview(buf).cast("B")
    got = 0
    while got < n:
        k = resp.readinto(view[got:n])
        if not k:
            raise http.client.IncompleteRead(bytes(view[:got]), n - got)
        got += k
    return n, buf


def fail(r: Response, what: str) -> "HTTPError":
    """The exception for a 4xx answer (401, 404 other than the end marker, 400, others).

    Example::

        if r.status != 200: raise fail(r, "/v1/info")
    """
    msg = r.error_message()
    if r.status == 401:
        return AuthError(401, r.url, f"{msg} (give the server's token: token=... or the SLUICE_TOKEN environment variable)")
    if r.status == 404:
        return NotFoundError(404, r.url, f"{msg} (is {what} the base URL of a sluice serve?)")
    if r.status == 400:
        return BadRequestError(400, r.url, msg)
    return HTTPError(r.status, r.url, msg)
