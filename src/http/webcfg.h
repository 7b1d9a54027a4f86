/* webcfg.h -- Prometheus's web configuration file (--web.config.file), as
 * Prometheus 2.42 reads it (exporter-toolkit v0.8.2, package web).
 *
 * The file has three sections, every one optional:
 *
 *   tls_server_config:            # TLS for the HTTP server
 *     cert_file, key_file:        # PEM; paths relative to the file's directory
 *     client_auth_type:           # NoClientCert (default), RequestClientCert,
 *                                 # RequireAnyClientCert (or RequireClientCert),
 *                                 # VerifyClientCertIfGiven, RequireAndVerifyClientCert
 *     client_ca_file:             # PEM bundle the client certificates are checked against
 *     min_version, max_version:   # TLS10 .. TLS13 (default TLS12 .. TLS13)
 *     cipher_suites: [...]        # Go's names (tls.CipherSuites()), TLS 1.0-1.2 only
 *     curve_preferences: [...]    # CurveP256, CurveP384, CurveP521, X25519
 *     prefer_server_cipher_suites # accepted, no effect (as in Go >= 1.17)
 *   http_server_config:
 *     http2:                      # accepted; libmicrohttpd speaks HTTP/1.1 only
 *     headers: {name: value}      # only Strict-Transport-Security,
 *                                 # X-Content-Type-Options (nosniff), X-Frame-Options
 *                                 # (deny, sameorigin), X-XSS-Protection, Content-Security-Policy
 *   basic_auth_users: {user: bcrypt hash}
 *
 * Reading follows exporter-toolkit step by step, with its messages:
 *   http_webcfg_parse   = getConfig: YAML decoded strictly as yaml.v2's
 *                         UnmarshalStrict does (unknown or repeated fields,
 *                         wrong types -> "yaml: unmarshal errors:\n  line N: ..."),
 *                         then the header rules, then relative paths joined
 *                         with the file's directory (Go's filepath.Join);
 *   http_webcfg_check_users = validateUsers: every hash passes bcrypt.Cost;
 *   http_webcfg_check_tls   = ConfigToTLSConfig: "missing cert_file", the key
 *                         pair loaded and matched (Go's tls.X509KeyPair
 *                         messages), the client CA file read, the client
 *                         auth type known, no CA without a client auth type.
 *   http_webcfg_load    = all of them on a file: promtool check web-config's verdict.
 *
 * Ownership: an http_webcfg and every string and array in it belong to the
 * struct; http_webcfg_free() releases them. Nothing here logs; errors go to
 * the caller's buffer. Thread-safety: none needed (no shared state).
 */
#ifndef KELVIN_HTTP_WEBCFG_H
#define KELVIN_HTTP_WEBCFG_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_WEBCFG_MAX_FILE  (1u << 20) /* bytes of the web config file */
#define HTTP_WEBCFG_MAX_PEM   (4u << 20) /* bytes of a certificate, key or CA file */
#define HTTP_WEBCFG_MAX_USERS 10000u     /* basic_auth_users entries */

/* TLS protocol versions as on the wire (Go's tls.VersionTLS1x). */
#define HTTP_TLS10 0x0301
#define HTTP_TLS11 0x0302
#define HTTP_TLS12 0x0303
#define HTTP_TLS13 0x0304

typedef enum http_client_auth {
    HTTP_CLIENT_AUTH_NONE = 0,        /* NoClientCert, or unset */
    HTTP_CLIENT_AUTH_REQUEST,         /* RequestClientCert: asked for, not checked */
    HTTP_CLIENT_AUTH_REQUIRE_ANY,     /* RequireAnyClientCert: required, not checked */
    HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN, /* VerifyClientCertIfGiven */
    HTTP_CLIENT_AUTH_REQUIRE_VERIFY,  /* RequireAndVerifyClientCert */
} http_client_auth;

typedef struct http_webcfg_kv {
    char *key; /* NUL-terminated; key_len bytes (a user name may hold any byte) */
    size_t key_len;
    char *value; /* NUL-terminated */
    size_t value_len;
} http_webcfg_kv;

