"""tests/lib/remote_write.py -- Prometheus remote write 1.0 for tests: the wire
format, a receiver that answers on purpose, and readers of what a store holds.

Wire format, standard library only:
  - snappy block format (https://github.com/google/snappy format_description):
    decompress() handles every element (literals, 1-, 2- and 4-byte-offset
    copies, overlapping copies); compress() emits literals only, which every
    decoder accepts (valid, just not smaller).
  - protobuf: a varint / fixed64 / length-delimited reader and writer for
    prompb's WriteRequest (1: timeseries, 3: metadata), TimeSeries (1: labels,
    2: samples, 3: exemplars, 4: histograms), Label (1: name, 2: value),
    Sample (1: value double, 2: timestamp int64), MetricMetadata (1: type,
    2: metric_family_name, 4: help, 5: unit). Unknown fields are skipped.
    decode_write_request() returns {"series": [(labels tuple, [(ts, value)])],
    "metadata": [...], "histograms": n}; labels tuples are sorted (name, value)
    pairs exactly as sent, so a test can check order and duplicates separately
    (labels_sorted_unique()).

Receiver(policy) is a threaded HTTP/1.1 server on 127.0.0.1 (port picked by
the kernel, or given to restart on the same one). Every POST is decoded; the
policy callable gets (request number, Request) and returns (status, delay s)
or a status; the answer is sent after the delay (a delay longer than the
client's timeout makes it give up). Requests are recorded (bounded by
max_log; the counters keep going); samples of requests answered 2xx are
"delivered" and counted per (labels, timestamp), so a test sees exactly what
a sender was told succeeded, duplicates included. A body that is not snappy
or not a WriteRequest is answered 400 and recorded with its error. stop()
closes the listener and open connections; start() may be called again (an
outage: connections are refused while it is stopped).

Readers: vm_export() (VictoriaMetrics' raw /api/v1/export), prom_range()
(every sample a Prometheus-API server returns for {__name__=~".+"}[range] at
a time), metrics() (a /metrics body as {(name, labels tuple): value}).

Bounds: request bodies over max_body are answered 413 unread; a delay ends
early when the receiver stops; at most max_conns connections at once.
"""
import http.server
import json
import math
import socket
import struct
import threading
import time
import urllib.parse
import urllib.request

STALE_NAN_BITS = 0x7FF0000000000002  # Prometheus's staleness marker


def stale_nan():
    return struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]


def is_stale(v):
    return isinstance(v, float) and math.isnan(v) and struct.unpack("<Q", struct.pack("<d", v))[0] == STALE_NAN_BITS


# ---- snappy ----------------------------------------------------------------------

class SnappyError(ValueError):
    pass


