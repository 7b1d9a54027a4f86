/* api.c -- Prometheus 2.42's HTTP API (web/api/v1): routing, arguments,
 * time parameters, JSON writing, errors and compression. The endpoints
 * live in api_query.c, api_series.c and api_status.c.
 *
 * ROUTING (2.42's router, github.com/prometheus/common/route over
 * httprouter):
 *   - a path that is not an endpoint: 404 "404 page not found\n";
 *   - OPTIONS on any /api/v1/ path: 204 (the API's CORS preflight);
 *   - a method the endpoint does not take (HEAD included): 405
 *     "Method Not Allowed\n" with an Allow header (the endpoint's methods
 *     and OPTIONS, sorted);
 *   - before the first configuration runs: 503 "Service Unavailable";
 *   - then the endpoint; its answer is compressed when Accept-Encoding
 *     names gzip or deflate (zlib), as Prometheus's CompressionHandler does
 *     (the header's comma-separated tokens compared whole, first match).
 * Answers: {"status":"success","data":...[,"warnings":[...]]} with 200, or
 * {"status":"error","errorType":"...","error":"..."} with the type's status
 * (bad_data 400, execution 422, canceled/timeout 503, internal 500,
 * not_found 404, anything else 500), or 204 without a body.
 *
 * ARGUMENTS come from http_form (src/http/form.h): body then URL, as Go's
 * r.Form.
 *
 * TIMES AND DURATIONS are parsed exactly as 2.42 does on Go 1.19 (see
 * server__api_parse_time): a float is rounded to milliseconds; RFC 3339
 * takes 1 or 2 hour digits, up to 9 fractional digits after '.' or ',',
 * 'Z' or an offset of any size; out-of-range floats convert as Go's
 * float-to-int64 does on amd64 (to the minimum int64), and the arithmetic
 * that follows wraps as Go's int64 does, so even absurd times give
 * Prometheus's answers.
 *
 * Not done: CORS headers (http_response carries one extra header; Allow
 * uses it), httprouter's redirects of a trailing slash or a mis-cased
 * path, multipart bodies, remote read. Remote write: api_write.c.
 */
#include <libdeflate.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/err.h"
#include "base/num.h"
#include "base/time.h"
#include "base/utf8.h"
#include "labels/labels.h"
#include "server/server_int.h"

/* ---- JSON --------------------------------------------------------------- */

void server__json_labels(base_buf *b, const labels_set *ls) {
    base_buf_putc(b, '{');
    labels_iter it;
    labels_iter_init(&it, ls);
    base_str name, value;
    int first = 1;
    while (labels_iter_next(&it, &name, &value)) {
        if (!first) base_buf_putc(b, ',');
        first = 0;
        base_buf_json_str(b, name.p, name.n);
        base_buf_putc(b, ':');
        base_buf_json_str(b, value.p, value.n);
    }
    base_buf_putc(b, '}');
}

/* Prometheus's marshalTimestamp, int64 overflow included. */
size_t server__fmt_ts(char out[SERVER_TS_MAX], int64_t t) {
    size_t n = 0;
    if (t < 0) {
        out[n++] = '-';
        t = (int64_t)(0 - (uint64_t)t); /* INT64_MIN stays negative, as Go's -t */
    }
    n += base_fmt_i64(out + n, t / 1000);
    int64_t frac = t % 1000;
    if (frac != 0) {
        out[n++] = '.';
        if (frac < 100) out[n++] = '0';
        if (frac < 10) out[n++] = '0';
        n += base_fmt_i64(out + n, frac);
    }
    return n;
}

/* encoding/json's float64: 'f', or 'e' below 1e-6 and from 1e21 with the
 * exponent's leading zero dropped (e-07 -> e-7). Finite values only. */
void server__json_float(base_buf *b, double v) {
    char tmp[BASE_FMT_DOUBLE_MAX];
    size_t n = base_fmt_double_f(tmp, v);
    if (n >= 4 && tmp[n - 4] == 'e' && tmp[n - 3] == '-' && tmp[n - 2] == '0') {
        tmp[n - 2] = tmp[n - 1];
        n--;
    }
    base_buf_append(b, tmp, n);
}

