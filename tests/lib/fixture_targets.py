"""tests/lib/fixture_targets.py -- scrape targets with fixed bodies, for tests.

One threaded HTTP/1.1 server on 127.0.0.1 (port picked by the kernel)
serves any number of named targets: a target `name` answers on the path
`/name` (and `/name/anything`, any query string). Each target owns a list
of bodies; every request gets the next one (mode "cycle": index n mod len;
mode "hold": stays on the last body once it is reached), or the body a test
pinned with Target.pin(i); set_bodies() swaps the list. A body may be a
(status, body) pair. Per target: Content-Type, gzip (only when the
request's Accept-Encoding allows it, or "always"), a delay before answering
(to make a scraper time out) and a status code (e.g. 500). Every request is
logged (time, path, query, headers, body index, gzip'd or not) so a test
can check what a scraper asked for and how often.

Invariants and bounds: at most `max_conns` connections are served at once
(more get 503 and are closed, counted in `rejected`), each target keeps at most `max_log` request
records (the count keeps going), idle keep-alive connections are closed
after `idle_timeout` seconds, a delay ends early when the server stops, and
stop() closes the listener and every open connection, so no thread outlives
the test by more than its current write. Threads are daemons.

Use:
    srv = FixtureServer()
    t = srv.add(Target("esc", ['a{x="1"} 1\\n']))
    srv.start()                   # srv.address == "127.0.0.1:PORT"
    ... t.count, t.requests ...
    srv.reset()                   # counters, logs and pins back to zero
    srv.stop()
Standard library only.
"""
import gzip as _gzip
import http.server
import socket
import ssl
import threading
import time
import urllib.parse

TEXT = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


class Target:
    """A named target. bodies: str or bytes items (str is UTF-8 encoded), or
    (status, body) pairs that override the target's status for that body, or
    a callable taking the request index n and returning any of these."""

    def __init__(self, name, bodies, content_type=TEXT, gzip=False, delay=0.0, status=200,
                 mode="cycle", headers=None, max_log=10000):
        if "/" in name or not name:
            raise ValueError(f"bad target name {name!r}")
        if mode not in ("cycle", "hold"):
            raise ValueError(f"bad mode {mode!r}")
        if gzip not in (False, True, "always"):
            raise ValueError(f"bad gzip {gzip!r}")
        self.name = name
        self.content_type = content_type
        self.gzip = gzip
        self.delay = float(delay)
        self.status = int(status)
        self.mode = mode
        self.headers = dict(headers or {})
        self.max_log = max_log
        self._lock = threading.Lock()
        self.set_bodies(bodies)
        self.reset()

    def set_bodies(self, bodies):
        if callable(bodies):
            self._bodies = bodies
        else:
            items = [_item(b) for b in bodies]
            if not items:
                raise ValueError("a target needs at least one body")
            self._bodies = items

    def reset(self):
        with self._lock:
            self.count = 0
            self.requests = []
            self._pinned = None

    def pin(self, index):
        """Serve bodies[index] from now on; None returns to the sequence."""
        with self._lock:
            self._pinned = index

    def times(self):
        with self._lock:
            return [r["time"] for r in self.requests]

    def _next(self, path, query, headers):
        """Picks the body for one request and logs it. Returns (index, bytes)."""
        with self._lock:
            n = self.count
            self.count += 1
            if callable(self._bodies):
                idx, body = n, _item(self._bodies(n))
            else:
                if self._pinned is not None:
                    idx = self._pinned
                elif self.mode == "cycle":
                    idx = n % len(self._bodies)
                else:
                    idx = min(n, len(self._bodies) - 1)
                body = self._bodies[idx]
            rec = {"time": time.time(), "mono": time.monotonic(), "path": path, "query": query,
                   "headers": headers, "index": idx, "gzip": False}
            if len(self.requests) < self.max_log:
                self.requests.append(rec)
            return rec, body


