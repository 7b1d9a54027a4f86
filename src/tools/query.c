/* query.c -- `kelvin query`: PromQL against a server's HTTP API, from the
 * shell (promtool query instant / range).
 *
 *   kelvin query [--server URL] [--json] [--time T] EXPR
 *   kelvin query range [--server URL] [--json] [--start T] [--end T] [--step D] EXPR
 *
 * The request is promtool's (client_golang's): a POST form to
 * /api/v1/query or /api/v1/query_range; times are sent as float seconds.
 * Defaults as promtool: --time now; --end now, --start five minutes before
 * --end, --step max(floor((end - start) / 250 s), 1 s). Times are Unix
 * seconds (fractions allowed) or RFC 3339; durations Prometheus's ("15s")
 * or seconds.
 *
 * OUTPUT. --json prints the server's answer as it came. Otherwise a table:
 *   instant vector  a header, then `metric  value` per series
 *   range vector    `metric  value@time  value@time ...` per series
 *   scalar, string  the value
 * with metric as Prometheus prints one (up{instance="a", job="b"}) and the
 * columns two spaces apart at least.
 *
 * ERRORS and exit codes as promtool's: "query error: <errorType>: <error>"
 * (an HTTP error without the API's JSON: "query error: client_error:
 * client error: 404 (detail: ...)"), "error parsing evaluation time: ...",
 * "start time is not before end time", exit 1; usage errors exit 2.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/num.h"
#include "base/time.h"
#include "labels/labels.h"
#include "tools/tools_int.h"

int tools_query_main(int argc, char **argv);

#define MAX_ANSWER ((size_t)1 << 30)

static void usage(FILE *out) {
    fprintf(out,
            "usage: kelvin query [--server URL] [--json] [--time T] EXPR\n"
            "       kelvin query range [--server URL] [--json] [--start T] [--end T] [--step D] EXPR\n\n"
            "Runs a PromQL query against a server's HTTP API and prints the answer as a table\n"
            "(or, with --json, as the API's JSON).\n\n"
            "Flags:\n"
            "  --server URL  the server (default http://localhost:9090)\n"
            "  --json        print the API's answer as it is\n"
            "  --time T      evaluation time of an instant query (Unix seconds or RFC 3339; default now)\n"
            "  --start T     range start (default: --end minus 5m)\n"
            "  --end T       range end (default now)\n"
            "  --step D      range step (duration or seconds; default (end - start) / 250, at least 1s)\n");
}

int tools__parse_time(const char *s, double *ret) {
    size_t n = strlen(s);
    double v;
    if (n && base_parse_double(s, n, &v) == 0 && isfinite(v)) {
        *ret = v;
        return 0;
    }
    struct tm tm = {0};
    int y, mo, d, h, mi, se, used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &used) != 6 || used < 19) return -1;
    const char *p = s + used;
    double frac = 0;
    if (*p == '.' || *p == ',') {
        double scale = 0.1;
        p++;
        if (*p < '0' || *p > '9') return -1;
        for (int k = 0; *p >= '0' && *p <= '9'; p++, k++) {
            if (k >= 9) return -1;
            frac += (*p - '0') * scale;
            scale /= 10;
        }
    }
    long off = 0;
    if (*p == 'Z') {
        p++;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2) return -1;
        off = (oh * 60L + om) * 60L * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    time_t t = timegm(&tm);
    struct tm back;
    gmtime_r(&t, &back);
    if (back.tm_mday != d) return -1; /* 2023-02-30 */
    *ret = (double)t - (double)off + frac;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Float seconds as client_golang's formatTime sends them. */
static void fmt_time(char *out, size_t n, double t) {
    char tmp[BASE_FMT_DOUBLE_MAX];
    base_fmt_double_f(tmp, round(t * 1e3) / 1e3);
    snprintf(out, n, "%s", tmp);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
    base_buf *b = arg;
    base_buf_append(b, p, size * nmemb);
    return base_buf_err(b) ? 0 : size * nmemb;
}

/* POSTs the form; 0 with the status and body, or -1 with a message. */
static int post(const char *url, const char *form, long *ret_status, base_buf *body, char *err,
                size_t errlen) {
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "cannot create an HTTP client");
        return -1;
    }
    char eb[CURL_ERROR_SIZE] = "";
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/x-www-form-urlencoded");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, eb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L); /* promtool's 2 minutes */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kelvin-query/" KELVIN_VERSION);
    CURLcode rc = curl_easy_perform(c);
    int ret = 0;
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "Post \"%s\": %s", url, eb[0] ? eb : curl_easy_strerror(rc));
        ret = -1;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_status);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return ret;
}

static void append_escaped(base_buf *form, const char *name, const char *value) {
    CURL *c = curl_easy_init();
    char *e = c ? curl_easy_escape(c, value, 0) : NULL;
    if (form->len) base_buf_putc(form, '&');
    base_buf_puts(form, name);
    base_buf_putc(form, '=');
    base_buf_puts(form, e ? e : "");
    if (!e) form->err = -1;
    curl_free(e);
    if (c) curl_easy_cleanup(c);
}