void server__fmt_float_f(base_buf *b, double v) {
    if (isnan(v)) {
        base_buf_puts(b, "NaN");
        return;
    }
    if (isinf(v)) {
        base_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (signbit(v)) base_buf_putc(b, '-');
    if (v == 0) {
        base_buf_putc(b, '0');
        return;
    }
    char d[20];
    int e;
    int k = base_shortest_digits(fabs(v), d, &e);
    if (e < 0) {
        base_buf_puts(b, "0.");
        for (int i = 0; i < -e - 1; i++) base_buf_putc(b, '0');
        base_buf_append(b, d, (size_t)k);
        return;
    }
    int ilen = e + 1;
    if (k <= ilen) {
        base_buf_append(b, d, (size_t)k);
        for (int i = k; i < ilen; i++) base_buf_putc(b, '0');
    } else {
        base_buf_append(b, d, (size_t)ilen);
        base_buf_putc(b, '.');
        base_buf_append(b, d + ilen, (size_t)(k - ilen));
    }
}

void server__quote(base_buf *b, const char *s, size_t n) {
    labels_quote(b, (base_str){s, n});
}

/* ---- Go's numbers and times ------------------------------------------------ */

/* Go's int64(f) on amd64: truncation; NaN and out of range give MinInt64. */
static int64_t go_f2i(double x) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)x;
}

static int64_t wadd(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}
static int64_t wmul(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* strconv's underscoreOK. */
static int underscore_ok(const char *s, size_t n) {
    char saw = '^';
    size_t i = 0;
    if (n >= 1 && (s[0] == '-' || s[0] == '+')) s++, n--;
    int hex = 0;
    if (n >= 2 && s[0] == '0') {
        char l = (char)(s[1] | 0x20);
        if (l == 'b' || l == 'o' || l == 'x') {
            i = 2;
            saw = '0';
            hex = l == 'x';
        }
    }
    for (; i < n; i++) {
        char c = s[i], l = (char)(c | 0x20);
        if ((c >= '0' && c <= '9') || (hex && l >= 'a' && l <= 'f')) {
            saw = '0';
            continue;
        }
        if (c == '_') {
            if (saw != '0') return 0;
            saw = '_';
            continue;
        }
        if (saw == '_') return 0;
        saw = '!';
    }
    return saw != '_';
}

/* strconv.ParseFloat(s, 64) == nil: base_parse_double plus what Go adds
 * to it (underscores between digits, hexadecimal mantissas with a p
 * exponent). Overflow is an error, as in Go. */
static int go_parse_float(const char *s, size_t n, double *ret) {
    char tmp[128];
    if (n == 0 || n >= sizeof tmp) return base_parse_double(s, n, ret) == 0 ? 0 : -1;
    if (memchr(s, '_', n)) {
        if (!underscore_ok(s, n)) return -1;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (s[i] != '_') tmp[k++] = s[i];
        tmp[k] = '\0';
        s = tmp;
        n = k;
    }
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    if (n - i >= 2 && s[i] == '0' && (s[i + 1] | 0x20) == 'x') {
        /* 0x[hex][.hex]p[+-]dec, at least one mantissa digit */
        size_t j = i + 2, digits = 0;
        while (j < n && ((s[j] >= '0' && s[j] <= '9') || ((s[j] | 0x20) >= 'a' && (s[j] | 0x20) <= 'f')))
            j++, digits++;
        if (j < n && s[j] == '.') {
            j++;
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || ((s[j] | 0x20) >= 'a' && (s[j] | 0x20) <= 'f')))
                j++, digits++;
        }
        if (!digits || j >= n || (s[j] | 0x20) != 'p') return -1;
        j++;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        if (j >= n) return -1;
        for (; j < n; j++)
            if (s[j] < '0' || s[j] > '9') return -1;
        char c[128];
        memcpy(c, s, n);
        c[n] = '\0';
        char *end;
        double v = strtod(c, &end);
        if (end != c + n || isinf(v)) return -1;
        *ret = v;
        return 0;
    }
    return base_parse_double(s, n, ret) == 0 ? 0 : -1;
}

