"""A stand-in collector on a loopback port, for the tests that go over HTTP:
its OTLP/HTTP logs route and its run status route (the ``prime_status``
extension's ``GET /prime/v1/runs/status``), each answering as a test sets.

With ``key`` set it is a multi-tenant gateway's receiver: a request without
``Authorization: Bearer <key>`` is answered 401 (``refusal_status``), and the
answer echoes what was sent, as contrib's ``bearertokenauth`` does, so a test
sees that the package never repeats it. With ``tls`` (a certificate and its
key) it serves https."""

import http.server
import json
import ssl
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Optional


class Collector:
    def __init__(self, status_route: bool = True, key: Optional[str] = None, tls: Optional[tuple] = None) -> None:
        self.lock = threading.Lock()
        self.requests: List[Dict[str, Any]] = []  # every request: method, path, headers, body, client port
        self.logs_status = 200
        self.logs_headers: Dict[str, str] = {}
        self.logs_body = b""
        self.logs_delay = 0.0
        self.status_route = status_route
        self.answers: List[Dict[str, Any]] = [{"state": "unknown"}]  # the status route's answers, in turn; the last one repeats
        self.key = key  # the one key let in; None lets everything in
        self.refusal_status = 401
        self.status_route_key: Optional[str] = None  # the status route's own key, when it differs
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = collector._note(self, body)
                if not self._let_in(request, collector.key):
                    return
                if collector.logs_delay:
                    time.sleep(collector.logs_delay)
                if self.path != "/v1/logs":
                    return self._answer(404, {}, b"")
                with collector.lock:
                    request["answered"] = collector.logs_status
                self._answer(collector.logs_status, collector.logs_headers, collector.logs_body)

            def do_GET(self):
                request = collector._note(self, b"")
                if not self._let_in(request, collector.status_route_key or collector.key):
                    return
                url = urllib.parse.urlsplit(self.path)
                if url.path != "/prime/v1/runs/status" or not collector.status_route:
                    return self._answer(404, {}, b"404 page not found")
                with collector.lock:
                    answer = collector.answers.pop(0) if len(collector.answers) > 1 else collector.answers[0]
                self._answer(200, {"Content-Type": "application/json"}, json.dumps(answer).encode())

            def _let_in(self, request, key):
                sent = self.headers.get("Authorization")
                if key is None or sent == f"Bearer {key}":
                    return True
                with collector.lock:
                    request["answered"] = collector.refusal_status
                said = f"authentication didn't succeed: {sent!r} is not a key this gateway lets in" if sent else "no Authorization header"
                self._answer(collector.refusal_status, {"Content-Type": "text/plain"}, said.encode())
                return False

            def _answer(self, status, headers, body):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client that gave up on a stalled answer: the tests see it from the client's side

        self.server = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _note(self, handler, body: bytes) -> Dict[str, Any]:
        """Keeps the request and returns its entry, for its handler to mark
        with the answer: requests on other connections (a forked worker's,
        the parent's) are noted meanwhile, so the last entry may not be it."""
        request = {
            "method": handler.command, "path": handler.path, "headers": dict(handler.headers),
            "body": body, "client_port": handler.client_address[1],
        }
        with self.lock:
            self.requests.append(request)
        return request

    def posts(self) -> List[Dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["method"] == "POST"]

    def gets(self) -> List[Dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["method"] == "GET"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def answer(state: str, **fields: Optional[str]) -> Dict[str, Any]:
    return {"state": state, **{k: v for k, v in fields.items() if v is not None}}
