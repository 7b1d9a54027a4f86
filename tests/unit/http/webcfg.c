/* tests/unit/http/webcfg.c -- the web config reader (src/http/webcfg.c):
 * defaults, every field, yaml.v2's strict decoding and its messages (the
 * expected texts are what promtool 2.42's `check web-config` prints for the
 * same files), relative paths, the header rules, bcrypt (cost checks and
 * password checks through libcrypt), the Authorization header, the key
 * pair and client CA checks on certificates made here with GnuTLS, and the
 * GnuTLS priority strings (each one must be accepted by GnuTLS). */
#include <crypt.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/err.h"
#include "http/webcfg.h"

static http_webcfg *parse_ok(const char *yaml, const char *path) {
    http_webcfg *c = NULL;
    char err[1024] = "";
    int rc = http_webcfg_parse(yaml, strlen(yaml), path, &c, err, sizeof err);
    if (rc) fail_msg("parse failed: %s\n--- for:\n%s", err, yaml);
    return c;
}

/* The message of a file that must not parse (the first stage). */
static void parse_err(const char *yaml, const char *want) {
    http_webcfg *c = NULL;
    char err[1024] = "";
    int rc = http_webcfg_parse(yaml, strlen(yaml), "web.yml", &c, err, sizeof err);
    if (rc == 0) {
        http_webcfg_free(c);
        fail_msg("parsed, want error %s\n--- for:\n%s", want, yaml);
    }
    assert_true(rc < 0);
    if (strcmp(err, want) != 0) fail_msg("error\n  got:  %s\n  want: %s\n--- for:\n%s", err, want, yaml);
}

static void test_defaults(void **state) {
    (void)state;
    const char *empties[] = {"", "\n", "# just a comment\n", "tls_server_config: {}\n", "{}\n"};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        http_webcfg *c = parse_ok(empties[i], "web.yml");
        assert_int_equal(c->min_version, HTTP_TLS12);
        assert_int_equal(c->max_version, HTTP_TLS13);
        assert_true(c->http2);
        assert_true(c->prefer_server_cipher_suites);
        assert_false(http_webcfg_tls_enabled(c));
        assert_int_equal(c->n_users, 0);
        assert_int_equal(c->n_headers, 0);
        char err[128];
        assert_int_equal(http_webcfg_check_users(c, err, sizeof err), 0);
        assert_int_equal(http_webcfg_check_tls(c, err, sizeof err), 0);
        http_webcfg_free(c);
    }
    /* A null zeroes what it meets, as yaml.v2 does (reflect.Zero). */
    http_webcfg *c = parse_ok("tls_server_config:\nhttp_server_config: ~\n", "web.yml");
    assert_int_equal(c->min_version, 0);
    assert_int_equal(c->max_version, 0);
    assert_false(c->prefer_server_cipher_suites);
    assert_false(c->http2);
    http_webcfg_free(c);
    /* "---" alone is a document holding a null: the whole Config is zeroed. */
    c = parse_ok("---\n", "web.yml");
    assert_int_equal(c->min_version, 0);
    assert_false(c->http2);
    http_webcfg_free(c);
    c = parse_ok("tls_server_config:\n  min_version:\n  max_version: TLS12\n", "web.yml");
    assert_int_equal(c->min_version, 0);
    assert_int_equal(c->max_version, HTTP_TLS12);
    http_webcfg_free(c);
}