/* time.Unix(sec, nsec), normalised with Go's wrapping arithmetic. */
static api_time go_unix(int64_t sec, int64_t nsec) {
    if (nsec < 0 || nsec >= 1000000000) {
        int64_t k = nsec / 1000000000;
        sec = wadd(sec, k);
        nsec -= k * 1000000000;
        if (nsec < 0) {
            nsec += 1000000000;
            sec = wadd(sec, -1);
        }
    }
    return (api_time){sec, nsec};
}

const api_time server__api_min_time = {-9223309901257974LL, 0};
const api_time server__api_max_time = {9223309901257974LL, 999999999};
static const char min_time_str[] = "-292273086-05-16T16:47:06Z";
static const char max_time_str[] = "292277025-08-18T07:12:54.999999999Z";

int64_t server__api_time_ms(api_time t) {
    return wadd(wmul(t.sec, 1000), t.nsec / 1000000);
}

int64_t server__api_time_engine_ms(api_time t) {
    return wadd(wmul(t.sec, 1000000000), t.nsec) / 1000000;
}

int server__api_time_before(api_time t, api_time u) {
    return t.sec < u.sec || (t.sec == u.sec && t.nsec < u.nsec);
}

static int is_digit(const char *s, size_t n, size_t i) {
    return i < n && s[i] >= '0' && s[i] <= '9';
}

/* Go's getnum: 1 or 2 digits (exactly 2 when fixed). */
static int getnum(const char *s, size_t n, size_t *i, int fixed, int *ret) {
    if (!is_digit(s, n, *i)) return -1;
    if (!is_digit(s, n, *i + 1)) {
        if (fixed) return -1;
        *ret = s[*i] - '0';
        *i += 1;
        return 0;
    }
    *ret = (s[*i] - '0') * 10 + (s[*i + 1] - '0');
    *i += 2;
    return 0;
}

