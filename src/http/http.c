/* http.c -- libmicrohttpd glue, with Prometheus's web config (TLS, basic
 * auth, response headers); see http.h and webcfg.h.
 *
 * Request lifecycle in MHD's access-handler protocol:
 *   first call  (*con_cls == NULL): allocate a req_state holding a reference
 *                to the current web config; with basic_auth_users, check the
 *                credentials now; return MHD_YES;
 *   upload calls (*upload_data_size > 0): append to the body up to
 *                max_body, else remember "too large" and discard the rest
 *                (all of it when the credentials failed);
 *   final call  (*upload_data_size == 0): queue the 401 when the
 *                credentials failed (no handler runs), else run the handler
 *                once; the response carries the configured headers;
 *                req_state (and its reference) is freed in the completion
 *                callback.
 *
 * Web config (when opts->web_config_file is set). Its state -- the decoded
 * file and, with TLS, GnuTLS credentials and priorities -- is an immutable,
 * reference-counted web_state. exporter-toolkit reads the file again for
 * every request and every TLS handshake; here every request and every new
 * connection stats the file (and the certificate, key and CA files it
 * names) and loads it again when one changed:
 *
 *     cur --(a file's stat changed, loads)--> new state; cur released
 *     cur --(loads with an error)--> cur kept; the error logged once; the
 *           files' stats remembered, so it is not retried until one changes
 *
 * Users, headers, certificates, keys, client CAs, client auth type, TLS
 * versions, ciphers and curves all apply to the next request or handshake.
 * Turning TLS on or off needs a restart (the daemon is started with or
 * without MHD_USE_TLS): such a file is refused like a broken one. Unlike
 * exporter-toolkit, which answers 500 while its file is broken, the last
 * good config keeps serving.
 *
 * TLS: libmicrohttpd's GnuTLS support. MHD creates each connection's GnuTLS
 * session; the connection-started notification (before any handshake byte
 * is read) sets the current state's priorities, credentials and
 * certificate-request mode on it and holds a reference to the state until
 * the connection closes. Client certificates are checked in a verify
 * callback on the credentials, per client_auth_type (Go's semantics:
 * RequireAny takes any certificate, the Verify modes check the chain
 * against client_ca_file for the client-auth key purpose).
 *
 * Basic auth (exporter-toolkit's webHandler): a wrong or missing credential
 * gets 401, "WWW-Authenticate: Basic" and "Unauthorized\n". bcrypt runs one
 * at a time (a mutex, as bcryptMtx); an unknown user is checked against a
 * fixed dummy hash so timing does not tell users apart; results are cached
 * (100 entries, random eviction) under SHA-256(user, hash, password), so
 * the cache holds no password, and a changed hash misses.
 *
 * Invariants: web_state.refs is guarded by wc_mu; a state with GnuTLS
 * objects is freed only after it has been unreferenced for a while (MHD
 * deinitialises a session after the close notification), or at stop.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/num.h"
#include "http/webcfg.h"

#define WEB_MAX_FILES   4               /* the config, cert, key and CA files */
#define WEB_DEAD_NS     (10000000000LL) /* a released TLS state lives on this long */
#define AUTH_CACHE_SIZE 100             /* exporter-toolkit's cacheSize */
/* A streamed body's block size (MHD writes each chunk into the
 * connection's memory pool, 32 KiB by default, so chunks are that size). */
#define STREAM_BLOCK    (256 * 1024)

/* A bcrypt hash of "fakepassword" (exporter-toolkit's): what an unknown
 * user's password is checked against, so that it costs the same time. */
static const char DUMMY_HASH[] = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

/* What a file looked like when it was read. File times are coarse (a
 * clock tick), so a file rewritten within the tick of its last change, at
 * the same size and inode, stats the same: while its mtime is that recent
 * ("racy", as git calls it) its contents are compared too. */
typedef struct file_sig {
    char *path;
    int err; /* stat's errno, or 0 */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
    struct timespec taken;    /* CLOCK_REALTIME of the stat */
    unsigned char digest[32]; /* SHA-256 of the contents read, when has_digest */
    int has_digest;
} file_sig;

typedef struct web_state {
    int refs; /* guarded by http_server.wc_mu */
    http_webcfg *cfg;
    int tls;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio; /* NULL with TLS: no version allowed, handshakes refused */
    gnutls_certificate_request_t req;
    int no_ca_names; /* the system's trust store: do not list its CAs to clients */
    file_sig sigs[WEB_MAX_FILES];
    size_t nsigs;
    struct web_state *next_dead;
    int64_t died_ns;
} web_state;

typedef struct auth_entry {
    unsigned char key[32];
    unsigned char ok;
} auth_entry;

