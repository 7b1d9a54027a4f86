#!/usr/bin/python3
"""`kelvin server` scraping over HTTPS with tls_config, as Prometheus does.

A throwaway CA, a server certificate for 127.0.0.1 and a client certificate
are made with the openssl command in a temp directory. Two fixture servers
(tests/lib/fixture_targets.py) serve HTTPS on loopback: one with the server
certificate only, one that also requires a client certificate from the CA.
One kelvin server scrapes them every second with one job per case:
  ca          scheme https, tls_config.ca_file            -> up, body stored
  no_ca       scheme https, no CA (the system's store)    -> down, a certificate error
  insecure    scheme https, insecure_skip_verify: true    -> up
  auth        ca_file + basic_auth                        -> up, the Authorization header arrived
  client      client-cert server, cert_file + key_file    -> up
  no_client   client-cert server, no client certificate   -> down
Health and errors are read from /api/v1/targets, stored values from
`kelvin tsdb dump`. Every wait is bounded; every process is stopped.
"""
import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import fixture_targets as ft  # noqa: E402
import kelvintest as kt  # noqa: E402

KELVIN = os.environ.get("KELVIN_BIN", "build/kelvin")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60)


def make_certs(d):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=kelvin-test-ca", cwd=d)
    for name, ext in (("srv", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
                      ("cli", "extendedKeyUsage=clientAuth\n")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj",
                "/CN=" + ("127.0.0.1" if name == "srv" else "kelvin-client"), cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out",
                name + ".crt", "-days", "2", "-extfile", name + ".ext", cwd=d)


def server_ctx(d, require_client):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "srv.crt"), os.path.join(d, "srv.key"))
    if require_client:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(os.path.join(d, "ca.crt"))
    return ctx


def config(d, plain, mtls):
    def job(name, addr, path, tls, extra=""):
        return (f"  - job_name: {name}\n    scheme: https\n    metrics_path: /{path}\n"
                f"    tls_config: {{{tls}}}\n{extra}    static_configs:\n      - targets: ['{addr}']\n")
    ca = f"ca_file: {d}/ca.crt"
    cli = f"{ca}, cert_file: {d}/cli.crt, key_file: {d}/cli.key"
    return ("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
            + job("ca", plain, "m", ca)
            + job("no_ca", plain, "m", "")
            + job("insecure", plain, "m", "insecure_skip_verify: true")
            + job("auth", plain, "auth", ca, "    basic_auth: {username: kelvin, password: s3cret}\n")
            + job("client", mtls, "m", cli)
            + job("no_client", mtls, "m", ca))


def targets(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=5) as r:
        return {t["labels"]["job"]: t for t in json.load(r)["data"]["activeTargets"]}


def main():
    if not shutil.which("openssl"):
        print("FAIL: the openssl command is needed to make the test certificates")
        return 1
    tmp = tempfile.mkdtemp(prefix="kelvin-tls-")
    plain = mtls = srv = None
    failures = []
    try:
        make_certs(tmp)
        body = 'tls_probe{side="server"} 42\n'
        plain = ft.FixtureServer(tls=server_ctx(tmp, False))
        plain.add(ft.Target("m", [body]))
        auth = plain.add(ft.Target("auth", [body]))
        plain.start()
        mtls = ft.FixtureServer(tls=server_ctx(tmp, True))
        mtls.add(ft.Target("m", [body]))
        mtls.start()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(config(tmp, plain.address, mtls.address))
        port = kt.free_port()
        data = os.path.join(tmp, "data")
        srv = kt.start([KELVIN, "server", f"--config.file={cfg}", f"--web.listen-address=127.0.0.1:{port}",
                        f"--storage.tsdb.path={data}"], log=os.path.join(tmp, "server.log"))
        kt.wait_http(f"http://127.0.0.1:{port}/-/ready", deadline=30, proc=srv)
        want_up = {"ca": True, "no_ca": False, "insecure": True, "auth": True, "client": True, "no_client": False}
        deadline = time.time() + 20
        got = {}
        while time.time() < deadline:
            got = targets(port)
            if all(j in got and got[j]["health"] == ("up" if up else "down") for j, up in want_up.items()):
                break
            time.sleep(0.25)
        for j, up in want_up.items():
            t = got.get(j)
            health = t["health"] if t else "missing"
            if health != ("up" if up else "down"):
                failures.append(f"job {j}: health {health}, want {'up' if up else 'down'} "
                                f"(lastError {t['lastError'] if t else ''!r})")
        err = got.get("no_ca", {}).get("lastError", "")
        if "certificate" not in err.lower() and "ssl" not in err.lower() and "tls" not in err.lower():
            failures.append(f"job no_ca: lastError should name the certificate problem, got {err!r}")
        want_auth = "Basic " + base64.b64encode(b"kelvin:s3cret").decode()
        seen = {r["headers"].get("authorization") for r in auth.requests}  # keys are lower case
        if want_auth not in seen:
            failures.append(f"job auth: the target never saw {want_auth!r} (saw {seen})")
        kt.stop(srv)
        srv = None
        dump = subprocess.run([KELVIN, "tsdb", "dump", "--match=tls_probe", data], capture_output=True, text=True,
                              timeout=60)
        jobs = {line.split('job="')[1].split('"')[0] for line in dump.stdout.splitlines() if 'job="' in line
                and line.split("} ")[1].split()[0] == "42"}
        for j in ("ca", "insecure", "auth", "client"):
            if j not in jobs:
                failures.append(f"job {j}: no tls_probe sample with value 42 stored (dump rc {dump.returncode})")
        for j in ("no_ca", "no_client"):
            if j in jobs:
                failures.append(f"job {j}: stored samples from a scrape that should have failed")
    finally:
        if srv:
            kt.stop(srv)
        for s in (plain, mtls):
            if s:
                s.stop()
        kt.stop_all()
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("scrape_tls: every case behaves as Prometheus's tls_config: OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