static void test_fields(void **state) {
    (void)state;
    http_webcfg *c =
        parse_ok("tls_server_config:\n"
                 "  cert_file: certs/../srv.crt\n"
                 "  key_file: /abs/srv.key\n"
                 "  client_auth_type: RequireAndVerifyClientCert\n"
                 "  client_ca_file: ./ca.crt\n"
                 "  min_version: TLS10\n"
                 "  max_version: TLS12\n"
                 "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384]\n"
                 "  curve_preferences: [X25519, CurveP384]\n"
                 "  prefer_server_cipher_suites: no\n"
                 "http_server_config:\n"
                 "  http2: false\n"
                 "  headers:\n"
                 "    X-Frame-Options: sameorigin\n"
                 "    Content-Security-Policy: \"default-src 'self'\"\n"
                 "basic_auth_users:\n"
                 "  alice: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"
                 "  \"bob:x\": b\n",
                 "/etc/kelvin/web.yml");
    assert_string_equal(c->cert_file, "/etc/kelvin/srv.crt");
    assert_string_equal(c->key_file, "/abs/srv.key");
    assert_string_equal(c->client_ca_file, "/etc/kelvin/ca.crt");
    assert_string_equal(c->client_auth_type, "RequireAndVerifyClientCert");
    assert_true(http_webcfg_tls_enabled(c));
    assert_int_equal(c->min_version, HTTP_TLS10);
    assert_int_equal(c->max_version, HTTP_TLS12);
    assert_int_equal(c->n_cipher_suites, 2);
    assert_int_equal(c->cipher_suites[0], 0xc02f);
    assert_int_equal(c->cipher_suites[1], 0x1302);
    assert_int_equal(c->n_curves, 2);
    assert_int_equal(c->curves[0], 29);
    assert_int_equal(c->curves[1], 24);
    assert_false(c->prefer_server_cipher_suites);
    assert_false(c->http2);
    assert_int_equal(c->n_headers, 2);
    assert_string_equal(c->headers[0].key, "X-Frame-Options");
    assert_string_equal(c->headers[0].value, "sameorigin");
    assert_string_equal(c->headers[1].value, "default-src 'self'");
    assert_int_equal(c->n_users, 2);
    assert_string_equal(c->users[0].key, "alice");
    assert_non_null(http_webcfg_user(c, "alice", 5));
    assert_null(http_webcfg_user(c, "alic", 4));
    assert_non_null(http_webcfg_user(c, "bob:x", 5));
    http_webcfg_free(c);

    /* Paths: relative to the file's directory, cleaned as filepath.Join does. */
    const struct {
        const char *cfg, *in, *want;
    } P[] = {
        {"web.yml", "a.pem", "a.pem"},
        {"web.yml", "./x/../a.pem", "a.pem"},
        {"conf/web.yml", "a.pem", "conf/a.pem"},
        {"conf/web.yml", "../a.pem", "a.pem"},
        {"conf/web.yml", "../../a.pem", "../a.pem"},
        {"/web.yml", "a.pem", "/a.pem"},
        {"/etc/web.yml", "../../../a.pem", "/a.pem"},
        {"/etc//k/web.yml", "x//y/./a.pem", "/etc/k/x/y/a.pem"},
        {NULL, "a/b/", "a/b"},
    };
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
        char y[256];
        snprintf(y, sizeof y, "tls_server_config:\n  cert_file: %s\n", P[i].in);
        c = parse_ok(y, P[i].cfg);
        if (strcmp(c->cert_file, P[i].want) != 0)
            fail_msg("%s in %s: got %s, want %s", P[i].in, P[i].cfg ? P[i].cfg : "(null)", c->cert_file,
                     P[i].want);
        http_webcfg_free(c);
    }

    /* Aliases and merges. */
    c = parse_ok("tls_server_config:\n  <<: [{cert_file: a.crt}, {key_file: b.key}]\n  cert_file: c.crt\n"
                 "http_server_config:\n  headers:\n    X-XSS-Protection: &v \"1; mode=block\"\n"
                 "    Strict-Transport-Security: *v\n",
                 "web.yml");
    assert_string_equal(c->cert_file, "c.crt");
    assert_string_equal(c->key_file, "b.key");
    assert_string_equal(c->headers[1].value, "1; mode=block");
    http_webcfg_free(c);
    /* Booleans as YAML 1.1 reads them; any scalar fits a string field. */
    c = parse_ok(
        "http_server_config:\n  http2: off\ntls_server_config:\n  cert_file: 123\n  key_file: true\n",
        "web.yml");
    assert_false(c->http2);
    assert_string_equal(c->cert_file, "123");
    assert_string_equal(c->key_file, "true");
    http_webcfg_free(c);
    /* Only the first document counts. */
    c = parse_ok("basic_auth_users: {a: b}\n---\nnot: [valid\n", "web.yml");
    assert_int_equal(c->n_users, 1);
    http_webcfg_free(c);
}

