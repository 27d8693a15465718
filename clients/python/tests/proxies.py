"""Real servers in front of ``sluice serve`` for the failure tests: a redirector (as a cluster's
entry point redirects to its workers) and a TCP proxy that fails its first connections on purpose."""

from __future__ import annotations

import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Optional


class Redirector:
    """Answers every GET with a redirect: to ``target`` + path, through one relative hop on itself first.

    ``loop=True`` redirects to itself for ever.
    """

    def __init__(self, target: str, status: int = 307, loop: bool = False) -> None:
        outer = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                outer.hits += 1
                if loop:
                    loc = self.path
                elif self.path.startswith("/hop"):
                    loc = target + self.path[len("/hop") :]
                else:
                    loc = "/hop" + self.path  # relative: the client must resolve it against this URL
                body = b'{"redirect": true}'
                self.send_response(status)
                self.send_header("Location", loc)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class FlakyProxy:
    """A TCP proxy to ``target`` whose first connections fail, one fault each from ``faults``:

    - ``"reset"``: the connection is reset before any answer;
    - ``"cut"``: the answer is relayed, but the connection closes after its first 1,000 bytes;
    - ``"503"``: an HTTP 503 answer with a JSON error body.

    Later connections are relayed as they are.
    """

    def __init__(self, target: str, faults: List[str]) -> None:
        host, port = target.split("//", 1)[1].rsplit(":", 1)
        self.target = (host, int(port))
        self.faults = list(faults)
        self.connections = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            fault = self.faults.pop(0) if self.faults else None
            threading.Thread(target=self._serve, args=(c, fault), daemon=True).start()

    def _serve(self, c: socket.socket, fault: Optional[str]) -> None:
        try:
            if fault == "reset":
                c.recv(65536)
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
                return
            if fault == "503":
                c.recv(65536)
                body = b'{"error": "overloaded, try again"}'
                c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
                c.close()
                return
            up = socket.create_connection(self.target)
            limit = 1000 if fault == "cut" else None
            threading.Thread(target=self._pipe, args=(c, up, None), daemon=True).start()
            self._pipe(up, c, limit)
        except OSError:
            pass

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, limit: Optional[int]) -> None:
        sent = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if limit is not None and sent + len(data) >= limit:
                    dst.sendall(data[: limit - sent])
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self.closed = True
        self.sock.close()