struct http_server {
    struct MHD_Daemon *mhd;
    int fd;
    unsigned port;
    size_t max_body;
    http_handler handler;
    void *ctx;
    /* web config */
    char *wc_path;               /* NULL: none */
    int tls;                     /* the daemon speaks TLS (fixed at start) */
    pthread_mutex_t wc_mu;       /* cur, refs, bad, dead */
    web_state *cur;              /* the config in force */
    file_sig bad[WEB_MAX_FILES]; /* the files as they were when loading failed */
    size_t nbad;
    web_state *dead; /* released TLS states waiting to be freed */
    char *mhd_key, *mhd_cert;
    pthread_mutex_t bcrypt_mu;
    pthread_mutex_t cache_mu;
    auth_entry cache[AUTH_CACHE_SIZE];
    size_t ncache;
    uint64_t rng;
};

typedef struct req_state {
    base_buf body;
    int too_large;
    int unauthorized; /* basic auth failed: the upload is discarded, the answer is 401 */
    web_state *web;   /* a reference, or NULL */
} req_state;

int http_parse_address(const char *addr, struct sockaddr_storage *ret, unsigned *ret_len, char *err,
                       size_t errlen) {
    if (!addr) addr = "";
    const char *colon = strrchr(addr, ':');
    if (!colon) {
        snprintf(err, errlen, "address %s: missing port", addr);
        return BASE_E_PARSE;
    }
    uint64_t port;
    if (base_parse_u64(colon + 1, strlen(colon + 1), &port) || port > 65535) {
        snprintf(err, errlen, "address %s: invalid port", addr);
        return BASE_E_PARSE;
    }
    char host[256];
    size_t hl = (size_t)(colon - addr);
    if (hl >= sizeof host) {
        snprintf(err, errlen, "address %s: host too long", addr);
        return BASE_E_PARSE;
    }
    memcpy(host, addr, hl);
    host[hl] = '\0';
    memset(ret, 0, sizeof *ret);
    if (hl == 0 || strcmp(host, "[::]") == 0) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons((uint16_t)port);
        *ret_len = sizeof *a;
        return 0;
    }
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1) {
            snprintf(err, errlen, "address %s: invalid IPv6 address", addr);
            return BASE_E_PARSE;
        }
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *ret_len = sizeof *a;
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ret;
    if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
        snprintf(err, errlen, "address %s: invalid IPv4 address (use an IP, not a host name)", addr);
        return BASE_E_PARSE;
    }
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    *ret_len = sizeof *a;
    return 0;
}

static int open_listener(const char *addr, unsigned *ret_port, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    unsigned len;
    int rc = http_parse_address(addr, &ss, &len, err, errlen);
    if (rc) return rc;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 && ss.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr[0] == 0) {
        /* No IPv6 on this host: ":port" falls back to IPv4 any. */
        struct sockaddr_in6 six = *(struct sockaddr_in6 *)&ss;
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        memset(&ss, 0, sizeof ss);
        a->sin_family = AF_INET;
        a->sin_port = six.sin6_port;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        len = sizeof *a;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    }
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return BASE_E_IO;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 128) != 0) {
        snprintf(err, errlen, "listen on %s: %s", addr, strerror(errno));
        close(fd);
        return BASE_E_IO;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &bl);
    *ret_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

/* ---- web config state ---------------------------------------------------- */

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sig_take(file_sig *f, const char *path) {
    struct stat st;
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    clock_gettime(CLOCK_REALTIME, &f->taken);
    if (stat(path, &st) != 0) {
        f->err = errno ? errno : EIO;
        return;
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->size = st.st_size;
    f->mtim = st.st_mtim;
    f->ctim = st.st_ctim;
}

static void sig_digest(file_sig *f, const void *data, size_t n) {
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, n, f->digest) == 0) f->has_digest = 1;
}

static void sigs_free(file_sig *f, size_t n) {
    for (size_t i = 0; i < n; i++) free(f[i].path);
}

/* Whether t is less than 2 s after the file's last change. */
static int sig_racy(const file_sig *f, const struct timespec *t) {
    int64_t d = ((int64_t)t->tv_sec - f->mtim.tv_sec) * 1000000000LL + (t->tv_nsec - f->mtim.tv_nsec);
    int64_t dc = ((int64_t)t->tv_sec - f->ctim.tv_sec) * 1000000000LL + (t->tv_nsec - f->ctim.tv_nsec);
    return !f->err && (d < 2000000000LL || dc < 2000000000LL);
}

/* Whether every file still is as recorded (a NULL path: memory ran out
 * when it was recorded; treat it as changed). A racy file without a digest
 * (it was never read) counts as unchanged. */