static void test_errors(void **state) {
    (void)state;
    /* YAML syntax (yaml.v2's line rules: scanner errors count from 1,
     * parser errors name the 0-based line, line 0 is not named). */
    parse_err("a: [\n", "yaml: line 1: did not find expected node content");
    parse_err("a: b: c\n", "yaml: mapping values are not allowed in this context");
    parse_err("\tfoo: 1\n", "yaml: found character that cannot start any token");
    parse_err("basic_auth_users:\n  a: x\n\tb: y\n",
              "yaml: line 3: found a tab character that violates indentation");
    parse_err("a: *nope\n", "yaml: unknown anchor 'nope' referenced");
    parse_err("x: &b {<<: *b}\ntls_server_config: *b\n", "yaml: anchor 'b' value contains itself");
    parse_err("tls_server_config: &a\n  cert_file: *a\n",
              "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!map into string");
    parse_err("tls_server_config:\n  <<: 5\n",
              "yaml: map merge requires map or sequence of maps as the value");
    /* Strict decoding: every problem, in file order. */
    parse_err("foo: 1\nbar: 2\ntls_server_config:\n  zz: 1\nhttp_server_config:\n  yy: 2\n",
              "yaml: unmarshal errors:\n"
              "  line 1: field foo not found in type web.Config\n"
              "  line 2: field bar not found in type web.Config\n"
              "  line 4: field zz not found in type web.TLSConfig\n"
              "  line 6: field yy not found in type web.HTTPConfig");
    parse_err("http_server_config:\n  http2: 1\ntls_server_config:\n  cert_file: [a]\n",
              "yaml: unmarshal errors:\n"
              "  line 2: cannot unmarshal !!int `1` into bool\n"
              "  line 4: cannot unmarshal !!seq into string");
    parse_err("tls_server_config:\n  client_allowed_sans: [a]\n",
              "yaml: unmarshal errors:\n  line 2: field client_allowed_sans not found in type web.TLSConfig");
    parse_err("basic_auth_users:\n  a: x\n  a: y\n",
              "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map");
    parse_err("tls_server_config: {}\ntls_server_config: {}\n",
              "yaml: unmarshal errors:\n  line 2: field tls_server_config already set in type web.Config");
    parse_err("hello\n", "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `hello` into web.Config");
    parse_err("- a\n", "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into web.Config");
    parse_err("tls_server_config: 5\n",
              "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!int `5` into web.TLSConfig");
    parse_err("basic_auth_users: [a]\n",
              "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into map[string]config.Secret");
    parse_err("basic_auth_users:\n  a: {b: c}\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!map into config.plain");
    parse_err("tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!str `TLS_AES...` into []web.Cipher");
    parse_err("http_server_config:\n  headers: [a]\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!seq into map[string]string");
    parse_err("tls_server_config:\n  prefer_server_cipher_suites: \"true\"\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!str `true` into bool");
    parse_err("http_server_config:\n  http2: 2001-12-14\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!timestamp `2001-12-14` into bool");
    parse_err("http_server_config:\n  http2: .inf\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!float `.inf` into bool");
    parse_err("http_server_config:\n  http2: !!bool 1\n", "yaml: cannot decode !!int `1` as a !!bool");
    /* The custom unmarshalers stop at once, dropping the errors collected so far. */
    parse_err("http_server_config:\n  http2: 1\ntls_server_config:\n  min_version: TLS9\n",
              "unknown TLS version: TLS9");
    parse_err("tls_server_config:\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n",
              "unknown cipher: TLS_RSA_WITH_RC4_128_SHA");
    parse_err("tls_server_config:\n  curve_preferences: [P256]\n", "unknown curve: P256");
    parse_err("tls_server_config:\n  min_version: [TLS13]\n",
              "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!seq into string");
    /* Headers. */
    parse_err("http_server_config:\n  headers:\n    Content-Type: x\n",
              "HTTP header \"Content-Type\" can not be configured");
    parse_err("http_server_config:\n  headers:\n    x-frame-options: deny\n",
              "HTTP header \"x-frame-options\" can not be configured");
    parse_err(
        "http_server_config:\n  headers:\n    X-Frame-Options: foo\n",
        "invalid value for X-Frame-Options. Expected one of: [\"deny\" \"sameorigin\"], but got: \"foo\"");
    parse_err("http_server_config:\n  headers:\n    X-Frame-Options: \"a\\tb\\u00e9\\x01\"\n",
              "invalid value for X-Frame-Options. Expected one of: [\"deny\" \"sameorigin\"], but got: "
              "\"a\\tb\xc3\xa9\\x01\"");
    parse_err("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
              "invalid value for X-Content-Type-Options. Expected one of: [\"nosniff\"], but got: \"sniff\"");
    /* Limits. */
    char *deep = malloc(5000);
    strcpy(deep, "a: ");
    for (int i = 0; i < 1200; i++) strcat(deep, "[");
    parse_err(deep, "yaml: nesting deeper than 1000 levels");
    free(deep);
    /* An alias bomb (merges of merges: 4^29 fields) stops at the visit limit. */
    char bomb[4096] = "x0: &a0 {cert_file: a}\n";
    for (int i = 1; i < 30; i++) {
        char line[96];
        snprintf(line, sizeof line, "x%d: &a%d {<<: [*a%d, *a%d, *a%d, *a%d]}\n", i, i, i - 1, i - 1, i - 1,
                 i - 1);
        strcat(bomb, line);
    }
    strcat(bomb, "tls_server_config: *a29\n");
    parse_err(bomb, "yaml: document contains excessive aliasing");
}