def _item(b):
    """A body as (status or None, bytes)."""
    if isinstance(b, tuple):
        status, b = b
        return int(status), (b.encode() if isinstance(b, str) else bytes(b))
    return None, (b.encode() if isinstance(b, str) else bytes(b))


def _accepts_gzip(value):
    """True when an Accept-Encoding header allows gzip (q > 0)."""
    for part in (value or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0].lower() not in ("gzip", "*"):
            continue
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if q > 0:
            return True
    return False


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kelvin-fixture/1"

    def setup(self):
        super().setup()
        self.connection.settimeout(self.server.fixture.idle_timeout)

    def log_message(self, *args):  # quiet
        pass

    def handle(self):
        # A scraper that gives up (timeout, shutdown) resets its connection;
        # over TLS, a client that refuses the certificate (or is refused)
        # ends the handshake.
        try:
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.do_handshake()
            super().handle()
        except (ConnectionResetError, BrokenPipeError, socket.timeout, TimeoutError, ssl.SSLError):
            pass

    def _send(self, status, body, ctype="text/plain; charset=utf-8", extra=None, close=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        fx = self.server.fixture
        try:
            url = urllib.parse.urlsplit(self.path)
            name = url.path.lstrip("/").split("/", 1)[0]
            target = fx.get(name)
            if target is None:
                self._send(404, b"no such target\n")
                return
            rec, (status, body) = target._next(url.path, url.query,
                                               {k.lower(): v for k, v in self.headers.items()})
            if target.delay > 0 and fx._stopping.wait(target.delay):
                self.close_connection = True
                return
            extra = dict(target.headers)
            if target.gzip == "always" or (target.gzip and _accepts_gzip(self.headers.get("Accept-Encoding"))):
                body = _gzip.compress(body)
                extra["Content-Encoding"] = "gzip"
                rec["gzip"] = True
            self._send(status or target.status, body, target.content_type, extra)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.close_connection = True

    do_HEAD = do_GET


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def process_request(self, request, client_address):
        fx = self.fixture
        with fx._lock:
            busy = len(fx._conns) >= fx.max_conns or fx._stopping.is_set()
            if not busy:
                fx._conns.add(request)
        if busy:
            fx.rejected += 1
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.fixture._lock:
            self.fixture._conns.discard(request)
        super().shutdown_request(request)


class FixtureServer:
    """tls: None, or an ssl.SSLContext (server side) to serve HTTPS with."""

    def __init__(self, targets=(), max_conns=64, idle_timeout=30.0, tls=None):
        self.tls = tls
        self.max_conns = max_conns
        self.idle_timeout = idle_timeout
        self._targets = {}
        self._lock = threading.Lock()
        self._conns = set()
        self._stopping = threading.Event()
        self.rejected = 0  # connections answered 503 for being over max_conns
        self._httpd = None
        self._thread = None
        for t in targets:
            self.add(t)

    def add(self, target):
        with self._lock:
            if target.name in self._targets:
                raise ValueError(f"duplicate target {target.name!r}")
            self._targets[target.name] = target
        return target

    def remove(self, name):
        with self._lock:
            return self._targets.pop(name, None)

    def get(self, name):
        with self._lock:
            return self._targets.get(name)

    def targets(self):
        with self._lock:
            return list(self._targets.values())

    def __getitem__(self, name):
        t = self.get(name)
        if t is None:
            raise KeyError(name)
        return t

    def start(self):
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        if self.tls is not None:
            # the handshake runs per connection, on its handler thread
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True,
                                                      do_handshake_on_connect=False)
        self._httpd.fixture = self
        self.port = self._httpd.server_address[1]
        self.address = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fixture-targets", daemon=True)
        self._thread.start()
        return self

    def url(self, name):
        return f"{'https' if self.tls is not None else 'http'}://{self.address}/{name}"

    def reset(self):
        for t in self.targets():
            t.reset()

    def stop(self):
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._thread.join(5)
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