static int sigs_unchanged(file_sig *f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!f[i].path) return 0;
        file_sig now;
        sig_take(&now, f[i].path);
        int same = now.err == f[i].err && now.dev == f[i].dev && now.ino == f[i].ino &&
                   now.size == f[i].size && now.mtim.tv_sec == f[i].mtim.tv_sec &&
                   now.mtim.tv_nsec == f[i].mtim.tv_nsec && now.ctim.tv_sec == f[i].ctim.tv_sec &&
                   now.ctim.tv_nsec == f[i].ctim.tv_nsec;
        if (same && f[i].has_digest && sig_racy(&f[i], &f[i].taken)) {
            char *data = NULL;
            size_t len = 0;
            char e[8];
            unsigned char d[32];
            if (http_webcfg_read_file(f[i].path, HTTP_WEBCFG_MAX_PEM, &data, &len, e, sizeof e) != 0 ||
                gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) != 0 || memcmp(d, f[i].digest, 32) != 0) {
                same = 0;
            } else if (!sig_racy(&f[i], &now.taken)) {
                f[i].taken = now.taken; /* settled: the stat alone tells from now on */
            }
            if (data) gnutls_memset(data, 0, len);
            free(data);
        }
        free(now.path);
        if (!same) return 0;
    }
    return 1;
}

static void state_free(web_state *w) {
    if (!w) return;
    if (w->prio) gnutls_priority_deinit(w->prio);
    if (w->cred) gnutls_certificate_free_credentials(w->cred);
    http_webcfg_free(w->cfg);
    sigs_free(w->sigs, w->nsigs);
    free(w);
}

/* Client certificate checks, one function per client_auth_type (the
 * credentials of a state carry the one for its type). Non-zero ends the
 * handshake. */
static int has_peer_cert(gnutls_session_t s) {
    unsigned n = 0;
    return gnutls_certificate_get_peers(s, &n) != NULL && n > 0;
}

static int verify_chain(gnutls_session_t s) {
    gnutls_typed_vdata_st purpose = {
        .type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, .size = 0};
    unsigned status = 0;
    if (gnutls_certificate_verify_peers(s, &purpose, 1, &status) < 0 || status != 0) return -1;
    return 0;
}

static int verify_request(gnutls_session_t s) {
    (void)s;
    return 0;
}
static int verify_require_any(gnutls_session_t s) {
    return has_peer_cert(s) ? 0 : -1;
}
static int verify_if_given(gnutls_session_t s) {
    return has_peer_cert(s) ? verify_chain(s) : 0;
}
static int verify_require(gnutls_session_t s) {
    return has_peer_cert(s) ? verify_chain(s) : -1;
}

/* The TLS half of a state: credentials, trust, priorities. */
static int state_tls(web_state *w, char *err, size_t errlen) {
    http_webcfg *c = w->cfg;
    int rc = gnutls_certificate_allocate_credentials(&w->cred);
    if (rc < 0) return base_errf(err, errlen, BASE_E_NOMEM, "TLS credentials: %s", gnutls_strerror(rc));
    gnutls_datum_t cert = {(unsigned char *)c->cert_pem, (unsigned)c->cert_pem_len};
    gnutls_datum_t key = {(unsigned char *)c->key_pem, (unsigned)c->key_pem_len};
    rc = gnutls_certificate_set_x509_key_mem2(w->cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0)
        return base_errf(err, errlen, BASE_E_PARSE, "failed to load X509KeyPair: %s", gnutls_strerror(rc));
    int verifies = c->client_auth == HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN ||
                   c->client_auth == HTTP_CLIENT_AUTH_REQUIRE_VERIFY;
    if (c->ca_pem) {
        /* as Go's AppendCertsFromPEM: what does not parse is skipped */
        gnutls_datum_t ca = {(unsigned char *)c->ca_pem, (unsigned)c->ca_pem_len};
        (void)gnutls_certificate_set_x509_trust_mem(w->cred, &ca, GNUTLS_X509_FMT_PEM);
    } else if (verifies) {
        /* Go verifies against the system's roots when ClientCAs is nil */
        (void)gnutls_certificate_set_x509_system_trust(w->cred);
        w->no_ca_names = 1;
    }
    static int (*const VERIFY[])(gnutls_session_t) = {
        [HTTP_CLIENT_AUTH_NONE] = verify_request,
        [HTTP_CLIENT_AUTH_REQUEST] = verify_request,
        [HTTP_CLIENT_AUTH_REQUIRE_ANY] = verify_require_any,
        [HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN] = verify_if_given,
        [HTTP_CLIENT_AUTH_REQUIRE_VERIFY] = verify_require,
    };
    gnutls_certificate_set_verify_function(w->cred, VERIFY[c->client_auth]);
    switch (c->client_auth) {
    case HTTP_CLIENT_AUTH_NONE: w->req = GNUTLS_CERT_IGNORE; break;
    case HTTP_CLIENT_AUTH_REQUEST:
    case HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN: w->req = GNUTLS_CERT_REQUEST; break;
    default: w->req = GNUTLS_CERT_REQUIRE; break;
    }
    char prio[1024];
    rc = http_webcfg_priority(c, prio, sizeof prio);
    if (rc == BASE_E_RANGE) return 0; /* min_version above max_version: Go fails every handshake */
    if (rc) return base_errf(err, errlen, rc, "TLS settings: %s", base_strerror(rc));
    const char *where = NULL;
    rc = gnutls_priority_init2(&w->prio, prio, &where, 0);
    if (rc < 0) {
        w->prio = NULL;
        return base_errf(err, errlen, BASE_E_PARSE, "TLS settings (GnuTLS priority %s): %s", prio,
                         gnutls_strerror(rc));
    }
    return 0;
}

