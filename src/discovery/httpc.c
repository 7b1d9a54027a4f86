/* httpc.c -- cfg_http onto a libcurl handle (httpc.h). */
#include "discovery/httpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"

#define CRED_FILE_MAX (64 << 10)

/* A credentials file's content without surrounding blanks, appended. */
static int read_cred(const char *path, base_buf *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return base_errf(err, errlen, BASE_E_IO, "unable to read %s", path);
    char *b = malloc(CRED_FILE_MAX + 1);
    if (!b) {
        fclose(f);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    size_t n = fread(b, 1, CRED_FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > CRED_FILE_MAX) {
        free(b);
        return base_errf(err, errlen, bad ? BASE_E_IO : BASE_E_LIMIT, "unable to read %s", path);
    }
    size_t s = 0;
    while (s < n && strchr(" \t\r\n\v\f", b[s])) s++;
    while (n > s && strchr(" \t\r\n\v\f", b[n - 1])) n--;
    base_buf_append(out, b + s, n - s);
    free(b);
    return base_buf_err(out);
}

static long tls_version(const char *v) {
    if (!v || !v[0]) return CURL_SSLVERSION_DEFAULT;
    if (!strcmp(v, "TLS10")) return CURL_SSLVERSION_TLSv1_0;
    if (!strcmp(v, "TLS11")) return CURL_SSLVERSION_TLSv1_1;
    if (!strcmp(v, "TLS12")) return CURL_SSLVERSION_TLSv1_2;
    if (!strcmp(v, "TLS13")) return CURL_SSLVERSION_TLSv1_3;
    return CURL_SSLVERSION_DEFAULT;
}

int disc_httpc_apply(CURL *e, const cfg_http *h, struct curl_slist **hdrs, char *err, size_t errlen) {
    int rc = 0;
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, h->follow_redirects ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     h->enable_http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_PROXY, h->proxy_url && h->proxy_url[0] ? h->proxy_url : "");
    if (h->tls.ca_file && h->tls.ca_file[0]) curl_easy_setopt(e, CURLOPT_CAINFO, h->tls.ca_file);
    if (h->tls.cert_file && h->tls.cert_file[0]) curl_easy_setopt(e, CURLOPT_SSLCERT, h->tls.cert_file);
    if (h->tls.key_file && h->tls.key_file[0]) curl_easy_setopt(e, CURLOPT_SSLKEY, h->tls.key_file);
    if (h->tls.insecure_skip_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(e, CURLOPT_SSLVERSION, tls_version(h->tls.min_version));
    if (h->has_authorization) {
        base_buf hb;
        base_buf_init(&hb, 0);
        base_buf_puts(&hb, "Authorization: ");
        base_buf_puts(&hb, h->auth_type && h->auth_type[0] ? h->auth_type : "Bearer");
        base_buf_putc(&hb, ' ');
        if (h->auth_credentials_file && h->auth_credentials_file[0])
            rc = read_cred(h->auth_credentials_file, &hb, err, errlen);
        else if (h->auth_credentials)
            base_buf_puts(&hb, h->auth_credentials);
        struct curl_slist *l = NULL;
        if (!rc && !base_buf_err(&hb) && !(l = curl_slist_append(*hdrs, hb.data)))
            rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        if (!rc && base_buf_err(&hb)) rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        if (l) *hdrs = l;
        base_buf_free(&hb);
    }
    if (!rc && h->has_basic_auth) {
        base_buf pw;
        base_buf_init(&pw, 0);
        if (h->basic_auth_password_file && h->basic_auth_password_file[0])
            rc = read_cred(h->basic_auth_password_file, &pw, err, errlen);
        else if (h->basic_auth_password)
            base_buf_puts(&pw, h->basic_auth_password);
        if (!rc) {
            curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
            curl_easy_setopt(e, CURLOPT_USERNAME, h->basic_auth_username ? h->basic_auth_username : "");
            curl_easy_setopt(e, CURLOPT_PASSWORD, pw.data ? pw.data : "");
        }
        base_buf_free(&pw);
    }
    return rc;
}