static void test_bcrypt(void **state) {
    (void)state;
    const struct {
        const char *hash, *want;
    } E[] = {
        {"$2y$10$abc", "crypto/bcrypt: hashedSecret too short to be a bcrypted password"},
        {"$3y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi",
         "crypto/bcrypt: bcrypt algorithm version '3' requested is newer than current version '2'"},
        {"x2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi",
         "crypto/bcrypt: bcrypt hashes must start with '$', but hashedSecret started with 'x'"},
        {"$2y$03$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi",
         "crypto/bcrypt: cost 3 is outside allowed range (4,31)"},
        {"$2y$32$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi",
         "crypto/bcrypt: cost 32 is outside allowed range (4,31)"},
        {"$2y$x0$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi",
         "strconv.Atoi: parsing \"x0\": invalid syntax"},
        {"$2y$-5$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi",
         "crypto/bcrypt: cost -5 is outside allowed range (4,31)"},
    };
    for (size_t i = 0; i < sizeof E / sizeof E[0]; i++) {
        char err[256] = "";
        int cost;
        assert_true(http_bcrypt_cost(E[i].hash, strlen(E[i].hash), &cost, err, sizeof err) < 0);
        assert_string_equal(err, E[i].want);
        assert_int_equal(http_bcrypt_verify(E[i].hash, strlen(E[i].hash), "x", 1), 0);
    }
    int cost = 0;
    char err[128];
    const char dummy[] = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
    assert_int_equal(http_bcrypt_cost(dummy, sizeof dummy - 1, &cost, err, sizeof err), 0);
    assert_int_equal(cost, 10);
    /* exporter-toolkit's dummy hash is "fakepassword". */
    assert_int_equal(http_bcrypt_verify(dummy, sizeof dummy - 1, "fakepassword", 12), 1);
    assert_int_equal(http_bcrypt_verify(dummy, sizeof dummy - 1, "fakepassworD", 12), 0);
    assert_int_equal(http_bcrypt_verify(dummy, sizeof dummy - 1, "fakepassword", 11), 0);

    /* A hash made here by libcrypt, under every prefix Go accepts. */
    char salt[64], *h;
    struct crypt_data *cd = calloc(1, sizeof *cd);
    assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof salt));
    h = crypt_rn("s3cret\xc3\xa9", salt, cd, (int)sizeof *cd);
    assert_non_null(h);
    assert_int_equal(strlen(h), 60);
    const char *prefixes[] = {"$2a$", "$2b$", "$2y$", "$2x$", "$2$"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        char v[80];
        snprintf(v, sizeof v, "%s%s", prefixes[i], h + 4);
        assert_int_equal(http_bcrypt_verify(v, strlen(v), "s3cret\xc3\xa9", 8), 1);
        assert_int_equal(http_bcrypt_verify(v, strlen(v), "s3cret", 6), 0);
    }
    /* A password with a NUL never matches (crypt() cannot see past it);
     * a hash with bytes after the 31 of the digest does not either. */
    assert_int_equal(http_bcrypt_verify(h, 60, "s3cret\0x", 8), 0);
    char longer[80];
    snprintf(longer, sizeof longer, "%sX", h);
    assert_int_equal(http_bcrypt_verify(longer, 61, "s3cret\xc3\xa9", 8), 0);
    free(cd);

    /* validateUsers stops at the first bad hash. */
    http_webcfg *c =
        parse_ok("basic_auth_users:\n  a: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"
                 "  b: nope\n",
                 "web.yml");
    assert_true(http_webcfg_check_users(c, err, sizeof err) < 0);
    assert_string_equal(err, "crypto/bcrypt: hashedSecret too short to be a bcrypted password");
    http_webcfg_free(c);
}

