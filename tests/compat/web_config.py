#!/usr/bin/python3
"""The web config (--web.config.file) next to Prometheus 2.42's own.

1. `kelvin check web-config` and `promtool check web-config` (2.42) on the
   same files, made here: valid ones, YAML syntax errors, unknown and
   repeated fields, type errors, aliases and merges, bad headers, bad bcrypt
   hashes, every TLS check (missing files, mismatched key pairs, PEM
   mix-ups, client CA without a client auth type, unknown client auth
   type). Output (stderr) and exit status must be the same, byte for byte.
2. The real Prometheus (KELVIN_PEERS/bin/prometheus) and `kelvin agent`
   (simulated GPUs) serve the same web config files; the same requests get
   the same answers: status, the auth and security headers, the 401 body;
   for TLS, the same handshakes succeed or fail under every
   client_auth_type and TLS version setting, switched by rewriting the
   file while both run (both read it again without a restart).
Certificates come from the openssl command, hashes from libcrypt (Python's
crypt). Loopback only; every process is stopped.
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
PEERS = os.environ.get("KELVIN_PEERS", "build/peers")
PROMTOOL = os.path.join(PEERS, "bin", "promtool")
PROMETHEUS = os.path.join(PEERS, "bin", "prometheus")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60)


def make_certs(d):
    for ca in ("ca", "otherca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca + ".key", "-out", ca + ".crt",
                "-days", "2", "-subj", "/CN=" + ca, cwd=d)
    leaves = (("srv", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
              ("cli", "ca", "extendedKeyUsage=clientAuth\n"),
              ("srvonly", "ca", "extendedKeyUsage=serverAuth\n"),
              ("othercli", "otherca", "extendedKeyUsage=clientAuth\n"))
    for name, ca, ext in leaves:
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj",
                "/CN=" + name, cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
                "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext", cwd=d)
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec.key", cwd=d)
    openssl("req", "-x509", "-key", "ec.key", "-out", "ec.crt", "-days", "2", "-subj", "/CN=ec", cwd=d)
    with open(os.path.join(d, "junk.pem"), "w") as f:
        f.write("-----BEGIN FOO-----\naGVsbG8=\n-----END FOO-----\n")
    with open(os.path.join(d, "badcert.pem"), "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n")
    open(os.path.join(d, "empty.pem"), "w").close()


def bcrypt(password):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import crypt
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))


DUMMY = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
TLS = "tls_server_config:\n  cert_file: srv.crt\n  key_file: srv.key\n"

CHECK_FILES = {
    "empty": "",
    "comment": "# nothing\n",
    "null_doc": "---\n",
    "full": TLS + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
            "  min_version: TLS12\n  max_version: TLS13\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"
            "  curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: true\n"
            "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n"
            "    Strict-Transport-Security: max-age=1\n"
            f"basic_auth_users:\n  alice: {DUMMY}\n",
    "ec_pair": "tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n",
    "syntax_flow": "a: [\n",
    "syntax_map": "a: b: c\n",
    "syntax_tab": "basic_auth_users:\n  a: x\n\tb: y\n",
    "syntax_token": "\tfoo: 1\n",
    "syntax_indent": "tls_server_config:\n  cert_file: a\n   key_file: b\n",
    "syntax_quote": "a: 'x\n",
    "syntax_escape": "a: \"\\q\"\n",
    "syntax_utf8": b"a: \xc3\x28\n",
    "unknown_fields": "foo: 1\ntls_server_config:\n  zz: 1\n  client_allowed_sans: [a]\nhttp_server_config:\n  yy: 2\n",
    "repeated": "tls_server_config: {}\nhttp_server_config: {}\ntls_server_config: {}\n",
    "repeated_key": f"basic_auth_users:\n  a: {DUMMY}\n  a: {DUMMY}\n",
    "types": "http_server_config:\n  http2: 1\n  headers: [a]\ntls_server_config:\n  cert_file: [a]\n"
             "  prefer_server_cipher_suites: \"yes\"\nbasic_auth_users:\n  a: {b: c}\n",
    "types_root_seq": "- a\n",
    "types_root_str": "hello\n",
    "types_long": "tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n",
    "types_tags": "http_server_config:\n  http2: 2001-12-14\n",
    "tag_mismatch": "http_server_config:\n  http2: !!bool 1\n",
    "bool_words": "http_server_config:\n  http2: off\ntls_server_config:\n  prefer_server_cipher_suites: Yes\n",
    "alias_merge": "x: &t {cert_file: srv.crt}\ntls_server_config:\n  <<: *t\n  key_file: srv.key\n",
    "alias_cycle": "x: &b {<<: *b}\ntls_server_config: *b\n",
    "alias_unknown": "tls_server_config: *nope\n",
    "merge_bad": "tls_server_config:\n  <<: 5\n",
    "unknown_version": "tls_server_config:\n  min_version: TLS14\n",
    "unknown_cipher": "tls_server_config:\n  cipher_suites: [TLS_RSA_WITH_3DES_EDE_CBC_SHA]\n",
    "unknown_curve": "tls_server_config:\n  curve_preferences: [P256]\n",
    "header_name": "http_server_config:\n  headers:\n    Server: kelvin\n",
    "header_case": "http_server_config:\n  headers:\n    x-frame-options: deny\n",
    "header_value": "http_server_config:\n  headers:\n    X-Frame-Options: \"allow\\tall\"\n",
    "header_nosniff": "http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
    "hash_short": "basic_auth_users:\n  a: secret\n",
    "hash_prefix": "basic_auth_users:\n  a: \"x" + DUMMY[1:] + "\"\n",
    "hash_version": "basic_auth_users:\n  a: \"$3" + DUMMY[2:] + "\"\n",
    "hash_cost": "basic_auth_users:\n  a: \"" + DUMMY.replace("$10$", "$03$") + "\"\n",
    "hash_atoi": "basic_auth_users:\n  a: \"" + DUMMY.replace("$10$", "$1x$") + "\"\n",
    "hash_before_tls": "basic_auth_users:\n  a: nope\ntls_server_config:\n  key_file: x\n",
    "missing_cert": "tls_server_config:\n  key_file: srv.key\n",
    "missing_cert_auth": "tls_server_config:\n  client_auth_type: RequireAnyClientCert\n",
    "missing_key": "tls_server_config:\n  cert_file: srv.crt\n",
    "no_cert_file": "tls_server_config:\n  cert_file: nope.crt\n  key_file: srv.key\n",
    "no_key_file": "tls_server_config:\n  cert_file: srv.crt\n  key_file: sub/../nope.key\n",
    "key_dir": "tls_server_config:\n  cert_file: srv.crt\n  key_file: /tmp\n",
    "mismatch": "tls_server_config:\n  cert_file: srv.crt\n  key_file: cli.key\n",
    "mismatch_type": "tls_server_config:\n  cert_file: srv.crt\n  key_file: ec.key\n",
    "key_is_cert": "tls_server_config:\n  cert_file: srv.crt\n  key_file: srv.crt\n",
    "cert_is_key": "tls_server_config:\n  cert_file: srv.key\n  key_file: srv.key\n",
    "cert_empty": "tls_server_config:\n  cert_file: empty.pem\n  key_file: srv.key\n",
    "key_empty": "tls_server_config:\n  cert_file: srv.crt\n  key_file: empty.pem\n",
    "cert_junk": "tls_server_config:\n  cert_file: junk.pem\n  key_file: srv.key\n",
    "key_junk": "tls_server_config:\n  cert_file: srv.crt\n  key_file: junk.pem\n",
    "cert_malformed": "tls_server_config:\n  cert_file: badcert.pem\n  key_file: srv.key\n",
    "ca_missing": TLS + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: nope.crt\n",
    "ca_garbage": TLS + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: empty.pem\n",
    "ca_no_policy": TLS + "  client_ca_file: ca.crt\n",
    "ca_no_policy2": TLS + "  client_ca_file: ca.crt\n  client_auth_type: NoClientCert\n",
    "auth_invalid": TLS + "  client_auth_type: requireanyclientcert\n",
    "auth_legacy": TLS + "  client_auth_type: RequireClientCert\n",
    "versions_reversed": TLS + "  min_version: TLS13\n  max_version: TLS10\n",
}


def check_corpus(d, f):
    cdir = os.path.join(d, "check")
    os.mkdir(cdir)
    for name in ("ca.crt", "srv.crt", "srv.key", "cli.key", "ec.crt", "ec.key", "junk.pem", "badcert.pem",
                 "empty.pem"):
        shutil.copy(os.path.join(d, name), cdir)
    names = []
    for name, body in CHECK_FILES.items():
        with open(os.path.join(cdir, name + ".yml"), "wb") as fh:
            fh.write(body if isinstance(body, bytes) else body.encode())
        names.append(name + ".yml")
    same = 0
    for n in names:
        # relative paths: the messages name files relative to the current directory
        p = subprocess.run([PROMTOOL, "check", "web-config", n], cwd=cdir, capture_output=True, text=True, timeout=60)
        k = subprocess.run([os.path.abspath(KELVIN), "check", "web-config", n], cwd=cdir, capture_output=True,
                           text=True, timeout=60)
        if (p.returncode, p.stdout, p.stderr) != (k.returncode, k.stdout, k.stderr):
            f.check(False, f"check web-config {n}:\n    promtool rc={p.returncode} {p.stderr!r}\n"
                           f"    kelvin   rc={k.returncode} {k.stderr!r}")
        else:
            same += 1
    # several files at once: the same verdict lines and exit status
    p = subprocess.run([PROMTOOL, "check", "web-config", *names[:6]], cwd=cdir, capture_output=True, text=True,
                       timeout=60)
    k = subprocess.run([os.path.abspath(KELVIN), "check", "web-config", *names[:6]], cwd=cdir, capture_output=True,
                       text=True, timeout=60)
    f.check((p.returncode, p.stderr) == (k.returncode, k.stderr),
            f"check web-config, several files:\n    promtool {p.stderr!r}\n    kelvin   {k.stderr!r}")
    return same, len(names)


class Pair:
    """A Prometheus and a kelvin agent serving the same web config file."""

    def __init__(self, d, web):
        self.d = d
        self.pport, self.kport = kt.free_port(), kt.free_port()
        prom_yml = os.path.join(d, "prometheus.yml")
        with open(prom_yml, "w") as fh:
            fh.write("global:\n  scrape_interval: 1h\n")
        self.procs = [
            kt.start([PROMETHEUS, f"--config.file={prom_yml}", f"--storage.tsdb.path={d}/prom-data-{self.pport}",
                      f"--web.listen-address=127.0.0.1:{self.pport}", f"--web.config.file={web}"],
                     log=os.path.join(d, f"prometheus-{self.pport}.log")),
            kt.start([KELVIN, "agent", f"--web.listen-address=127.0.0.1:{self.kport}", "--statsd.listen-udp=",
                      "--collector.xid.kmsg-path=", "--gpu.simulate=healthy", "--gpu.simulate.count=1",
                      f"--web.config.file={web}"], log=os.path.join(d, f"kelvin-{self.kport}.log")),
        ]

    def stop(self):
        for p in self.procs:
            kt.stop(p)


HDRS = ("www-authenticate", "x-frame-options", "content-security-policy", "strict-transport-security",
        "x-xss-protection")


def request(port, d, tls, cert=None, auth=None, max_version=None, path="/-/healthy"):
    """What a client sees: ('fail',) when no HTTP answer comes, else (status, headers..., body of a 401)."""
    try:
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_verify_locations(os.path.join(d, "ca.crt"))
            if cert:
                ctx.load_cert_chain(os.path.join(d, cert + ".crt"), os.path.join(d, cert + ".key"))
            if max_version:
                ctx.maximum_version = max_version
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            body = r.read()
            h = {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()
    except (ssl.SSLError, ConnectionError, http.client.HTTPException, socket.timeout, OSError):
        return ("fail",)
    out = [r.status] + [f"{n}={h[n]}" for n in HDRS if n in h]
    if r.status == 401:
        out += [f"content-type={h.get('content-type')}", f"x-content-type-options={h.get('x-content-type-options')}",
                body.decode(errors="replace")]
    return tuple(out)


def wait_up(port, d, tls, deadline=60):
    end = time.time() + deadline
    while time.time() < end:
        if request(port, d, tls, cert="cli") != ("fail",):
            return True
        time.sleep(0.2)
    return False


def write_atomic(path, text):
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)


def compare(pair, d, tls, cases, label, f):
    n = 0
    for name, kw in cases:
        p = request(pair.pport, d, tls, **kw)
        k = request(pair.kport, d, tls, **kw)
        n += 1
        f.check(p == k, f"{label}, {name}:\n    prometheus {p}\n    kelvin     {k}")
        if os.environ.get("WEBCOMPAT_DEBUG"):
            print(label, name, p)
    return n


def main():
    f = kt.Failures()
    for tool in (PROMTOOL, PROMETHEUS):
        if not os.access(tool, os.X_OK):
            print(f"FAIL: {tool} is missing (scripts/peers fetches Prometheus 2.42)")
            return 1
    if not shutil.which("openssl"):
        print("FAIL: the openssl command is needed to make the test certificates")
        return 1
    tmp = tempfile.mkdtemp(prefix="kelvin-webcompat-")
    pair = None
    try:
        make_certs(tmp)
        same, total = check_corpus(tmp, f)
        print(f"check web-config: {same}/{total} files with promtool's exact verdict")

        alice, bob = bcrypt("s3cret"), bcrypt("hunter2")
        web = os.path.join(tmp, "web.yml")
        # --- plain HTTP with basic auth and headers, then the users changed
        write_atomic(web, f"basic_auth_users:\n  alice: {alice}\nhttp_server_config:\n  headers:\n"
                          "    X-Frame-Options: deny\n    Content-Security-Policy: \"default-src 'self'\"\n"
                          "    X-XSS-Protection: \"1; mode=block\"\n")
        pair = Pair(tmp, web)
        f.check(wait_up(pair.pport, tmp, False) and wait_up(pair.kport, tmp, False), "plain: a server did not start")
        auth_cases = [("no credentials", {}), ("right", {"auth": "alice:s3cret"}),
                      ("wrong password", {"auth": "alice:nope"}), ("unknown user", {"auth": "bob:s3cret"}),
                      ("empty", {"auth": ":"}), ("no colon", {"auth": "alice"})]
        n = compare(pair, tmp, False, auth_cases, "basic auth", f)
        write_atomic(web, f"basic_auth_users:\n  bob: {bob}\nhttp_server_config:\n  headers:\n"
                          "    X-Frame-Options: sameorigin\n")
        time.sleep(0.2)
        n += compare(pair, tmp, False, auth_cases + [("new user", {"auth": "bob:hunter2"})], "reloaded users", f)
        pair.stop()
        pair = None

        # --- TLS, every client auth type and version setting, switched live
        write_atomic(web, TLS)
        pair = Pair(tmp, web)
        f.check(wait_up(pair.pport, tmp, True) and wait_up(pair.kport, tmp, True), "tls: a server did not start")
        certs = [("no cert", {}), ("good cert", {"cert": "cli"}), ("other CA", {"cert": "othercli"}),
                 ("serverAuth-only cert", {"cert": "srvonly"}), ("TLS 1.2 client", {"max_version": ssl.TLSVersion.TLSv1_2})]
        settings = [
            ("tls only", TLS),
            ("RequireAndVerifyClientCert", TLS + "  client_auth_type: RequireAndVerifyClientCert\n"
                                                 "  client_ca_file: ca.crt\n"),
            ("RequireAnyClientCert", TLS + "  client_auth_type: RequireAnyClientCert\n  client_ca_file: ca.crt\n"),
            ("VerifyClientCertIfGiven", TLS + "  client_auth_type: VerifyClientCertIfGiven\n"
                                              "  client_ca_file: ca.crt\n"),
            ("RequestClientCert", TLS + "  client_auth_type: RequestClientCert\n"),
            ("min_version TLS13", TLS + "  min_version: TLS13\n"),
            ("max_version TLS12", TLS + "  max_version: TLS12\n"),
            ("mTLS + basic auth", TLS + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                                        f"basic_auth_users:\n  alice: {alice}\n"),
        ]
        for label, body in settings:
            write_atomic(web, body)
            time.sleep(0.2)
            cases = list(certs)
            if "basic" in label:
                cases += [("cert + right password", {"cert": "cli", "auth": "alice:s3cret"}),
                          ("cert + wrong password", {"cert": "cli", "auth": "alice:x"})]
            n += compare(pair, tmp, True, cases, label, f)
        print(f"served: {n} requests compared with Prometheus 2.42")
    finally:
        if pair:
            pair.stop()
        if f.items:
            print("temp dir kept:", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        f.finish("web_config (compat)")


if __name__ == "__main__":
    sys.exit(main())
