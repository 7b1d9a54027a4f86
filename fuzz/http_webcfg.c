/* fuzz/http_webcfg.c -- fuzz target for the web config reader
 * (http_webcfg_parse, src/http/webcfg.c).
 *
 * For every input: parsing returns 0 or a negative BASE_E_* with a
 * non-empty message, never crashes, leaks or runs away (alias bombs, deep
 * nesting and huge maps hit the reader's limits). When the input parses,
 * the config's invariants are checked (versions known or 0, paths joined
 * with the directory, every user and header NUL-terminated at its length,
 * headers only from exporter-toolkit's list), the user and bcrypt checks
 * run (cost parsing only: no hashing), the GnuTLS priority string is built
 * and, the parser being deterministic, parsing the same bytes again gives
 * the same config. No file is read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "http/webcfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

static int str_eq(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_kvs(const http_webcfg_kv *kv, size_t n) {
    for (size_t i = 0; i < n; i++) {
        CHECK(kv[i].key && kv[i].value);
        CHECK(kv[i].key[kv[i].key_len] == 0 && kv[i].value[kv[i].value_len] == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024];
    http_webcfg *c = NULL;
    int rc = http_webcfg_parse((const char *)data, size, "/etc/kelvin/web.yml", &c, err, sizeof err);
    if (rc != 0) {
        CHECK(rc < 0 && err[0]);
        return 0;
    }
    CHECK(c->min_version == 0 || (c->min_version >= HTTP_TLS10 && c->min_version <= HTTP_TLS13));
    CHECK(c->max_version == 0 || (c->max_version >= HTTP_TLS10 && c->max_version <= HTTP_TLS13));
    const char *paths[] = {c->cert_file, c->key_file, c->client_ca_file};
    for (size_t i = 0; i < 3; i++) CHECK(!paths[i] || paths[i][0] == '/');
    check_kvs(c->users, c->n_users);
    check_kvs(c->headers, c->n_headers);
    static const char *const allowed[] = {"Strict-Transport-Security", "X-Content-Type-Options",
                                          "X-Frame-Options", "X-XSS-Protection", "Content-Security-Policy"};
    for (size_t i = 0; i < c->n_headers; i++) {
        int ok = 0;
        for (size_t j = 0; j < 5; j++) ok |= strcmp(c->headers[i].key, allowed[j]) == 0;
        CHECK(ok);
    }
    if (http_webcfg_check_users(c, err, sizeof err) != 0) CHECK(err[0]);
    char prio[1024];
    rc = http_webcfg_priority(c, prio, sizeof prio);
    CHECK(rc == 0 || rc == BASE_E_RANGE || rc == BASE_E_LIMIT);
    if (rc == 0) CHECK(strncmp(prio, "NORMAL:-VERS-ALL:+VERS-TLS1.", 28) == 0);

    http_webcfg *again = NULL;
    CHECK(http_webcfg_parse((const char *)data, size, "/etc/kelvin/web.yml", &again, err, sizeof err) == 0);
    CHECK(str_eq(c->cert_file, again->cert_file) && str_eq(c->key_file, again->key_file) &&
          str_eq(c->client_ca_file, again->client_ca_file) &&
          str_eq(c->client_auth_type, again->client_auth_type));
    CHECK(c->min_version == again->min_version && c->max_version == again->max_version);
    CHECK(c->n_users == again->n_users && c->n_headers == again->n_headers && c->http2 == again->http2);
    CHECK(c->n_cipher_suites == again->n_cipher_suites && c->n_curves == again->n_curves);
    for (size_t i = 0; i < c->n_users; i++) {
        CHECK(c->users[i].key_len == again->users[i].key_len);
        CHECK(memcmp(c->users[i].key, again->users[i].key, c->users[i].key_len) == 0);
    }
    http_webcfg_free(again);
    http_webcfg_free(c);
    return 0;
}