static void test_basic_auth_header(void **state) {
    (void)state;
    const struct {
        const char *hdr;
        int ok;
        const char *user, *pass;
    } T[] = {
        {"Basic YWxpY2U6czNjcmV0", 1, "alice", "s3cret"},
        {"basic YWxpY2U6czNjcmV0", 1, "alice", "s3cret"},
        {"BASIC YWxpY2U6czNjcmV0", 1, "alice", "s3cret"},
        {"Basic YWxpY2U6", 1, "alice", ""},
        {"Basic OnB3", 1, "", "pw"},
        {"Basic YTpiOmM=", 1, "a", "b:c"},
        {"Basic YWxpY2U=", 0, NULL, NULL},          /* no colon */
        {"Basic YWxpY2U6czNjcmV0=", 0, NULL, NULL}, /* bad padding */
        {"Basic YWxpY2U6czNjcm", 0, NULL, NULL},    /* not a whole quantum */
        {"Basic !!!!", 0, NULL, NULL},
        {"Bearer YWxpY2U6czNjcmV0", 0, NULL, NULL},
        {"Basic", 0, NULL, NULL},
        {"", 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        char *dec = NULL;
        size_t len = 0, colon = 0;
        int rc = http_basic_auth_parse(T[i].hdr, strlen(T[i].hdr), &dec, &len, &colon);
        if (rc != T[i].ok) fail_msg("%s: got %d, want %d", T[i].hdr, rc, T[i].ok);
        if (!rc) continue;
        assert_int_equal(colon, strlen(T[i].user));
        assert_memory_equal(dec, T[i].user, colon);
        assert_string_equal(dec + colon + 1, T[i].pass);
        free(dec);
    }
}

/* ---- certificates made with GnuTLS ----------------------------------------- */

static char tmpdir[64];

static void write_file(const char *name, const void *data, size_t n);
static void write_str(const char *name, const char *s) {
    write_file(name, s, strlen(s));
}

static void write_file(const char *name, const void *data, size_t n) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A self-signed certificate and its key (ECDSA P-256 or RSA). */
static void make_pair(const char *cert_name, const char *key_name, int rsa) {
    gnutls_x509_privkey_t k;
    gnutls_x509_crt_t c;
    assert_int_equal(gnutls_x509_privkey_init(&k), 0);
    if (rsa)
        assert_int_equal(gnutls_x509_privkey_generate(k, GNUTLS_PK_RSA, 2048, 0), 0);
    else
        assert_int_equal(gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
                                                      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
                         0);
    assert_int_equal(gnutls_x509_crt_init(&c), 0);
    gnutls_x509_crt_set_version(c, 3);
    unsigned char serial[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    gnutls_x509_crt_set_serial(c, serial, sizeof serial);
    gnutls_x509_crt_set_activation_time(c, time(NULL) - 60);
    gnutls_x509_crt_set_expiration_time(c, time(NULL) + 86400);
    assert_int_equal(gnutls_x509_crt_set_dn(c, "CN=kelvin-test", NULL), 0);
    assert_int_equal(gnutls_x509_crt_set_key(c, k), 0);
    assert_int_equal(gnutls_x509_crt_sign2(c, c, k, GNUTLS_DIG_SHA256, 0), 0);
    gnutls_datum_t d;
    assert_int_equal(gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_PEM, &d), 0);
    write_file(cert_name, d.data, d.size);
    gnutls_free(d.data);
    assert_int_equal(gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &d), 0);
    write_file(key_name, d.data, d.size);
    gnutls_free(d.data);
    gnutls_x509_crt_deinit(c);
    gnutls_x509_privkey_deinit(k);
}