static int leap(int y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* time.Parse(time.RFC3339Nano, s) as Go 1.19 does it. */
static int parse_rfc3339(const char *s, size_t n, api_time *ret) {
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    size_t i = 0;
    int year = 0, month, day, hour, min, sec;
    for (int k = 0; k < 4; k++) {
        if (!is_digit(s, n, i)) return -1;
        year = year * 10 + (s[i++] - '0');
    }
    if (i >= n || s[i++] != '-') return -1;
    if (getnum(s, n, &i, 1, &month) || month < 1 || month > 12) return -1;
    if (i >= n || s[i++] != '-') return -1;
    if (getnum(s, n, &i, 1, &day)) return -1;
    if (i >= n || s[i++] != 'T') return -1;
    if (getnum(s, n, &i, 0, &hour) || hour > 23) return -1;
    if (i >= n || s[i++] != ':') return -1;
    if (getnum(s, n, &i, 1, &min) || min > 59) return -1;
    if (i >= n || s[i++] != ':') return -1;
    if (getnum(s, n, &i, 1, &sec) || sec > 59) return -1;
    int64_t nsec = 0;
    if (i + 1 < n && (s[i] == '.' || s[i] == ',') && is_digit(s, n, i + 1)) {
        i++;
        int k = 0;
        while (k < 9 && is_digit(s, n, i)) {
            nsec = nsec * 10 + (s[i++] - '0');
            k++;
        }
        for (; k < 9; k++) nsec *= 10;
    }
    int64_t offset = 0;
    if (i < n && s[i] == 'Z') {
        i++;
    } else {
        if (n - i < 6 || s[i + 3] != ':') return -1;
        int hh, mm;
        size_t j = i + 1;
        if (getnum(s, n, &j, 1, &hh) || j != i + 3) return -1;
        j = i + 4;
        if (getnum(s, n, &j, 1, &mm) || j != i + 6) return -1;
        offset = ((int64_t)hh * 60 + mm) * 60;
        if (s[i] == '-')
            offset = -offset;
        else if (s[i] != '+')
            return -1;
        i += 6;
    }
    if (i != n) return -1;
    int dim = mdays[month - 1] + (month == 2 && leap(year));
    if (day < 1 || day > dim) return -1;
    int64_t t = days_from_civil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec - offset;
    *ret = (api_time){t, nsec};
    return 0;
}

int server__api_parse_time(base_str s, api_time *ret) {
    double f;
    if (s.n && go_parse_float(s.p, s.n, &f) == 0) {
        double ip, frac;
        if (isinf(f)) {
            ip = f;
            frac = NAN;
        } else {
            frac = modf(f, &ip);
        }
        frac = round(frac * 1000) / 1000;
        *ret = go_unix(go_f2i(ip), go_f2i(frac * 1e9));
        return 0;
    }
    if (parse_rfc3339(s.p, s.n, ret) == 0) return 0;
    if (base_str_eqc(s, min_time_str)) {
        *ret = server__api_min_time;
        return 0;
    }
    if (base_str_eqc(s, max_time_str)) {
        *ret = server__api_max_time;
        return 0;
    }
    return -1;
}

int server__api_parse_duration(base_str s, int64_t *ret_ns, char *msg, size_t msglen) {
    double d;
    base_buf q;
    base_buf_init(&q, 0);
    server__quote(&q, s.p ? s.p : "", s.n);
    int rc = -1;
    if (s.n && go_parse_float(s.p, s.n, &d) == 0) {
        double ts = d * 1e9;
        if (ts > 9223372036854775807.0 || ts < -9223372036854775808.0) {
            snprintf(msg, msglen, "cannot parse %s to a valid duration. It overflows int64", q.data);
        } else {
            *ret_ns = go_f2i(ts);
            rc = 0;
        }
    } else {
        int64_t ms;
        char tmp[64];
        if (s.n && s.n < sizeof tmp) {
            memcpy(tmp, s.p, s.n);
            tmp[s.n] = '\0';
        }
        if (s.n && s.n < sizeof tmp && memchr(s.p, '\0', s.n) == NULL &&
            base_parse_duration_ms(tmp, &ms) == 0 && ms <= INT64_MAX / 1000000) {
            *ret_ns = ms * 1000000;
            rc = 0;
        } else {
            snprintf(msg, msglen, "cannot parse %s to a valid duration", q.err ? "\"\"" : q.data);
        }
    }
    base_buf_free(&q);
    return rc;
}

int server__api_time_param(api_ctx *c, const char *name, api_time def, api_time *ret) {
    base_str v = http_form_get(&c->form, name);
    if (v.n == 0) {
        *ret = def;
        return 0;
    }
    if (server__api_parse_time(v, ret) == 0) return 0;
    base_buf q;
    base_buf_init(&q, 0);
    server__quote(&q, v.p, v.n);
    char msg[512];
    snprintf(msg, sizeof msg, "Invalid time value for '%s': cannot parse %s to a valid timestamp", name,
             q.err ? "\"\"" : q.data);
    base_buf_free(&q);
    server__api_invalid_param(c, name, msg);
    return -1;
}

/* ---- answers --------------------------------------------------------------- */

int server__api_status(const char *type) {
    if (strcmp(type, "bad_data") == 0) return 400;
    if (strcmp(type, "execution") == 0) return 422;
    if (strcmp(type, "canceled") == 0 || strcmp(type, "timeout") == 0) return 503;
    if (strcmp(type, "not_found") == 0) return 404;
    return 500;
}

void server__api_bad_data(api_ctx *c, const char *prefix, const base_buf *msg) {
    base_buf m;
    base_buf_init(&m, 0);
    base_buf_puts(&m, prefix);
    base_buf_append(&m, msg->data ? msg->data : "", msg->len);
    server__api_error(c, 400, "bad_data", m.data ? m.data : "", m.len);
    base_buf_free(&m);
}

void server__api_error(api_ctx *c, int status, const char *type, const char *msg, size_t len) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, "{\"status\":\"error\",\"errorType\":");
    base_buf_json_str(&b, type, strlen(type));
    base_buf_puts(&b, ",\"error\":");
    base_buf_json_str(&b, msg ? msg : "", msg ? len : 0);
    base_buf_putc(&b, '}');
    server__api_send(c, status, &b);
}