def _uvarint(b, pos):
    x, shift = 0, 0
    while True:
        if pos >= len(b):
            raise ValueError("truncated varint")
        c = b[pos]
        pos += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            return x, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _put_uvarint(x):
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def snappy_decompress(b, max_len=64 << 20):
    """Snappy block format -> bytes. SnappyError on anything malformed."""
    b = bytes(b)
    try:
        n, pos = _uvarint(b, 0)
    except ValueError as e:
        raise SnappyError(f"bad length preamble: {e}") from None
    if n > max_len:
        raise SnappyError(f"decoded length {n} over the limit {max_len}")
    out = bytearray()
    while pos < len(b):
        tag = b[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal
            ln = tag >> 2
            if ln >= 60:
                nb = ln - 59
                if pos + nb > len(b):
                    raise SnappyError("truncated literal length")
                ln = int.from_bytes(b[pos:pos + nb], "little")
                pos += nb
            ln += 1
            if pos + ln > len(b):
                raise SnappyError("truncated literal")
            out += b[pos:pos + ln]
            pos += ln
        else:
            if kind == 1:
                if pos >= len(b):
                    raise SnappyError("truncated copy-1")
                ln = 4 + ((tag >> 2) & 7)
                off = ((tag >> 5) << 8) | b[pos]
                pos += 1
            elif kind == 2:
                if pos + 2 > len(b):
                    raise SnappyError("truncated copy-2")
                ln = 1 + (tag >> 2)
                off = int.from_bytes(b[pos:pos + 2], "little")
                pos += 2
            else:
                if pos + 4 > len(b):
                    raise SnappyError("truncated copy-4")
                ln = 1 + (tag >> 2)
                off = int.from_bytes(b[pos:pos + 4], "little")
                pos += 4
            if off == 0 or off > len(out):
                raise SnappyError(f"copy offset {off} outside the {len(out)} bytes written")
            start = len(out) - off
            if off >= ln:
                out += out[start:start + ln]
            else:  # overlapping: repeats the last off bytes
                for i in range(ln):
                    out.append(out[start + i])
        if len(out) > n:
            raise SnappyError(f"decoded more than the {n} bytes announced")
    if len(out) != n:
        raise SnappyError(f"decoded {len(out)} bytes, {n} announced")
    return bytes(out)


def snappy_compress(data):
    """Snappy block format made of literals only (64 KiB each)."""
    data = bytes(data)
    out = bytearray(_put_uvarint(len(data)))
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        ln = len(chunk) - 1
        if ln < 60:
            out.append(ln << 2)
        elif ln < 256:
            out += bytes([60 << 2, ln])
        else:
            out += bytes([61 << 2]) + ln.to_bytes(2, "little")
        out += chunk
    return bytes(out)


# ---- protobuf ----------------------------------------------------------------------

class ProtoError(ValueError):
    pass


def _fields(b):
    """Yields (field number, wire type, value) over a message's bytes: value is
    an int (varint), bytes (length-delimited) or raw 8/4 bytes (fixed)."""
    pos = 0
    while pos < len(b):
        try:
            key, pos = _uvarint(b, pos)
        except ValueError as e:
            raise ProtoError(f"bad field key: {e}") from None
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtoError("field number 0")
        if wt == 0:
            try:
                v, pos = _uvarint(b, pos)
            except ValueError as e:
                raise ProtoError(f"field {num}: {e}") from None
        elif wt == 1:
            if pos + 8 > len(b):
                raise ProtoError(f"field {num}: truncated fixed64")
            v = b[pos:pos + 8]
            pos += 8
        elif wt == 2:
            try:
                ln, pos = _uvarint(b, pos)
            except ValueError as e:
                raise ProtoError(f"field {num}: {e}") from None
            if pos + ln > len(b):
                raise ProtoError(f"field {num}: length {ln} past the end")
            v = b[pos:pos + ln]
            pos += ln
        elif wt == 5:
            if pos + 4 > len(b):
                raise ProtoError(f"field {num}: truncated fixed32")
            v = b[pos:pos + 4]
            pos += 4
        else:
            raise ProtoError(f"field {num}: wire type {wt} not supported")
        yield num, wt, v


def _int64(u):
    return u - (1 << 64) if u >= (1 << 63) else u


def _want(num, wt, want, what):
    if wt != want:
        raise ProtoError(f"{what} field {num}: wire type {wt}, expected {want}")


def decode_write_request(b):
    """prompb.WriteRequest bytes -> {"series": [(labels, samples)], "metadata":
    [(type, family, help, unit)], "histograms": count, "exemplars": count}."""
    series, metadata, nhist, nex = [], [], 0, 0
    for num, wt, v in _fields(b):
        if num == 1:
            _want(num, wt, 2, "WriteRequest")
            labels, samples = [], []
            for n2, w2, v2 in _fields(v):
                if n2 == 1:
                    _want(n2, w2, 2, "TimeSeries")
                    name = value = b""
                    for n3, w3, v3 in _fields(v2):
                        if n3 in (1, 2):
                            _want(n3, w3, 2, "Label")
                            if n3 == 1:
                                name = v3
                            else:
                                value = v3
                    try:
                        labels.append((name.decode(), value.decode()))
                    except UnicodeDecodeError:
                        raise ProtoError(f"label {name!r}={value!r} is not UTF-8") from None
                elif n2 == 2:
                    _want(n2, w2, 2, "TimeSeries")
                    val, ts = 0.0, 0
                    for n3, w3, v3 in _fields(v2):
                        if n3 == 1:
                            _want(n3, w3, 1, "Sample")
                            val = struct.unpack("<d", v3)[0]
                        elif n3 == 2:
                            _want(n3, w3, 0, "Sample")
                            ts = _int64(v3)
                    samples.append((ts, val))
                elif n2 == 3:
                    nex += 1
                elif n2 == 4:
                    nhist += 1
            series.append((tuple(labels), samples))
        elif num == 3:
            _want(num, wt, 2, "WriteRequest")
            typ, fam, hlp, unit = 0, b"", b"", b""
            for n2, w2, v2 in _fields(v):
                if n2 == 1:
                    typ = v2
                elif n2 == 2:
                    fam = v2
                elif n2 == 4:
                    hlp = v2
                elif n2 == 5:
                    unit = v2
            metadata.append((typ, fam.decode(errors="replace"), hlp.decode(errors="replace"),
                             unit.decode(errors="replace")))
    return {"series": series, "metadata": metadata, "histograms": nhist, "exemplars": nex}


def uvarint(x):
    """An unsigned LEB128 varint (negative numbers as their 64-bit two's complement)."""
    return _put_uvarint(x & ((1 << 64) - 1))


def pb_field(num, wire, payload):
    """One protobuf field: wire 0 (varint: payload an int), 1 (fixed64: payload
    8 bytes) or 2 (length-delimited: payload bytes)."""
    if wire == 2:
        return uvarint(num << 3 | 2) + uvarint(len(payload)) + payload
    if wire == 0:
        return uvarint(num << 3) + uvarint(payload)
    return uvarint(num << 3 | 1) + payload


def _b(s):
    return s.encode() if isinstance(s, str) else s


def pb_series(labels, samples, extra=b""):
    """A TimeSeries message's bytes: labels (name, value) as str or bytes, in
    the order given; samples (ts ms, value); extra appended as is (exemplars,
    histograms)."""
    b = b"".join(pb_field(1, 2, pb_field(1, 2, _b(n)) + pb_field(2, 2, _b(v))) for n, v in labels)
    b += b"".join(pb_field(2, 2, pb_field(1, 1, struct.pack("<d", v)) + pb_field(2, 0, t)) for t, v in samples)
    return b + extra


def encode_write_request(series):
    """[(labels: iterable of (name, value), [(ts ms, value)])] -> WriteRequest bytes."""
    return b"".join(pb_field(1, 2, pb_series(labels, samples)) for labels, samples in series)


def labels_sorted_unique(labels):
    """Whether a labels tuple is sorted by name with no name twice (what a
    well-behaved sender sends)."""
    names = [n for n, _ in labels]
    return names == sorted(names) and len(set(names)) == len(names)


def push(url, series, headers=None, timeout=10):
    """Sends one remote-write request; returns (status, body bytes)."""
    body = snappy_compress(encode_write_request(series))
    h = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
         "X-Prometheus-Remote-Write-Version": "0.1.0"}
    h.update(headers or {})
    req = urllib.request.Request(url, data=body, method="POST", headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


# ---- the receiver --------------------------------------------------------------------

class Request:
    """One POST as received: time, path, headers (a dict, names lower-cased),
    body size, decoded WriteRequest (or None) and the decode error."""

    def __init__(self, n, path, headers, size, wr, error):
        self.n, self.time, self.path, self.headers = n, time.time(), path, headers
        self.size, self.wr, self.error = size, wr, error
        self.status = None  # filled once answered
        self.answered_at = None

    @property
    def nsamples(self):
        return sum(len(s) for _, s in self.wr["series"]) if self.wr else 0


class Receiver:
    def __init__(self, policy=None, port=0, max_body=32 << 20, max_log=100000, max_conns=64):
        self.policy = policy or (lambda n, req: 204)
        self.port = port
        self.max_body = max_body
        self.max_log = max_log
        self.max_conns = max_conns
        self.lock = threading.Lock()
        self.requests = []       # bounded by max_log
        self.count = 0           # every POST, also past max_log
        self.delivered = {}      # labels tuple -> {ts: [values...]} (2xx answers only)
        self.delivered_samples = 0
        self.answered = {}       # status -> number of requests
        self.errors = []         # decode errors (bounded)
        self._stopping = threading.Event()
        self._srv = None
        self._thread = None
        self._conns = set()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                with recv.lock:
                    recv._conns.add(self.connection)

            def finish(self):
                try:
                    super().finish()
                finally:
                    with recv.lock:
                        recv._conns.discard(self.connection)

            def do_POST(self):
                recv._handle(self)

            def do_GET(self):
                self._send(404, b"POST remote write requests here\n")

            def _send(self, status, body=b"", extra=None):
                self.send_response(status)
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                if body:
                    self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.end_headers()
                if body:
                    self.wfile.write(body)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._stopping.clear()
        self._srv = Server(("127.0.0.1", self.port), Handler)
        self.port = self._srv.server_address[1]
        self._thread = threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Closes the listener and every open connection (an outage starts)."""
        if self._srv is None:
            return
        self._stopping.set()
        self._srv.shutdown()
        self._srv.server_close()
        with self.lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._srv = None

    def _handle(self, h):
        ln = h.headers.get("Content-Length")
        headers = {k.lower(): v for k, v in h.headers.items()}
        try:
            size = int(ln)
        except (TypeError, ValueError):
            h._send(411, b"length required\n")
            return
        if size > self.max_body:
            with self.lock:
                self.count += 1
                self.answered[413] = self.answered.get(413, 0) + 1
            h.close_connection = True
            h._send(413, b"too big\n")
            return
        raw = h.rfile.read(size)
        wr, err = None, None
        try:
            wr = decode_write_request(snappy_decompress(raw))
        except (SnappyError, ProtoError) as e:
            err = str(e)
        with self.lock:
            n = self.count
            self.count += 1
            req = Request(n, h.path, headers, size, wr, err)
            if len(self.requests) < self.max_log:
                self.requests.append(req)
            if err and len(self.errors) < 100:
                self.errors.append(err)
        extra = {}
        if err:
            status, delay = 400, 0.0
        else:
            r = self.policy(n, req)
            if not isinstance(r, tuple):
                r = (r, 0.0)
            status, delay = r[0], r[1]
            if len(r) > 2:
                extra = r[2]
        if delay > 0:
            self._stopping.wait(delay)
        if 200 <= status < 300 and wr:
            with self.lock:
                for labels, samples in wr["series"]:
                    d = self.delivered.setdefault(labels, {})
                    for t, v in samples:
                        d.setdefault(t, []).append(v)
                        self.delivered_samples += 1
        with self.lock:
            self.answered[status] = self.answered.get(status, 0) + 1
            req.status, req.answered_at = status, time.time()
        try:
            h._send(status, b"" if status == 204 else (f"status {status} on purpose\n".encode()), extra)
        except OSError:
            pass

    def snapshot(self):
        with self.lock:
            return {k: {t: list(vs) for t, vs in d.items()} for k, d in self.delivered.items()}

    def total_delivered(self):
        with self.lock:
            return self.delivered_samples


# ---- readers -------------------------------------------------------------------------

def _get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def vm_export(base, start_s, end_s, match='{__name__=~".+"}'):
    """Every raw sample VictoriaMetrics holds in [start_s, end_s] (seconds):
    {labels tuple (sorted, __name__ included): [(ts ms, value)...] in its order}.
    Stale markers come back as NaN from its JSON: they are returned as
    float('nan') (VM's JSON has no way to tell a stale marker from another NaN)."""
    q = urllib.parse.urlencode({"match[]": match, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}"})
    body = _get(f"{base}/api/v1/export?{q}", timeout=120).decode()
    out = {}
    for line in body.splitlines():
        if not line.strip():
            continue
        # its values are bare JSON-ish numbers: +Inf, -Inf and null (stale)
        # appear unquoted; labels (quoted) may hold "+Inf" too, so only the
        # part from the values array on is rewritten.
        i = line.rindex('"values":[')
        j = json.loads(line[:i] + line[i:].replace("+Inf", "Infinity").replace("-Inf", "-Infinity"))
        key = tuple(sorted(j["metric"].items()))
        vals = [float("nan") if v is None else float(v) for v in j["values"]]
        out.setdefault(key, []).extend(zip(j["timestamps"], vals))
    return out


def prom_range(base, at_s, range_s, match='{__name__=~".+"}'):
    """Every sample a Prometheus-API server returns for MATCH[range_s] at
    at_s: {labels tuple: [(ts ms, value)]} (stale markers are never returned
    by a range selector)."""
    q = urllib.parse.urlencode({"query": f"{match}[{int(range_s * 1000)}ms]", "time": f"{at_s:.3f}"})
    j = json.loads(_get(f"{base}/api/v1/query?{q}", timeout=120))
    if j.get("status") != "success":
        raise AssertionError(f"{base}: query failed: {j}")
    out = {}
    for s in j["data"]["result"]:
        key = tuple(sorted(s["metric"].items()))
        out[key] = [(int(round(float(t) * 1000)), float(v)) for t, v in s["values"]]
    return out


def metrics(base, prefix=""):
    """A /metrics body as {(name, labels tuple): value}, names starting with prefix."""
    import re
    body = _get(base + "/metrics", timeout=10).decode(errors="replace")
    out = {}
    for line in body.splitlines():
        if not line or line.startswith("#") or not line.startswith(prefix):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \S+)?$', line)
        if not m:
            continue
        labels = tuple(sorted(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            pass
    return out


def metric_sum(ms, name, **match):
    """Sum of every sample of name whose labels include match (None if none)."""
    vals = [v for (n, labels), v in ms.items()
            if n == name and all((k, str(x)) in labels for k, x in match.items())]
    return sum(vals) if vals else None


def same_float(a, b):
    """Bit-exact equality of two floats, NaN payloads included."""
    return struct.pack("<d", a) == struct.pack("<d", b)