/* name{a="b", c="d"} from the API's metric object (keys sorted by Go). */
static void metric_text(base_buf *b, json_t *metric) {
    json_t *name = json_object_get(metric, "__name__");
    if (json_is_string(name)) base_buf_append(b, json_string_value(name), json_string_length(name));
    size_t n = json_object_size(metric) - (json_is_string(name) ? 1 : 0);
    if (n == 0 && json_is_string(name)) return;
    base_buf_putc(b, '{');
    const char **keys = calloc(n + 1, sizeof *keys);
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(metric, key, v) {
        if (strcmp(key, "__name__") != 0 && k < n) keys[k++] = key;
    }
    for (size_t i = 1; i < k; i++) /* insertion sort: label counts are small */
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    for (size_t i = 0; i < k; i++) {
        json_t *val = json_object_get(metric, keys[i]);
        if (i) base_buf_puts(b, ", ");
        base_buf_puts(b, keys[i]);
        base_buf_putc(b, '=');
        labels_quote(b, (base_str){json_string_value(val), json_string_length(val)});
    }
    free(keys);
    base_buf_putc(b, '}');
}

/* A point [t, "v"] as "v@t" (t as Prometheus writes it). */
static void point_text(base_buf *b, json_t *pt) {
    json_t *t = json_array_get(pt, 0), *v = json_array_get(pt, 1);
    base_buf_puts(b, json_is_string(v) ? json_string_value(v) : "?");
    base_buf_putc(b, '@');
    double ts = json_number_value(t);
    long long ms = llround(ts * 1000);
    if (ms < 0) {
        base_buf_putc(b, '-');
        ms = -ms;
    }
    base_buf_printf(b, "%lld", ms / 1000);
    if (ms % 1000) base_buf_printf(b, ".%03lld", ms % 1000);
}

static int print_table(json_t *data) {
    const char *type = json_string_value(json_object_get(data, "resultType"));
    json_t *res = json_object_get(data, "result");
    if (!type || !res) {
        fprintf(stderr, "query error: bad_response: no result in the answer\n");
        return 1;
    }
    if (strcmp(type, "scalar") == 0 || strcmp(type, "string") == 0) {
        json_t *v = json_array_get(res, 1);
        printf("%s\n", json_is_string(v) ? json_string_value(v) : "");
        return 0;
    }
    size_t n = json_array_size(res);
    base_buf *names = calloc(n ? n : 1, sizeof *names);
    size_t width = strlen("SERIES");
    for (size_t i = 0; i < n; i++) {
        base_buf_init(&names[i], 0);
        metric_text(&names[i], json_object_get(json_array_get(res, i), "metric"));
        if (names[i].len > width) width = names[i].len;
    }
    int vec = strcmp(type, "vector") == 0;
    if (vec && n) printf("%-*s  VALUE\n", (int)width, "SERIES");
    base_buf line;
    base_buf_init(&line, 0);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(res, i);
        base_buf_reset(&line);
        if (vec) {
            json_t *v = json_array_get(json_object_get(s, "value"), 1);
            base_buf_puts(&line, json_is_string(v) ? json_string_value(v) : "");
        } else {
            json_t *vals = json_object_get(s, "values");
            for (size_t k = 0; k < json_array_size(vals); k++) {
                if (k) base_buf_puts(&line, "  ");
                point_text(&line, json_array_get(vals, k));
            }
        }
        printf("%-*.*s  %s\n", (int)width, (int)names[i].len, names[i].data ? names[i].data : "",
               line.data ? line.data : "");
        base_buf_free(&names[i]);
    }
    base_buf_free(&line);
    free(names);
    return 0;
}

/* Sends the query and prints the answer; the exit status. */
static int run(const char *server, const char *path, base_buf *form, int json_out) {
    if (base_buf_err(form)) {
        fprintf(stderr, "query error: out of memory\n");
        return 1;
    }
    char url[2048], err[2300];
    size_t sl = strlen(server);
    while (sl && server[sl - 1] == '/') sl--;
    snprintf(url, sizeof url, "%.*s%s", (int)sl, server, path);
    base_buf body;
    base_buf_init(&body, MAX_ANSWER);
    long status = 0;
    if (post(url, form->data ? form->data : "", &status, &body, err, sizeof err) != 0) {
        fprintf(stderr, "query error: %s\n", err);
        base_buf_free(&body);
        return 1;
    }
    json_error_t je;
    json_t *doc = json_loadb(body.data ? body.data : "", body.len, 0, &je);
    int api_status = status == 400 || status == 422 || status == 503;
    if ((status / 100 != 2 && !api_status) || !doc) {
        const char *type = status / 100 == 4   ? "client_error"
                           : status / 100 == 5 ? "server_error"
                                               : "bad_response";
        char msg[64];
        if (status / 100 == 4 || status / 100 == 5)
            snprintf(msg, sizeof msg, "%s error: %ld", status / 100 == 4 ? "client" : "server", status);
        else if (!doc)
            snprintf(msg, sizeof msg, "readObjectStart: expect { or n");
        else
            snprintf(msg, sizeof msg, "bad response code %ld", status);
        size_t dl = body.len;
        while (dl && (body.data[dl - 1] == '\n' || body.data[dl - 1] == ' ')) dl--;
        if (dl)
            fprintf(stderr, "query error: %s: %s (detail: %.*s)\n", type, msg, (int)dl, body.data);
        else
            fprintf(stderr, "query error: %s: %s\n", type, msg);
        json_decref(doc);
        base_buf_free(&body);
        return 1;
    }
    const char *st = json_string_value(json_object_get(doc, "status"));
    int rc = 0;
    if (!st || strcmp(st, "success") != 0) {
        const char *et = json_string_value(json_object_get(doc, "errorType"));
        const char *em = json_string_value(json_object_get(doc, "error"));
        fprintf(stderr, "query error: %s: %s\n", et ? et : "", em ? em : "");
        rc = 1;
    } else if (json_out) {
        printf("%.*s\n", (int)body.len, body.data);
    } else {
        rc = print_table(json_object_get(doc, "data"));
    }
    json_decref(doc);
    base_buf_free(&body);
    return rc;
}