void server__api_errorf(api_ctx *c, const char *type, const char *fmt, ...) {
    base_buf m;
    base_buf_init(&m, 0);
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&m, fmt, ap);
    va_end(ap);
    if (base_buf_err(&m))
        server__api_error(c, 500, "internal", "out of memory", strlen("out of memory"));
    else
        server__api_error(c, server__api_status(type), type, m.data ? m.data : "", m.len);
    base_buf_free(&m);
}

void server__api_invalid_param(api_ctx *c, const char *param, const char *msg) {
    server__api_errorf(c, "bad_data", "invalid parameter \"%s\": %s", param, msg);
}

void server__api_begin(base_buf *b) {
    base_buf_puts(b, "{\"status\":\"success\",\"data\":");
}

void server__api_end(api_ctx *c, base_buf *b) {
    base_buf_putc(b, '}');
    server__api_send(c, 200, b);
}

void server__api_no_content(api_ctx *c) {
    http_respond_copy(c->resp, 204, NULL, "", 0);
}

/* Prometheus's CompressionHandler's choice: 1 gzip, 2 deflate (zlib), 0. */
static int encoding_of(const char *ae) {
    if (!ae) return 0;
    while (1) {
        const char *comma = strchr(ae, ',');
        size_t n = comma ? (size_t)(comma - ae) : strlen(ae);
        const char *p = ae;
        while (n && (*p == ' ' || *p == '\t')) p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (n == 4 && memcmp(p, "gzip", 4) == 0) return 1;
        if (n == 7 && memcmp(p, "deflate", 7) == 0) return 2;
        if (!comma) return 0;
        ae = comma + 1;
    }
}

int server__api_compressed(const api_ctx *c) {
    return encoding_of(c->req->accept_encoding) != 0;
}

void server__send_encoded(const http_request *req, http_response *resp, int status, const char *ct,
                          base_buf *b) {
    int enc = encoding_of(req->accept_encoding);
    if (!enc || base_buf_err(b)) {
        http_respond_buf(resp, status, ct, b);
        return;
    }
    struct libdeflate_compressor *z = libdeflate_alloc_compressor(1);
    size_t bound =
        z ? (enc == 1 ? libdeflate_gzip_compress_bound(z, b->len) : libdeflate_zlib_compress_bound(z, b->len))
          : 0;
    char *out = z ? malloc(bound ? bound : 1) : NULL;
    size_t n = 0;
    if (out)
        n = enc == 1 ? libdeflate_gzip_compress(z, b->data ? b->data : "", b->len, out, bound)
                     : libdeflate_zlib_compress(z, b->data ? b->data : "", b->len, out, bound);
    if (z) libdeflate_free_compressor(z);
    if (!n) {
        free(out);
        http_respond_buf(resp, status, ct, b);
        return;
    }
    base_buf_free(b);
    http_respond_owned(resp, status, ct, enc == 1 ? "gzip" : "deflate", out, n, free, out);
}

void server__api_send(api_ctx *c, int status, base_buf *b) {
    server__send_encoded(c->req, c->resp, status, SERVER_CT_JSON, b);
}

/* ---- durations as model.Duration prints them ------------------------------ */

