#!/usr/bin/python3
"""`kelvin agent --web.config.file`: Prometheus's web config (TLS, client
certificates, basic auth, response headers) and its reload while running.

Certificates are made with the openssl command in a temp directory: a CA, a
server certificate for 127.0.0.1, a client certificate from the CA, and a
client certificate from another CA. bcrypt hashes (cost 4) are made with
Python's crypt (libcrypt). One agent (simulated GPUs) serves HTTPS; its web
config is rewritten (atomically, by rename) between the cases, which must
apply to the next connection or request without a restart:
  tls            GET /metrics over HTTPS -> 200 with GPU metrics; plain HTTP
                 and a client trusting another CA fail
  versions       min_version TLS13: a TLS 1.2-only client fails, 1.3 works
  client auth    RequireAndVerifyClientCert: no cert / other CA fail, good cert
                 200; RequireAnyClientCert: other CA 200, none fails;
                 VerifyClientCertIfGiven: none 200, other CA fails;
                 RequestClientCert: none and other CA 200
  basic auth     no credentials / wrong password / unknown user -> 401 with
                 WWW-Authenticate: Basic and "Unauthorized"; right -> 200
  headers        the configured headers on 200 and 401 answers
  rotation       a new server certificate is served to new connections
  broken file    the last good config keeps serving; the error is logged once
  TLS off        refused while running (needs a restart), logged
A second agent is started with a bad web config: it must exit with a clear
message. Every wait is bounded; every process is stopped.
"""
import base64
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402

KELVIN = os.environ.get("KELVIN_BIN", "build/kelvin")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".crt",
            "-days", "2", "-subj", "/CN=" + name, cwd=d)


def make_leaf(d, name, ca, ext, cn):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj",
            "/CN=" + cn, cwd=d)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
            "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext", cwd=d)


def make_certs(d):
    make_ca(d, "ca")
    make_ca(d, "otherca")
    srv_ext = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    make_leaf(d, "srv", "ca", srv_ext, "kelvin-server-1")
    make_leaf(d, "srv2", "ca", srv_ext, "kelvin-server-2")
    make_leaf(d, "cli", "ca", "extendedKeyUsage=clientAuth\n", "kelvin-client")
    make_leaf(d, "othercli", "otherca", "extendedKeyUsage=clientAuth\n", "other-client")


def bcrypt(password):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import crypt
    h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    if not h or not h.startswith("$2"):
        raise AssertionError("libcrypt made no bcrypt hash")
    return h


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Client:
    """HTTPS (or HTTP) requests to the agent with a chosen TLS client setup."""

    def __init__(self, port, d):
        self.port = port
        self.d = d

    def ctx(self, cert=None, trust="ca", max_version=None):
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.load_verify_locations(os.path.join(self.d, trust + ".crt"))
        if cert:
            c.load_cert_chain(os.path.join(self.d, cert + ".crt"), os.path.join(self.d, cert + ".key"))
        if max_version:
            c.maximum_version = max_version
        return c

    def get(self, path="/-/healthy", tls=True, cert=None, trust="ca", auth=None, max_version=None):
        """(status, headers dict (lower-case names), body, peer cert DER) or raises on a failed handshake."""
        if tls:
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10,
                                               context=self.ctx(cert, trust, max_version))
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            body = r.read()
            der = conn.sock.getpeercert(binary_form=True) if tls and conn.sock else None
            return r.status, {k.lower(): v for k, v in r.getheaders()}, body, der
        finally:
            conn.close()

    def fails(self, **kw):
        """True when the request cannot complete (handshake refused, connection dropped)."""
        try:
            st, _, _, _ = self.get(**kw)
            return False, st
        except (ssl.SSLError, ConnectionError, http.client.HTTPException, socket.timeout, OSError) as e:
            return True, type(e).__name__


def wait_until(fn, deadline=10):
    end = time.time() + deadline
    last = None
    while time.time() < end:
        try:
            last = fn()
            if last is True or (isinstance(last, tuple) and last[0] is True):
                return True, last
        except Exception as e:  # noqa: BLE001 - not yet
            last = e
        time.sleep(0.1)
    return False, last