int tools_query_main(int argc, char **argv) {
    int range = argc > 1 && strcmp(argv[1], "range") == 0;
    if (argc > 1 && strcmp(argv[1], "instant") == 0) range = 0, argc--, argv++;
    if (range) argc--, argv++;
    const char *server = "http://localhost:9090", *tm = NULL, *start = NULL, *end = NULL, *step = NULL,
               *expr = NULL;
    int json_out = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json_out = 1;
            continue;
        }
        if (strcmp(a, "--") == 0 && i + 1 < argc && !expr) {
            expr = argv[++i];
            continue;
        }
        static const char *const names[] = {"server", "time", "start", "end", "step"};
        const char **vars[] = {&server, &tm, &start, &end, &step};
        int matched = 0;
        for (int k = 0; k < 5 && !matched && a[0] == '-' && a[1] == '-'; k++) {
            size_t nl = strlen(names[k]);
            if (strncmp(a + 2, names[k], nl) != 0) continue;
            if (a[2 + nl] == '=') {
                *vars[k] = a + 3 + nl;
                matched = 1;
            } else if (a[2 + nl] == '\0' && i + 1 < argc) {
                *vars[k] = argv[++i];
                matched = 1;
            }
        }
        if (matched) continue;
        if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "kelvin query: unknown flag %s\n", a);
            usage(stderr);
            return 2;
        }
        if (expr) {
            fprintf(stderr, "kelvin query: unexpected argument %s\n", a);
            usage(stderr);
            return 2;
        }
        expr = a;
    }
    if (!expr || (!range && (start || end || step)) || (range && tm)) {
        usage(stderr);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    base_buf form;
    base_buf_init(&form, 0);
    append_escaped(&form, "query", expr);
    char ts[64];
    int rc;
    if (!range) {
        double t = now_s();
        if (tm && tools__parse_time(tm, &t) != 0) {
            fprintf(stderr, "error parsing evaluation time: cannot parse \"%s\" to a valid timestamp\n", tm);
            rc = 1;
            goto out;
        }
        fmt_time(ts, sizeof ts, t);
        append_escaped(&form, "time", ts);
        rc = run(server, "/api/v1/query", &form, json_out);
    } else {
        double e = now_s(), s;
        if (end && tools__parse_time(end, &e) != 0) {
            fprintf(stderr, "error parsing end time: cannot parse \"%s\" to a valid timestamp\n", end);
            rc = 1;
            goto out;
        }
        s = e - 300;
        if (start && tools__parse_time(start, &s) != 0) {
            fprintf(stderr, "error parsing start time: cannot parse \"%s\" to a valid timestamp\n", start);
            rc = 1;
            goto out;
        }
        if (!(s < e)) {
            fprintf(stderr, "start time is not before end time\n");
            rc = 1;
            goto out;
        }
        char stepbuf[64];
        if (step) {
            double sv;
            int64_t ms;
            if (!(base_parse_double(step, strlen(step), &sv) == 0 && sv > 0) &&
                !(base_parse_duration_ms(step, &ms) == 0 && ms > 0)) {
                fprintf(stderr, "kelvin query: invalid --step %s (a duration such as 15s, or seconds)\n",
                        step);
                rc = 2;
                goto out;
            }
            snprintf(stepbuf, sizeof stepbuf, "%s", step);
        } else {
            double res = floor((e - s) / 250);
            snprintf(stepbuf, sizeof stepbuf, "%.0f", res < 1 ? 1 : res);
        }
        fmt_time(ts, sizeof ts, s);
        append_escaped(&form, "start", ts);
        fmt_time(ts, sizeof ts, e);
        append_escaped(&form, "end", ts);
        append_escaped(&form, "step", stepbuf);
        rc = run(server, "/api/v1/query_range", &form, json_out);
    }
out:
    base_buf_free(&form);
    curl_global_cleanup();
    return rc;
}