/* Loads the web config file into a new state (refs 1). On error, bad
 * gets the records of the files read so far (the caller remembers them). */
static int state_build(const char *path, web_state **ret, file_sig *bad, size_t *ret_nbad, char *err,
                       size_t errlen) {
    web_state *w = calloc(1, sizeof *w);
    if (!w) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    w->refs = 1;
    sig_take(&w->sigs[w->nsigs++], path);
    char *data = NULL;
    size_t len = 0;
    int rc = http_webcfg_read_file(path, HTTP_WEBCFG_MAX_FILE, &data, &len, err, errlen);
    if (!rc) {
        sig_digest(&w->sigs[0], data, len);
        rc = http_webcfg_parse(data, len, path, &w->cfg, err, errlen);
        free(data);
    }
    if (!rc) rc = http_webcfg_check_users(w->cfg, err, errlen);
    if (!rc) {
        w->tls = http_webcfg_tls_enabled(w->cfg);
        const char *files[] = {w->cfg->cert_file, w->cfg->key_file, w->cfg->client_ca_file};
        for (size_t i = 0; i < 3; i++)
            if (files[i]) sig_take(&w->sigs[w->nsigs++], files[i]);
        rc = http_webcfg_check_tls(w->cfg, err, errlen);
        if (!rc && w->tls) {
            const http_webcfg *c = w->cfg;
            size_t k = 1;
            sig_digest(&w->sigs[k++], c->cert_pem, c->cert_pem_len);
            sig_digest(&w->sigs[k++], c->key_pem, c->key_pem_len);
            if (c->client_ca_file) sig_digest(&w->sigs[k], c->ca_pem, c->ca_pem_len);
        }
    }
    if (!rc && w->tls) rc = state_tls(w, err, errlen);
    if (rc) {
        memcpy(bad, w->sigs, w->nsigs * sizeof *bad);
        *ret_nbad = w->nsigs;
        w->nsigs = 0;
        state_free(w);
        return rc;
    }
    *ret = w;
    return 0;
}

/* Drops a reference; wc_mu held. */
static void state_release_locked(http_server *s, web_state *w) {
    if (!w || --w->refs > 0) return;
    if (!w->cred) {
        state_free(w);
        return;
    }
    w->died_ns = mono_ns();
    w->next_dead = s->dead;
    s->dead = w;
}

static void state_release(http_server *s, web_state *w) {
    if (!w) return;
    pthread_mutex_lock(&s->wc_mu);
    state_release_locked(s, w);
    pthread_mutex_unlock(&s->wc_mu);
}

/* Loads the file again when one of its files changed; wc_mu held. */
static void maybe_reload_locked(http_server *s) {
    int64_t now = mono_ns();
    for (web_state **pp = &s->dead; *pp;) {
        web_state *w = *pp;
        if (now - w->died_ns > WEB_DEAD_NS) {
            *pp = w->next_dead;
            state_free(w);
        } else {
            pp = &w->next_dead;
        }
    }
    if (sigs_unchanged(s->cur->sigs, s->cur->nsigs)) return;
    if (s->nbad && sigs_unchanged(s->bad, s->nbad)) return; /* the broken file, already reported */
    file_sig bad[WEB_MAX_FILES];
    size_t nbad = 0;
    web_state *w = NULL;
    char err[1024];
    int rc = state_build(s->wc_path, &w, bad, &nbad, err, sizeof err);
    if (!rc && w->tls != s->tls) {
        snprintf(err, sizeof err, "TLS cannot be turned %s while running: restart to apply this file",
                 s->tls ? "off" : "on");
        memcpy(bad, w->sigs, w->nsigs * sizeof *bad);
        nbad = w->nsigs;
        w->nsigs = 0;
        state_free(w);
        rc = BASE_E_UNSUPPORTED;
    }
    sigs_free(s->bad, s->nbad);
    s->nbad = 0;
    if (rc) {
        memcpy(s->bad, bad, nbad * sizeof *bad);
        s->nbad = nbad;
        base_log(BASE_LOG_ERROR, "Unable to reload the web configuration file, keeping the previous one",
                 "file", s->wc_path, "err", err, NULL);
        return;
    }
    state_release_locked(s, s->cur);
    s->cur = w;
    base_log(BASE_LOG_INFO, "Reloaded the web configuration file", "file", s->wc_path, "tls",
             w->tls ? "true" : "false", NULL);
}