/* Writes web.yml with body, loads it (parse + users + TLS): 0 or the message. */
static int load(const char *body, char *err, size_t errlen, http_webcfg **ret) {
    write_file("web.yml", body, strlen(body));
    char p[256];
    snprintf(p, sizeof p, "%s/web.yml", tmpdir);
    err[0] = 0;
    return http_webcfg_load(p, ret, err, errlen);
}

static void load_err(const char *body, const char *want) {
    char err[1024], want_full[1024];
    http_webcfg *c = NULL;
    snprintf(want_full, sizeof want_full, want, tmpdir, tmpdir);
    int rc = load(body, err, sizeof err, &c);
    if (rc == 0) {
        http_webcfg_free(c);
        fail_msg("loaded, want %s\n--- for:\n%s", want_full, body);
    }
    if (strcmp(err, want_full) != 0)
        fail_msg("error\n  got:  %s\n  want: %s\n--- for:\n%s", err, want_full, body);
}

static void test_tls_files(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kelvin-webcfg-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    make_pair("ec.crt", "ec.key", 0);
    make_pair("rsa.crt", "rsa.key", 1);
    make_pair("other.crt", "other.key", 0);
    write_str("junk.pem", "-----BEGIN FOO-----\naGVsbG8=\n-----END FOO-----\n");
    write_str("badcert.pem", "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n");
    write_str("empty.pem", "");

    char err[1024];
    http_webcfg *c = NULL;
    int rc = load("tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n", err, sizeof err, &c);
    if (rc) fail_msg("%s", err);
    assert_non_null(c->cert_pem);
    assert_non_null(strstr(c->cert_pem, "BEGIN CERTIFICATE"));
    assert_non_null(strstr(c->key_pem, "PRIVATE KEY"));
    assert_null(c->ca_pem);
    assert_int_equal(c->client_auth, HTTP_CLIENT_AUTH_NONE);
    http_webcfg_free(c);
    rc = load("tls_server_config:\n  cert_file: rsa.crt\n  key_file: rsa.key\n  client_ca_file: ec.crt\n"
              "  client_auth_type: VerifyClientCertIfGiven\n",
              err, sizeof err, &c);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c->client_auth, HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN);
    assert_non_null(c->ca_pem);
    http_webcfg_free(c);
    const struct {
        const char *type;
        http_client_auth want;
    } A[] = {{"NoClientCert", HTTP_CLIENT_AUTH_NONE},
             {"RequestClientCert", HTTP_CLIENT_AUTH_REQUEST},
             {"RequireAnyClientCert", HTTP_CLIENT_AUTH_REQUIRE_ANY},
             {"RequireClientCert", HTTP_CLIENT_AUTH_REQUIRE_ANY},
             {"VerifyClientCertIfGiven", HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN},
             {"RequireAndVerifyClientCert", HTTP_CLIENT_AUTH_REQUIRE_VERIFY}};
    for (size_t i = 0; i < sizeof A / sizeof A[0]; i++) {
        char y[256];
        snprintf(y, sizeof y,
                 "tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n  client_auth_type: %s\n",
                 A[i].type);
        rc = load(y, err, sizeof err, &c);
        if (rc) fail_msg("%s: %s", A[i].type, err);
        assert_int_equal(c->client_auth, A[i].want);
        http_webcfg_free(c);
    }
    /* A CA file whose contents do not parse passes, as AppendCertsFromPEM's
     * result is ignored. */
    rc = load("tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n  client_ca_file: empty.pem\n"
              "  client_auth_type: RequireAndVerifyClientCert\n",
              err, sizeof err, &c);
    assert_int_equal(rc, 0);
    http_webcfg_free(c);

    /* ConfigToTLSConfig's checks, in its order, with Go's messages (%s: the temp dir). */
    load_err("tls_server_config:\n  key_file: x\n", "missing cert_file");
    load_err("tls_server_config:\n  client_auth_type: RequireAnyClientCert\n", "missing cert_file");
    load_err("tls_server_config:\n  client_ca_file: ca.crt\n", "missing cert_file");
    load_err("tls_server_config:\n  cert_file: x\n", "missing key_file");
    load_err("tls_server_config:\n  cert_file: nope.crt\n  key_file: ec.key\n",
             "failed to load X509KeyPair: open %s/nope.crt: no such file or directory");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: nope.key\n",
             "failed to load X509KeyPair: open %s/nope.key: no such file or directory");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: /tmp\n",
             "failed to load X509KeyPair: read /tmp: is a directory");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: other.key\n",
             "failed to load X509KeyPair: tls: private key does not match public key");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: rsa.key\n",
             "failed to load X509KeyPair: tls: private key type does not match public key type");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.crt\n",
             "failed to load X509KeyPair: tls: found a certificate rather than a key in the PEM for the "
             "private key");
    load_err(
        "tls_server_config:\n  cert_file: ec.key\n  key_file: ec.key\n",
        "failed to load X509KeyPair: tls: failed to find certificate PEM data in certificate input, but did "
        "find a private key; PEM inputs may have been switched");
    load_err("tls_server_config:\n  cert_file: empty.pem\n  key_file: ec.key\n",
             "failed to load X509KeyPair: tls: failed to find any PEM data in certificate input");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: empty.pem\n",
             "failed to load X509KeyPair: tls: failed to find any PEM data in key input");
    load_err("tls_server_config:\n  cert_file: junk.pem\n  key_file: ec.key\n",
             "failed to load X509KeyPair: tls: failed to find \"CERTIFICATE\" PEM block in certificate input "
             "after skipping PEM blocks of the following types: [FOO]");
    load_err(
        "tls_server_config:\n  cert_file: ec.crt\n  key_file: junk.pem\n",
        "failed to load X509KeyPair: tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in "
        "key input after skipping PEM blocks of the following types: [FOO]");
    load_err("tls_server_config:\n  cert_file: badcert.pem\n  key_file: ec.key\n",
             "failed to load X509KeyPair: x509: malformed certificate");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n  client_ca_file: nope.crt\n"
             "  client_auth_type: Foo\n",
             "open %s/nope.crt: no such file or directory");
    load_err(
        "tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n  client_auth_type: noclientcert\n",
        "Invalid ClientAuth: noclientcert");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n  client_ca_file: ec.crt\n",
             "Client CA's have been configured without a Client Auth Policy");
    load_err("tls_server_config:\n  cert_file: ec.crt\n  key_file: ec.key\n  client_ca_file: ec.crt\n"
             "  client_auth_type: NoClientCert\n",
             "Client CA's have been configured without a Client Auth Policy");
    /* validateUsers comes before the TLS checks; the YAML before both. */
    load_err("basic_auth_users: {a: b}\ntls_server_config:\n  key_file: x\n",
             "crypto/bcrypt: hashedSecret too short to be a bcrypted password");
    load_err("basic_auth_users: {a: b}\nfoo: 1\n",
             "yaml: unmarshal errors:\n  line 2: field foo not found in type web.Config");
    char p[256];
    snprintf(p, sizeof p, "%s/none.yml", tmpdir);
    assert_true(http_webcfg_load(p, &c, err, sizeof err) < 0);
    char want[512];
    snprintf(want, sizeof want, "open %s: no such file or directory", p);
    assert_string_equal(err, want);

    const char *files[] = {"ec.crt",    "ec.key",   "rsa.crt",     "rsa.key",   "other.crt",
                           "other.key", "junk.pem", "badcert.pem", "empty.pem", "web.yml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
        unlink(p);
    }
    rmdir(tmpdir);
}