typedef struct http_webcfg {
    /* tls_server_config. Paths are joined with the config file's directory;
     * NULL when unset or empty. */
    char *cert_file;
    char *key_file;
    char *client_ca_file;
    char *client_auth_type;       /* as written; NULL when unset */
    http_client_auth client_auth; /* decided by http_webcfg_check_tls() */
    uint16_t min_version;         /* HTTP_TLS1x; 0 (a null in the file): Go's default, TLS 1.0 */
    uint16_t max_version;         /* HTTP_TLS1x; 0: TLS 1.3 */
    uint16_t *cipher_suites;      /* IANA ids, in file order */
    size_t n_cipher_suites;
    uint16_t *curves; /* IANA group ids (23 P-256, 24 P-384, 25 P-521, 29 X25519) */
    size_t n_curves;
    int prefer_server_cipher_suites;
    /* http_server_config */
    int http2;
    http_webcfg_kv *headers; /* in file order */
    size_t n_headers;
    /* basic_auth_users: user -> bcrypt hash, in file order */
    http_webcfg_kv *users;
    size_t n_users;
    /* Filled by http_webcfg_check_tls() when TLS is configured: the files'
     * contents, NUL-terminated (GnuTLS and libmicrohttpd take them so). */
    char *cert_pem;
    size_t cert_pem_len;
    char *key_pem;
    size_t key_pem_len;
    char *ca_pem; /* NULL without client_ca_file */
    size_t ca_pem_len;
} http_webcfg;

/* Decodes a web config (exporter-toolkit's getConfig). path is the file's
 * name, used only for its directory (NULL: "."). Returns 0 and a new config
 * in *ret, or BASE_E_PARSE (BASE_E_LIMIT, BASE_E_NOMEM) with exporter-
 * toolkit's message in err (no file name in it). */
int http_webcfg_parse(const char *data, size_t len, const char *path, http_webcfg **ret, char *err,
                      size_t errlen);
/* validateUsers: 0, or BASE_E_PARSE with bcrypt.Cost's message. */
int http_webcfg_check_users(const http_webcfg *c, char *err, size_t errlen);
/* Whether the file asks for TLS (any of cert_file, key_file,
 * client_auth_type, client_ca_file set). */
int http_webcfg_tls_enabled(const http_webcfg *c);
/* ConfigToTLSConfig's checks. Reads the certificate, key and CA files into
 * c (cert_pem, key_pem, ca_pem) and sets c->client_auth. 0 also when TLS is
 * not configured; else BASE_E_PARSE / BASE_E_IO / BASE_E_LIMIT with Go's
 * message ("missing cert_file", "failed to load X509KeyPair: open x.pem: no
 * such file or directory", "Invalid ClientAuth: x", ...). */
int http_webcfg_check_tls(http_webcfg *c, char *err, size_t errlen);
/* os.ReadFile with Go's messages ("open P: no such file or directory",
 * "read P: is a directory") and a size limit (BASE_E_LIMIT beyond it).
 * *ret is NUL-terminated, *ret_len bytes; caller frees with free(). */
int http_webcfg_read_file(const char *path, size_t limit, char **ret, size_t *ret_len, char *err,
                          size_t errlen);
/* Reads path (at most HTTP_WEBCFG_MAX_FILE bytes) and parses it: getConfig. */
int http_webcfg_parse_file(const char *path, http_webcfg **ret, char *err, size_t errlen);
/* Reads path and runs parse, check_users and check_tls (exporter-toolkit's
 * Validate, what `promtool check web-config` prints). */
int http_webcfg_load(const char *path, http_webcfg **ret, char *err, size_t errlen);
void http_webcfg_free(http_webcfg *c);

/* The user's hash, or NULL when there is no such user (exact bytes). */
const http_webcfg_kv *http_webcfg_user(const http_webcfg *c, const char *user, size_t len);

/* bcrypt.Cost: 0 and the cost, or BASE_E_PARSE with Go's message
 * ("crypto/bcrypt: hashedSecret too short to be a bcrypted password", ...). */
int http_bcrypt_cost(const char *hash, size_t len, int *ret_cost, char *err, size_t errlen);
/* bcrypt.CompareHashAndPassword through libcrypt (crypt_rn): 1 when pass
 * matches hash, 0 when it does not or the hash is unusable, BASE_E_NOMEM.
 * Any "$2?$" prefix is accepted and computed as "$2b$", as Go does; the
 * hash parts are compared in constant time. Slow by design (the cost). */
int http_bcrypt_verify(const char *hash, size_t hlen, const char *pass, size_t plen);

/* net/http's Request.BasicAuth on an Authorization header value of len
 * bytes: "Basic " (any case) and the standard base64 of "user:password".
 * Returns 1 with the decoded text in *ret_decoded (NUL-terminated, *ret_len
 * bytes, the first ':' at *ret_colon; caller frees with free()), 0 when the
 * header is absent or malformed, BASE_E_NOMEM. */
int http_basic_auth_parse(const char *header, size_t len, char **ret_decoded, size_t *ret_len,
                          size_t *ret_colon);

/* The GnuTLS priority string for the TLS settings (versions, cipher suites,
 * curves) into out. 0, BASE_E_RANGE when no version is left between
 * min_version and max_version (Go then fails every handshake), or
 * BASE_E_LIMIT when out is too small. */
int http_webcfg_priority(const http_webcfg *c, char *out, size_t outlen);

#endif