/* The config in force, with a reference for the caller; NULL without one. */
static web_state *state_acquire(http_server *s) {
    if (!s->wc_path) return NULL;
    pthread_mutex_lock(&s->wc_mu);
    maybe_reload_locked(s);
    web_state *w = s->cur;
    w->refs++;
    pthread_mutex_unlock(&s->wc_mu);
    return w;
}

/* MHD_OPTION_NOTIFY_CONNECTION (TLS daemons only): the new connection's
 * GnuTLS session gets the current state's settings before its handshake. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    http_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        state_release(s, *socket_context);
        *socket_context = NULL;
        return;
    }
    web_state *w = state_acquire(s);
    *socket_context = w;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
    if (!w || !session || !w->prio) {
        /* no TLS version allowed (min_version > max_version): as Go, no handshake succeeds */
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (fi) shutdown(fi->connect_fd, SHUT_RDWR);
        return;
    }
    gnutls_priority_set(session, w->prio);
    gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, w->cred);
    gnutls_certificate_server_set_request(session, w->req);
    if (w->no_ca_names) gnutls_certificate_send_x509_rdn_sequence(session, 1);
}

/* ---- basic auth ------------------------------------------------------------ */

static uint64_t rng_next(http_server *s) {
    uint64_t x = s->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return s->rng = x;
}

/* Constant-time lookup of a cache key: 1 and the result, or 0. */
static int cache_get(http_server *s, const unsigned char key[32], int *ret_ok) {
    int found = 0, ok = 0;
    pthread_mutex_lock(&s->cache_mu);
    for (size_t i = 0; i < s->ncache; i++) {
        unsigned char d = 0;
        for (size_t j = 0; j < 32; j++) d |= (unsigned char)(s->cache[i].key[j] ^ key[j]);
        int hit = d == 0;
        found |= hit;
        ok |= hit & s->cache[i].ok;
    }
    pthread_mutex_unlock(&s->cache_mu);
    *ret_ok = ok;
    return found;
}

static void cache_set(http_server *s, const unsigned char key[32], int ok) {
    pthread_mutex_lock(&s->cache_mu);
    if (s->ncache >= AUTH_CACHE_SIZE) {
        /* exporter-toolkit's makeRoom: a tenth (and one) at random */
        size_t del = s->ncache / 10;
        for (size_t k = 0; k <= del && s->ncache; k++) {
            size_t i = (size_t)(rng_next(s) % s->ncache);
            s->cache[i] = s->cache[--s->ncache];
        }
    }
    memcpy(s->cache[s->ncache].key, key, 32);
    s->cache[s->ncache].ok = (unsigned char)(ok != 0);
    s->ncache++;
    pthread_mutex_unlock(&s->cache_mu);
}

static void hash_part(gnutls_hash_hd_t h, const char *p, size_t n) {
    uint64_t len = n;
    gnutls_hash(h, &len, sizeof len);
    gnutls_hash(h, p, n);
}

/* webHandler's check: 1 when the request carries a listed user and the
 * password matching its hash. */
static int authorized(http_server *s, const http_webcfg *c, struct MHD_Connection *conn) {
    const char *hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    char *dec = NULL;
    size_t len = 0, colon = 0;
    if (!hdr || http_basic_auth_parse(hdr, strlen(hdr), &dec, &len, &colon) != 1) return 0;
    const char *user = dec, *pass = dec + colon + 1;
    size_t ulen = colon, plen = len - colon - 1;
    const http_webcfg_kv *u = http_webcfg_user(c, user, ulen);
    const char *hash = u ? u->value : DUMMY_HASH;
    size_t hlen = u ? u->value_len : sizeof DUMMY_HASH - 1;
    unsigned char key[32];
    gnutls_hash_hd_t h;
    int ok = 0;
    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) == 0) {
        hash_part(h, user, ulen);
        hash_part(h, hash, hlen);
        hash_part(h, pass, plen);
        gnutls_hash_deinit(h, key);
        if (!cache_get(s, key, &ok)) {
            pthread_mutex_lock(&s->bcrypt_mu);
            int r = http_bcrypt_verify(hash, hlen, pass, plen);
            pthread_mutex_unlock(&s->bcrypt_mu);
            ok = r == 1;
            if (r >= 0) cache_set(s, key, ok);
        }
    }
    gnutls_memset(dec, 0, len);
    free(dec);
    return ok && u != NULL;
}