void server__fmt_duration(base_buf *b, int64_t ms) {
    if (ms == 0) {
        base_buf_puts(b, "0s");
        return;
    }
    static const struct {
        const char *unit;
        int64_t mult;
        int exact;
    } u[] = {{"y", 365LL * 24 * 3600 * 1000, 1},
             {"w", 7LL * 24 * 3600 * 1000, 1},
             {"d", 24LL * 3600 * 1000, 0},
             {"h", 3600LL * 1000, 0},
             {"m", 60LL * 1000, 0},
             {"s", 1000, 0},
             {"ms", 1, 0}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        if (u[i].exact && ms % u[i].mult != 0) continue;
        int64_t v = ms / u[i].mult;
        if (v > 0) {
            base_buf_printf(b, "%lld%s", (long long)v, u[i].unit);
            ms -= v * u[i].mult;
        }
    }
}

/* ---- dispatch -------------------------------------------------------------- */

enum { M_GET = 1, M_POST = 2, M_PUT = 4, M_DELETE = 8 };

typedef enum {
    R_QUERY,
    R_QUERY_RANGE,
    R_EXEMPLARS,
    R_LABELS,
    R_LABEL_VALUES,
    R_SERIES,
    R_TARGETS,
    R_TARGETS_METADATA,
    R_ALERTMANAGERS,
    R_METADATA,
    R_CONFIG,
    R_RUNTIMEINFO,
    R_BUILDINFO,
    R_FLAGS,
    R_TSDB,
    R_WALREPLAY,
    R_ALERTS,
    R_RULES,
    R_DELETE_SERIES,
    R_CLEAN_TOMBSTONES,
    R_SNAPSHOT,
    R_WRITE,
} route_id;

static const struct {
    const char *path;
    route_id id;
    unsigned methods;
} routes[] = {
    {"/query", R_QUERY, M_GET | M_POST},
    {"/query_range", R_QUERY_RANGE, M_GET | M_POST},
    {"/query_exemplars", R_EXEMPLARS, M_GET | M_POST},
    {"/labels", R_LABELS, M_GET | M_POST},
    {"/series", R_SERIES, M_GET | M_POST | M_DELETE},
    {"/targets", R_TARGETS, M_GET},
    {"/targets/metadata", R_TARGETS_METADATA, M_GET},
    {"/alertmanagers", R_ALERTMANAGERS, M_GET},
    {"/metadata", R_METADATA, M_GET},
    {"/status/config", R_CONFIG, M_GET},
    {"/status/runtimeinfo", R_RUNTIMEINFO, M_GET},
    {"/status/buildinfo", R_BUILDINFO, M_GET},
    {"/status/flags", R_FLAGS, M_GET},
    {"/status/tsdb", R_TSDB, M_GET},
    {"/status/walreplay", R_WALREPLAY, M_GET},
    {"/alerts", R_ALERTS, M_GET},
    {"/rules", R_RULES, M_GET},
    {"/admin/tsdb/delete_series", R_DELETE_SERIES, M_POST | M_PUT},
    {"/admin/tsdb/clean_tombstones", R_CLEAN_TOMBSTONES, M_POST | M_PUT},
    {"/admin/tsdb/snapshot", R_SNAPSHOT, M_POST | M_PUT},
    {"/write", R_WRITE, M_POST},
};

static unsigned method_bit(const char *m) {
    if (strcmp(m, "GET") == 0) return M_GET;
    if (strcmp(m, "POST") == 0) return M_POST;
    if (strcmp(m, "PUT") == 0) return M_PUT;
    if (strcmp(m, "DELETE") == 0) return M_DELETE;
    return 0;
}

static void method_not_allowed(http_response *resp, unsigned methods) {
    /* httprouter's Allow header: the endpoint's methods and OPTIONS, sorted */
    const char *allow = "GET, OPTIONS";
    if (methods == (M_GET | M_POST))
        allow = "GET, OPTIONS, POST";
    else if (methods == (M_GET | M_POST | M_DELETE))
        allow = "DELETE, GET, OPTIONS, POST";
    else if (methods == (M_POST | M_PUT))
        allow = "OPTIONS, POST, PUT";
    else if (methods == M_POST)
        allow = "OPTIONS, POST";
    http_respond_text(resp, 405, "Method Not Allowed\n");
    (void)http_response_add_header(resp, "Allow", allow);
}