static void test_priority(void **state) {
    (void)state;
    const struct {
        const char *yaml;
        const char *want; /* NULL: only GnuTLS's acceptance is checked */
        int rc;
    } T[] = {
        {"", "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2", 0},
        {"tls_server_config:\n  min_version: TLS13\n", "NORMAL:-VERS-ALL:+VERS-TLS1.3", 0},
        {"tls_server_config:\n  min_version: TLS10\n  max_version: TLS11\n",
         "NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0", 0},
        {"tls_server_config:\n", "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0", 0},
        {"tls_server_config:\n  min_version: TLS13\n  max_version: TLS12\n", NULL, BASE_E_RANGE},
        {"tls_server_config:\n  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
         "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n",
         "NORMAL:-VERS-ALL:+VERS-TLS1.2:-CIPHER-ALL:-MAC-ALL:-KX-ALL:+ECDHE-RSA:+AES-128-GCM:+AEAD:+ECDHE-"
         "ECDSA",
         0},
        {"tls_server_config:\n  cipher_suites: [TLS_RSA_WITH_AES_256_CBC_SHA]\n"
         "  curve_preferences: [CurveP521, X25519]\n",
         NULL, 0},
        {"tls_server_config:\n  curve_preferences: [X25519]\n",
         "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-GROUP-ALL:+GROUP-X25519", 0},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        http_webcfg *c = parse_ok(T[i].yaml, "web.yml");
        char prio[1024];
        int rc = http_webcfg_priority(c, prio, sizeof prio);
        http_webcfg_free(c);
        assert_int_equal(rc, T[i].rc);
        if (rc) continue;
        if (T[i].want && strcmp(prio, T[i].want) != 0) fail_msg("got %s\nwant %s", prio, T[i].want);
        gnutls_priority_t p;
        const char *where = NULL;
        if (gnutls_priority_init2(&p, prio, &where, 0) < 0) fail_msg("GnuTLS rejects %s at %s", prio, where);
        gnutls_priority_deinit(p);
    }
    char small[8];
    http_webcfg *c = parse_ok("", "web.yml");
    assert_int_equal(http_webcfg_priority(c, small, sizeof small), BASE_E_LIMIT);
    http_webcfg_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bcrypt),
        cmocka_unit_test(test_basic_auth_header),
        cmocka_unit_test(test_tls_files),
        cmocka_unit_test(test_priority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