/* ---- responses ------------------------------------------------------------- */

static void free_static(void *arg) {
    (void)arg;
}

/* Does the response set header name itself (one of its extra headers)? */
static int sets_header(const http_response *r, const char *name) {
    for (size_t i = 0; r && i < HTTP_MAX_EXTRA_HEADERS && r->extra[i].name; i++)
        if (strcasecmp(r->extra[i].name, name) == 0) return 1;
    return 0;
}

/* The configured headers (http_server_config.headers), except those the
 * response sets itself (its extra headers and skip: as Go's Header().Set
 * after the config's). */
static void add_web_headers(struct MHD_Response *mr, const web_state *w, const http_response *r,
                            const char *skip) {
    if (!w) return;
    for (size_t i = 0; i < w->cfg->n_headers; i++) {
        const http_webcfg_kv *h = &w->cfg->headers[i];
        if ((skip && strcasecmp(h->key, skip) == 0) || sets_header(r, h->key)) continue;
        MHD_add_response_header(mr, h->key, h->value);
    }
}

/* A streamed body's MHD callbacks. */
typedef struct stream_cls {
    long (*fill)(void *arg, char *buf, size_t max);
    void (*free_fn)(void *arg);
    void *arg;
} stream_cls;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_cls *sc = cls;
    long n = sc->fill(sc->arg, buf, max);
    if (n > 0) return (ssize_t)n;
    return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls) {
    stream_cls *sc = cls;
    if (sc->free_fn) sc->free_fn(sc->arg);
    free(sc);
}

static enum MHD_Result queue(struct MHD_Connection *conn, http_response *r, const web_state *w) {
    struct MHD_Response *mr;
    if (r->fill) {
        stream_cls *sc = malloc(sizeof *sc);
        mr = NULL;
        if (sc) {
            *sc = (stream_cls){r->fill, r->free_fn, r->free_arg};
            mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, sc,
                                                   stream_free);
            if (!mr) free(sc);
        }
    } else if (r->free_fn)
        mr = MHD_create_response_from_buffer_with_free_callback_cls(r->len, (void *)r->body, r->free_fn,
                                                                    r->free_arg);
    else
        mr = MHD_create_response_from_buffer(r->len, (void *)r->body, MHD_RESPMEM_MUST_COPY);
    if (!mr) {
        if (r->free_fn) r->free_fn(r->free_arg);
        return MHD_NO;
    }
    add_web_headers(mr, w, r, NULL);
    if (r->content_type) MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    if (r->content_encoding)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_ENCODING, r->content_encoding);
    for (size_t i = 0; i < HTTP_MAX_EXTRA_HEADERS && r->extra[i].name; i++)
        MHD_add_response_header(mr, r->extra[i].name, r->extra[i].value ? r->extra[i].value : "");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

/* http.Error(w, "Unauthorized", 401) after WWW-Authenticate: Basic. */
static enum MHD_Result queue_unauthorized(struct MHD_Connection *conn, const web_state *w) {
    static const char body[] = "Unauthorized\n";
    struct MHD_Response *mr =
        MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!mr) return MHD_NO;
    add_web_headers(mr, w, NULL, "X-Content-Type-Options");
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_UNAUTHORIZED, mr);
    MHD_destroy_response(mr);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    http_server *s = cls;
    req_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st) return MHD_NO;
        base_buf_init(&st->body, s->max_body);
        *con_cls = st;
        st->web = state_acquire(s);
        if (st->web && st->web->cfg->n_users && !authorized(s, st->web->cfg, conn)) st->unauthorized = 1;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!st->too_large && !st->unauthorized) {
            base_buf_append(&st->body, upload_data, *upload_data_size);
            if (st->body.err) st->too_large = 1;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (st->unauthorized) return queue_unauthorized(conn, st->web);
    http_response r = {.status = 500, .content_type = "text/plain; charset=utf-8"};
    if (st->too_large) {
        char msg[96];
        int n = snprintf(msg, sizeof msg, "request body larger than the limit of %zu bytes\n", s->max_body);
        http_respond_copy(&r, 413, "text/plain; charset=utf-8", msg, (size_t)n);
        return queue(conn, &r, st->web);
    }
    http_request req = {
        .method = method,
        .path = url,
        .accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
        .accept_encoding =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING),
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = st->body.len ? st->body.data : NULL,
        .body_len = st->body.len,
        .conn = conn,
    };
    s->handler(s->ctx, &req, &r);
    return queue(conn, &r, st->web);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)conn;
    (void)toe;
    http_server *s = cls;
    req_state *st = *con_cls;
    if (st) {
        state_release(s, st->web);
        base_buf_free(&st->body);
        free(st);
        *con_cls = NULL;
    }
}