void server__api(server *s, const http_request *req, http_response *resp) {
    const char *p = req->path + 7; /* after /api/v1 */
    int found = -1;
    base_str label_name = {NULL, 0};
    unsigned methods = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(p, routes[i].path) == 0) {
            found = (int)i;
            methods = routes[i].methods;
            break;
        }
    if (found < 0 && strncmp(p, "/label/", 7) == 0) {
        const char *name = p + 7, *slash = strchr(name, '/');
        if (slash && strcmp(slash, "/values") == 0 && slash > name) {
            label_name = (base_str){name, (size_t)(slash - name)};
            methods = M_GET;
        }
    }
    if (strcmp(req->method, "OPTIONS") == 0) {
        if (!s->ready) {
            http_respond_text(resp, 503, "Service Unavailable");
            return;
        }
        http_respond_copy(resp, 204, NULL, "", 0);
        return;
    }
    if (found < 0 && !label_name.p) {
        http_respond_text(resp, 404, "404 page not found\n");
        return;
    }
    if (!(method_bit(req->method) & methods)) {
        method_not_allowed(resp, methods);
        return;
    }
    if (!s->ready) {
        http_respond_text(resp, 503, "Service Unavailable");
        return;
    }
    if (found >= 0 && routes[found].id == R_WRITE) { /* a protobuf body, not a form */
        server__api_write(s, req, resp);
        return;
    }
    api_ctx c = {.s = s, .req = req, .resp = resp};
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    c.now_sec = now.tv_sec;
    c.now_nsec = now.tv_nsec;
    http_form_init(&c.form);
    int rc = http_form_from_request(&c.form, req);
    if (rc && rc != BASE_E_PARSE) {
        http_form_free(&c.form);
        if (rc == BASE_E_LIMIT)
            server__api_errorf(&c, "bad_data", "too many arguments");
        else
            http_respond_text(resp, 500, "out of memory\n");
        return;
    }
    if (label_name.p) {
        server__api_label_values(&c, label_name);
        http_form_free(&c.form);
        return;
    }
    switch (routes[found].id) {
    case R_QUERY: server__api_query(&c); break;
    case R_QUERY_RANGE: server__api_query_range(&c); break;
    case R_EXEMPLARS: server__api_query_exemplars(&c); break;
    case R_LABELS: server__api_labels(&c); break;
    case R_LABEL_VALUES: break; /* handled above */
    case R_SERIES:
        if (strcmp(req->method, "DELETE") == 0)
            server__api_errorf(&c, "internal", "not implemented");
        else
            server__api_series(&c);
        break;
    case R_TARGETS: server__api_targets(&c); break;
    case R_TARGETS_METADATA: server__api_targets_metadata(&c); break;
    case R_ALERTMANAGERS: server__api_alertmanagers(&c); break;
    case R_METADATA: server__api_metadata(&c); break;
    case R_CONFIG: server__api_status_config(&c); break;
    case R_RUNTIMEINFO: server__api_status_runtimeinfo(&c); break;
    case R_BUILDINFO: server__api_status_buildinfo(&c); break;
    case R_FLAGS: server__api_status_flags(&c); break;
    case R_TSDB: server__api_status_tsdb(&c); break;
    case R_WALREPLAY: server__api_status_walreplay(&c); break;
    case R_ALERTS: server__api_alerts(&c); break;
    case R_RULES: server__api_rules(&c); break;
    case R_DELETE_SERIES: server__api_delete_series(&c); break;
    case R_CLEAN_TOMBSTONES: server__api_clean_tombstones(&c); break;
    case R_SNAPSHOT: server__api_snapshot(&c); break;
    case R_WRITE: break; /* handled above */
    }
    http_form_free(&c.form);
}