def main():
    if not shutil.which("openssl"):
        print("FAIL: the openssl command is needed to make the test certificates")
        return 1
    f = kt.Failures()
    tmp = tempfile.mkdtemp(prefix="kelvin-webcfg-")
    try:
        make_certs(tmp)
        alice, bob = bcrypt("s3cret"), bcrypt("hunter2")
        web = os.path.join(tmp, "web.yml")
        tls_only = "tls_server_config:\n  cert_file: srv.crt\n  key_file: srv.key\n"
        write_atomic(web, tls_only)
        port = kt.free_port()
        log = os.path.join(tmp, "agent.log")
        p = kt.start([KELVIN, "agent", f"--web.listen-address=127.0.0.1:{port}", "--statsd.listen-udp=",
                      "--collector.xid.kmsg-path=", "--gpu.simulate=healthy", "--gpu.simulate.count=1",
                      f"--web.config.file={web}"], log=log)
        c = Client(port, tmp)
        ok, last = wait_until(lambda: c.get()[0] == 200, deadline=30)
        if not ok:
            raise AssertionError(f"agent did not come up over HTTPS: {last}; log:\n{open(log).read()[-2000:]}")

        # --- TLS only
        st, hdr, body, der = c.get("/metrics")
        f.check(st == 200, f"tls: /metrics status {st}")
        f.check(b"DCGM_FI_DEV_GPU_TEMP" in body, "tls: /metrics has no GPU metrics")
        srv_der = ssl.PEM_cert_to_DER_cert(open(os.path.join(tmp, "srv.crt")).read())
        f.check(der == srv_der, "tls: the server did not present srv.crt")
        failed, why = c.fails(tls=False)
        f.check(failed or why != 200, f"tls: plain HTTP on the TLS port answered {why}")
        failed, why = c.fails(trust="otherca")
        f.check(failed, f"tls: a client trusting another CA connected ({why})")
        failed, why = c.fails(cert="othercli")
        f.check(not failed, f"tls: NoClientCert refused a client that sent a certificate ({why})")

        # --- TLS versions, live
        write_atomic(web, tls_only + "  min_version: TLS13\n")
        ok, last = wait_until(lambda: c.fails(max_version=ssl.TLSVersion.TLSv1_2))
        f.check(ok, f"versions: a TLS 1.2 client still connects with min_version TLS13 ({last})")
        st, _, _, _ = c.get()
        f.check(st == 200, f"versions: TLS 1.3 client got {st}")
        write_atomic(web, tls_only + "  max_version: TLS12\n")
        ok, last = wait_until(lambda: (c.get(max_version=ssl.TLSVersion.TLSv1_2)[0] == 200, None))
        f.check(ok, f"versions: a TLS 1.2 client cannot connect with max_version TLS12 ({last})")

        # --- client certificates, every client_auth_type
        def mode(auth, ca=True):
            return tls_only + f"  client_auth_type: {auth}\n" + ("  client_ca_file: ca.crt\n" if ca else "")

        cases = [
            ("RequireAndVerifyClientCert", True, {None: False, "cli": True, "othercli": False}),
            ("RequireAnyClientCert", True, {None: False, "cli": True, "othercli": True}),
            ("VerifyClientCertIfGiven", True, {None: True, "cli": True, "othercli": False}),
            ("RequestClientCert", False, {None: True, "cli": True, "othercli": True}),
        ]
        for auth, ca, want in cases:
            write_atomic(web, mode(auth, ca))
            got = {}
            end = time.time() + 10
            while time.time() < end:  # the first connection already reloads; bounded anyway
                got = {cert: c.fails(cert=cert) for cert in want}
                if all(got[k][0] != want[k] for k in want):
                    break
                time.sleep(0.1)
            for cert, good in want.items():
                failed, why = got[cert]
                f.check(failed != good, f"{auth}: client cert {cert}: {'refused' if failed else 'accepted'} "
                                        f"({why}), want {'accepted' if good else 'refused'}")

        # --- basic auth and headers (TLS and the client CA kept)
        auth_cfg = (mode("RequireAndVerifyClientCert") +
                    f"basic_auth_users:\n  alice: {alice}\n"
                    "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
                    "    Content-Security-Policy: \"default-src 'self'\"\n"
                    "    Strict-Transport-Security: max-age=31536000\n")
        write_atomic(web, auth_cfg)
        ok, last = wait_until(lambda: c.get(cert="cli")[0] == 401)
        f.check(ok, f"basic auth: no 401 without credentials ({last})")
        for who, creds in (("no credentials", None), ("wrong password", "alice:nope"), ("unknown user", "bob:s3cret"),
                           ("empty password", "alice:")):
            st, hdr, body, _ = c.get("/metrics", cert="cli", auth=creds)
            f.check(st == 401, f"basic auth, {who}: status {st}, want 401")
            f.check(hdr.get("www-authenticate") == "Basic",
                    f"basic auth, {who}: WWW-Authenticate {hdr.get('www-authenticate')!r}")
            f.check(body == b"Unauthorized\n", f"basic auth, {who}: body {body[:80]!r}")
            f.check(hdr.get("x-frame-options") == "deny", f"basic auth, {who}: configured headers missing on 401")
        for i in range(2):
            st, hdr, body, _ = c.get("/metrics", cert="cli", auth="alice:s3cret")
            f.check(st == 200 and b"DCGM_FI_DEV_GPU_TEMP" in body, f"basic auth, right password: status {st}")
            f.check(hdr.get("x-frame-options") == "deny", f"headers: X-Frame-Options {hdr.get('x-frame-options')}")
            f.check(hdr.get("content-security-policy") == "default-src 'self'", f"headers: CSP {hdr}")
            f.check(hdr.get("strict-transport-security") == "max-age=31536000", f"headers: HSTS {hdr}")
        failed, _ = c.fails(path="/metrics", auth="alice:s3cret")
        f.check(failed, "basic auth does not replace the client certificate")

        # --- users and headers reloaded
        write_atomic(web, mode("RequireAndVerifyClientCert") + f"basic_auth_users:\n  bob: {bob}\n"
                     "http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n")
        ok, last = wait_until(lambda: c.get(cert="cli", auth="bob:hunter2")[0] == 200)
        f.check(ok, f"reload: the new user is not accepted ({last})")
        st, hdr, _, _ = c.get(cert="cli", auth="alice:s3cret")
        f.check(st == 401, f"reload: the removed user still gets {st}")
        f.check(hdr.get("x-frame-options") == "sameorigin" and "content-security-policy" not in hdr,
                f"reload: headers not replaced: {hdr}")

        # --- certificate rotation: new connections get the new certificate
        good_cfg = open(web).read()
        write_atomic(web, good_cfg.replace("srv.crt", "srv2.crt").replace("srv.key", "srv2.key"))
        srv2_der = ssl.PEM_cert_to_DER_cert(open(os.path.join(tmp, "srv2.crt")).read())
        ok, last = wait_until(lambda: c.get(cert="cli", auth="bob:hunter2")[3] == srv2_der)
        f.check(ok, "rotation: the new server certificate is not served")

        # --- a broken file: the last good config keeps serving, one log line
        write_atomic(web, "basic_auth_users: [\n")
        for _ in range(3):
            st, _, _, der = c.get(cert="cli", auth="bob:hunter2")
            f.check(st == 200 and der == srv2_der, f"broken file: the last good config stopped serving ({st})")
        st, _, _, _ = c.get(cert="cli")
        f.check(st == 401, f"broken file: auth dropped ({st})")
        time.sleep(0.3)
        lines = [ln for ln in open(log).read().splitlines() if "Unable to reload the web configuration" in ln]
        f.check(len(lines) == 1, f"broken file: logged {len(lines)} times, want once: {lines}")
        f.check(any("did not find expected node content" in ln for ln in lines), f"broken file: reason {lines}")

        # --- turning TLS off needs a restart
        write_atomic(web, f"basic_auth_users:\n  bob: {bob}\n")
        st, _, _, _ = c.get(cert="cli", auth="bob:hunter2")
        f.check(st == 200, f"TLS off: HTTPS stopped ({st})")
        failed, why = c.fails(tls=False, auth="bob:hunter2")
        f.check(failed or why != 200, "TLS off: plain HTTP served without a restart")
        time.sleep(0.3)
        f.check("TLS cannot be turned off while running" in open(log).read(), "TLS off: not logged")

        # --- the good file again: served at once
        write_atomic(web, tls_only)
        ok, last = wait_until(lambda: c.get()[0] == 200)
        f.check(ok, f"fixed file: not applied ({last})")
        kt.stop(p)

        # --- a bad web config at start: the agent refuses to start
        bad = os.path.join(tmp, "bad.yml")
        write_atomic(bad, "tls_server_config:\n  cert_file: srv.crt\n")
        port2 = kt.free_port()
        r = subprocess.run([KELVIN, "agent", f"--web.listen-address=127.0.0.1:{port2}", "--statsd.listen-udp=",
                            "--collector.xid.kmsg-path=", "--gpu.simulate=healthy", "--gpu.simulate.count=1",
                            f"--web.config.file={bad}"], capture_output=True, text=True, timeout=60)
        f.check(r.returncode != 0, "bad web config: the agent started")
        f.check("missing key_file" in r.stderr and bad in r.stderr,
                f"bad web config: unclear message: {r.stderr[-500:]!r}")
    finally:
        if f.items:
            print("temp dir kept:", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        f.finish("web_config")


if __name__ == "__main__":
    sys.exit(main())