/* ---- start and stop -------------------------------------------------------- */

static void server_free(http_server *s) {
    if (s->wc_path) {
        state_release_locked(s, s->cur);
        while (s->dead) {
            web_state *w = s->dead;
            s->dead = w->next_dead;
            state_free(w);
        }
        sigs_free(s->bad, s->nbad);
        pthread_mutex_destroy(&s->wc_mu);
        pthread_mutex_destroy(&s->bcrypt_mu);
        pthread_mutex_destroy(&s->cache_mu);
        gnutls_memset(s->cache, 0, sizeof s->cache);
    }
    if (s->mhd_key) gnutls_memset(s->mhd_key, 0, strlen(s->mhd_key));
    free(s->mhd_key);
    free(s->mhd_cert);
    free(s->wc_path);
    free(s);
}

/* Reads the web config at start: a bad file stops the start (exporter-
 * toolkit's Serve returns the error, and Prometheus exits). */
static int web_start(http_server *s, const char *path, char *err, size_t errlen) {
    s->wc_path = strdup(path);
    if (!s->wc_path) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    pthread_mutex_init(&s->wc_mu, NULL);
    pthread_mutex_init(&s->bcrypt_mu, NULL);
    pthread_mutex_init(&s->cache_mu, NULL);
    s->rng = (uint64_t)mono_ns() ^ ((uint64_t)(uintptr_t)s << 17) ^ 0x9e3779b97f4a7c15ULL;
    if (!s->rng) s->rng = 1;
    file_sig bad[WEB_MAX_FILES];
    size_t nbad = 0;
    char e[1024];
    int rc = state_build(path, &s->cur, bad, &nbad, e, sizeof e);
    if (rc) {
        sigs_free(bad, nbad);
        return base_errf(err, errlen, rc, "web configuration file %s: %s", path, e);
    }
    s->tls = s->cur->tls;
    if (s->tls) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
            return base_errf(err, errlen, BASE_E_UNSUPPORTED,
                             "web configuration file %s: TLS asked for, but "
                             "libmicrohttpd was built without it",
                             path);
        s->mhd_key = strdup(s->cur->cfg->key_pem);
        s->mhd_cert = strdup(s->cur->cfg->cert_pem);
        if (!s->mhd_key || !s->mhd_cert) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    return 0;
}

int http_server_start(const http_server_opts *opts, http_handler handler, void *ctx, http_server **ret,
                      char *err, size_t errlen) {
    http_server *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->handler = handler;
    s->ctx = ctx;
    s->max_body = opts->max_body ? opts->max_body : (1u << 20);
    s->fd = -1;
    if (opts->web_config_file) {
        int rc = web_start(s, opts->web_config_file, err, errlen);
        if (rc) {
            server_free(s);
            return rc;
        }
    }
    int fd = open_listener(opts->listen_address, &s->port, err, errlen);
    if (fd < 0) {
        server_free(s);
        return fd;
    }
    s->fd = fd;
    unsigned threads = opts->threads ? opts->threads : 2;
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->mhd_key},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, s->mhd_cert},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
        {MHD_OPTION_END, 0, NULL},
    };
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
    if (s->tls) flags |= MHD_USE_TLS;
    s->mhd =
        MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
                         MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                         MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s ? opts->timeout_s : 30u,
                         MHD_OPTION_CONNECTION_LIMIT, opts->max_connections ? opts->max_connections : 256u,
                         MHD_OPTION_ARRAY, s->tls ? tls_opts : tls_opts + 3, MHD_OPTION_END);
    if (!s->mhd) {
        snprintf(err, errlen, "libmicrohttpd failed to start on %s%s", opts->listen_address,
                 s->tls ? " with TLS" : "");
        close(fd);
        server_free(s);
        return BASE_E_IO;
    }
    if (s->wc_path)
        base_log(BASE_LOG_INFO, s->tls ? "TLS is enabled." : "TLS is disabled.", "http2", "false", "address",
                 opts->listen_address, "web_config_file", s->wc_path, NULL);
    *ret = s;
    return 0;
}

unsigned http_server_port(const http_server *s) {
    return s->port;
}

void http_server_stop(http_server *s) {
    if (!s) return;
    MHD_stop_daemon(s->mhd);
    close(s->fd);
    server_free(s);
}

const char *http_request_arg(const http_request *req, const char *name) {
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_request_header(const http_request *req, const char *name) {
    if (!req || !req->conn || !name) return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

int http_response_add_header(http_response *resp, const char *name, const char *value) {
    for (size_t i = 0; i < HTTP_MAX_EXTRA_HEADERS; i++) {
        if (resp->extra[i].name) continue;
        resp->extra[i] = (http_header){name, value};
        return 0;
    }
    return BASE_E_LIMIT;
}

void http_respond_copy(http_response *resp, int status, const char *content_type, const void *body,
                       size_t len) {
    void *p = malloc(len ? len : 1);
    resp->status = status;
    resp->content_type = content_type;
    if (!p) {
        resp->status = 500;
        resp->body = "";
        resp->len = 0;
        resp->free_fn = NULL;
        return;
    }
    if (len) memcpy(p, body, len);
    resp->fill = NULL;
    resp->body = p;
    resp->len = len;
    resp->free_fn = free;
    resp->free_arg = p;
}

void http_respond_owned(http_response *resp, int status, const char *content_type,
                        const char *content_encoding, const void *body, size_t len, void (*free_fn)(void *),
                        void *free_arg) {
    resp->status = status;
    resp->content_type = content_type;
    resp->content_encoding = content_encoding;
    resp->fill = NULL;
    resp->body = body;
    resp->len = len;
    resp->free_fn = free_fn;
    resp->free_arg = free_arg;
}

void http_respond_buf(http_response *resp, int status, const char *content_type, base_buf *b) {
    if (base_buf_err(b)) {
        base_buf_free(b);
        http_respond_text(resp, 500, "out of memory\n");
        return;
    }
    size_t len;
    char *data = base_buf_steal(b, &len);
    http_respond_owned(resp, status, content_type, NULL, data ? data : "", len, data ? free : NULL, data);
}

void http_respond_stream(http_response *resp, int status, const char *content_type,
                         long (*fill)(void *arg, char *buf, size_t max), void *arg, void (*free_fn)(void *)) {
    resp->status = status;
    resp->content_type = content_type;
    resp->content_encoding = NULL;
    resp->body = NULL;
    resp->len = 0;
    resp->fill = fill;
    resp->free_fn = free_fn;
    resp->free_arg = arg;
}

void http_respond_text(http_response *resp, int status, const char *text) {
    resp->status = status;
    resp->content_type = "text/plain; charset=utf-8";
    resp->fill = NULL;
    resp->body = text;
    resp->len = strlen(text);
    resp->free_fn = free_static;
    resp->free_arg = NULL;
}

/* Finds the q value of a media range or coding token in an Accept-style
 * header: -1 if absent, else 0..1000 (q in thousandths). */
static int token_q(const char *hdr, const char *token, int prefix_match) {
    if (!hdr) return -1;
    size_t tl = strlen(token);
    int best = -1;
    const char *p = hdr;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *start = p;
        while (*p && *p != ',' && *p != ';') p++;
        const char *end = p;
        while (end > start && end[-1] == ' ') end--;
        int q = 1000;
        while (*p == ';') {
            p++;
            while (*p == ' ') p++;
            if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
                p += 2;
                double v = 0;
                const char *qs = p;
                while (*p && *p != ',' && *p != ';' && *p != ' ') p++;
                if (base_parse_double(qs, (size_t)(p - qs), &v) == 0 && v >= 0 && v <= 1)
                    q = (int)(v * 1000 + 0.5);
            } else {
                while (*p && *p != ',' && *p != ';') p++;
            }
        }
        size_t n = (size_t)(end - start);
        if ((n == tl || (prefix_match && n > tl)) && strncasecmp(start, token, tl) == 0 && q > best) best = q;
        while (*p && *p != ',') p++;
    }
    return best;
}

int http_accepts_gzip(const char *accept_encoding) {
    return token_q(accept_encoding, "gzip", 0) > 0;
}

int http_prefers_openmetrics(const char *accept) {
    int om = token_q(accept, "application/openmetrics-text", 0);
    if (om <= 0) return 0;
    int text = token_q(accept, "text/plain", 0);
    if (text < 0) text = token_q(accept, "text/*", 0);
    if (text < 0) text = token_q(accept, "*/*", 0);
    return om >= text;
}
