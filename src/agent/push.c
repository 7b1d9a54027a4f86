/* push.c -- the Pushgateway-compatible push endpoint (see push.h for what
 * it does on the wire).
 *
 * Design. A request goes through four steps; only the last two hold the
 * store's mutex:
 *
 *   parse_path()   grouping key: job + labels, base64 values decoded,
 *                  sorted by name                       -> 404/405/400
 *   build_batch()  the body, parsed with the expo pull parser into metric
 *                  families the way the Pushgateway's parser (Go expfmt
 *                  TextParser) builds them: samples join the family of
 *                  their name, or the summary/histogram whose _sum/_count/
 *                  _bucket they are; a summary or histogram metric is one
 *                  per label set without quantile/le; then sanitize():
 *                  grouping labels set, instance="" added, labels sorted
 *                  and rendered                         -> 400/413/415
 *   check()        the Pushgateway's consistency check, against the state
 *                  the push would produce                -> 400 + failure time
 *   apply()        PUT drops the group's families, POST those it replaces;
 *                  the batch's families join the group and the name index
 *
 * Memory. Everything a push brings lives in one batch arena; a batch is
 * referenced by its families still in use and freed when the last one is
 * replaced or deleted. Groups own their grouping labels (a small arena)
 * and an array of family pointers sorted by name. The name index maps a
 * family name to every family of that name in any group (what the
 * Pushgateway merges into one family when it serves /metrics), so the
 * type and suffix checks are O(1) and the duplicate check is O(series of
 * that name).
 *
 * Invariants (1, 3 and 4 asserted by check_invariants() in debug builds):
 *  1. Every family in a group is in the index entry of its name, once;
 *     all families of an index entry have the same type.
 *  2. No two alive families produce the same series (name + labels), and
 *     no family collides with another's _count/_sum/_bucket names.
 *  3. batch->refs == number of families of the batch held by groups.
 *  4. p->nseries == sum of group->nseries == sum of metrics held.
 *  5. Strings handed to an mset are copied into the mset's arena.
 *
 * Deliberate differences from Pushgateway 1.5, each one refusing what it
 * would accept or serve badly: names the agent serves itself are refused;
 * an `le` grouping label on a histogram is refused (it would serve two
 * `le` labels); grouping or label values with invalid UTF-8 or NUL bytes
 * are refused up front (it stores such a group and then fails every later
 * push); protobuf bodies get 415; OpenMetrics bodies are parsed as
 * OpenMetrics; of differing HELP texts the most recent push's is served
 * (it picks one at random); limits (push.h). Client errors are answered,
 * not logged: the response carries the message.
 */
#include "agent/push.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/catalog.h"
#include "base/arena.h"
#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"
#include "expo/parse.h"

#define PUSH_TIME_NAME "push_time_seconds"
#define PUSH_FAIL_NAME "push_failure_time_seconds"
#define INCONSISTENT   "pushed metrics are invalid or inconsistent with existing metrics: "

/* ---- the data ------------------------------------------------------ */

typedef struct plabel {
    const char *name; /* NUL-terminated */
    const char *value;
    size_t vlen; /* values may hold NUL bytes */
} plabel;

typedef struct pmetric {
    struct pmetric *next;  /* the family's metrics in push order */
    struct pmetric *hnext; /* build-time signature table */
    const void *fam;       /* build-time: the family, for the signature */
    plabel *labels;        /* sorted by name once sanitized */
    size_t nlabels, caplabels;
    uint64_t sig;                /* hash of the label set */
    const char *rendered;        /* `a="1",instance="",job="x"` once sanitized */
    double value;                /* counter, gauge, untyped */
    double sum, count;           /* summary, histogram */
    double *qb_bound, *qb_value; /* quantiles or buckets in push order */
    size_t nqb, capqb;
} pmetric;

typedef struct pbatch pbatch;
typedef struct pgroup pgroup;

typedef struct pfamily {
    struct pfamily *next;  /* the batch's families in push order */
    struct pfamily *hnext; /* build-time name table */
    char *name;
    size_t nlen;
    uint64_t nhash;
    char *help; /* NULL: none */
    int help_set, type_set;
    expo_type type;
    pmetric *head, *tail;
    size_t nm;
    pbatch *batch;
    pgroup *group; /* once applied */
} pfamily;

struct pbatch {
    base_arena arena;
    int refs;
    int64_t time_ns;
    pfamily *head, *tail;
    size_t nfams, nmetrics;
};

struct pgroup {
    pgroup *next;
    base_arena arena;
    plabel *labels; /* grouping labels, job included, sorted by name */
    size_t nlabels;
    char *key; /* name \xff value \xff ... */
    size_t keylen;
    uint64_t hash;
    plabel *slabels; /* labels of its push_time_seconds series: + instance="" */
    size_t nslabels;
    char *rendered; /* slabels rendered */
    pfamily **fams; /* sorted by name */
    size_t nfams, capfams;
    size_t nseries;
    double push_time, fail_time; /* Unix seconds; 0: never */
};

typedef struct pname {
    struct pname *hnext;
    uint64_t hash;
    size_t nlen;
    expo_type type;
    pfamily **fams;
    size_t nfams, cap;
    char name[];
} pname;

enum { MT_PUT, MT_POST, MT_DELETE, MT_OTHER, MT__N };
static const char *const method_label[MT__N] = {"method=\"put\"", "method=\"post\"", "method=\"delete\"",
                                                "method=\"other\""};
static const int codes[] = {200, 202, 400, 404, 405, 413, 415, 500};
#define NCODES (sizeof codes / sizeof codes[0])

#define REJECT_REASONS(X)                                                                                    \
    X(PATH, "bad_path")                                                                                      \
    X(METHOD, "method")                                                                                      \
    X(MEDIA, "media_type")                                                                                   \
    X(BODY_SIZE, "body_too_large")                                                                           \
    X(PARSE, "parse_error")                                                                                  \
    X(TIMESTAMP, "timestamp")                                                                                \
    X(INCONSISTENT, "inconsistent")                                                                          \
    X(RESERVED, "reserved_name")                                                                             \
    X(SERIES, "series_limit")                                                                                \
    X(GROUPS, "group_limit")

enum {
#define X(id, s) R_##id,
    REJECT_REASONS(X)
#undef X
        R__N,
    R_NONE = -1
};
static const char *const reject_label[R__N] = {
#define X(id, s) "reason=\"" s "\"",
    REJECT_REASONS(X)
#undef X
};

enum { SM_REQUESTS, SM_REJECTED, SM_GROUPS, SM_SERIES, SM_PUSH_TIME, SM_PUSH_FAIL, SM__N };
static const char *const self_names[SM__N] = {"kelvin_push_requests_total",
                                              "kelvin_push_rejected_total",
                                              "kelvin_push_groups",
                                              "kelvin_push_series",
                                              PUSH_TIME_NAME,
                                              PUSH_FAIL_NAME};

struct agent_push {
    pthread_mutex_t mu;
    agent_push_opts o;
    pgroup *groups;
    size_t ngroups, nseries;
    pname **ntab;
    size_t ncap, nnames;
    uint64_t requests[MT__N][NCODES];
    uint64_t rejected[R__N];
    const agent_metric *cat[SM__N];
};

/* ---- small helpers ------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ULL;
    }
    return h;
}
#define FNV_INIT 14695981039346656037ULL

static int ends_with(const char *s, size_t n, const char *suf) {
    size_t m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static int starts_with(const char *s, const char *pre) {
    return strncmp(s, pre, strlen(pre)) == 0;
}

static void msgf(base_buf *msg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msgf(base_buf *msg, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(msg, fmt, ap);
    va_end(ap);
}

/* Appends s (n bytes) as a Go %q would show it, roughly: quoted, with
 * quotes, backslashes and control bytes escaped. */
static void put_quoted(base_buf *b, const char *s, size_t n) {
    base_buf_putc(b, '"');
    for (size_t i = 0; i < n && i < 200; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            base_buf_putc(b, '\\');
            base_buf_putc(b, (char)c);
        } else if (c == '\n')
            base_buf_puts(b, "\\n");
        else if (c < 0x20 || c == 0x7f)
            base_buf_printf(b, "\\x%02x", c);
        else
            base_buf_putc(b, (char)c);
    }
    if (n > 200) base_buf_puts(b, "...");
    base_buf_putc(b, '"');
}

static int label_name_ok(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (i && c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* Names the agent serves itself: a push must not shadow them. */
static int reserved_name(const char *name, size_t n) {
    if (n >= 7 && !memcmp(name, "kelvin_", 7)) return 1;
    if (n >= 5 && !memcmp(name, "DCGM_", 5)) return 1;
    if (n >= 5 && !memcmp(name, "node_", 5)) return 1;
    return agent_catalog_find(name) != NULL && strcmp(name, PUSH_TIME_NAME) && strcmp(name, PUSH_FAIL_NAME);
}

static double unix_now_s(int64_t *ret_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (ret_ns) *ret_ns = ns;
    return (double)ns / 1e9;
}

/* base64url (RFC 4648 section 5) as Go's RawURLEncoding decodes it after
 * the Pushgateway trims trailing '=': CR and LF are skipped, anything else
 * outside the alphabet, or a lone trailing character, is an error. The
 * result is NUL-terminated in the arena. */
static int b64url_decode(base_arena *a, const char *s, size_t n, char **ret, size_t *ret_len,
                         size_t *bad_at) {
    while (n && s[n - 1] == '=') n--;
    char *out = base_arena_alloc(a, n * 3 / 4 + 4);
    if (!out) return BASE_E_NOMEM;
    uint32_t acc = 0;
    size_t nbits = 0, o = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '-')
            v = 62;
        else if (c == '_')
            v = 63;
        else if (c == '\r' || c == '\n')
            continue;
        else {
            *bad_at = i;
            return BASE_E_PARSE;
        }
        k++;
        acc = (acc << 6) | (uint32_t)v;
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            out[o++] = (char)((acc >> nbits) & 0xff);
        }
    }
    if (k % 4 == 1) {
        *bad_at = n;
        return BASE_E_PARSE;
    }
    out[o] = '\0';
    *ret = out;
    *ret_len = o;
    return 0;
}

static int cmp_label_name(const void *a, const void *b) {
    return strcmp(((const plabel *)a)->name, ((const plabel *)b)->name);
}

/* Renders sorted labels as `a="1",b="2"` into the arena. */
static const char *render_labels(base_arena *a, const plabel *l, size_t n, base_buf *tmp) {
    base_buf_reset(tmp);
    for (size_t i = 0; i < n; i++) expo_label_append_n(tmp, l[i].name, l[i].value, l[i].vlen);
    if (tmp->err) return NULL;
    return base_arena_strndup(a, tmp->data ? tmp->data : "", tmp->len);
}

static uint64_t labels_hash(const plabel *l, size_t n) {
    uint64_t h = FNV_INIT;
    for (size_t i = 0; i < n; i++) {
        h = fnv1a(h, l[i].name, strlen(l[i].name) + 1);
        h = fnv1a(h, l[i].value, l[i].vlen);
        h = fnv1a(h, "\xff", 1);
    }
    return h;
}

static int labels_equal(const plabel *a, size_t na, const plabel *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) || a[i].vlen != b[i].vlen ||
            memcmp(a[i].value, b[i].value, a[i].vlen))
            return 0;
    return 1;
}

/* ---- the path: grouping key ------------------------------------------ */

typedef struct preq {
    base_arena arena; /* the request's scratch */
    plabel *labels;   /* grouping labels, sorted, unique */
    size_t nlabels;
    char *key;
    size_t keylen;
    uint64_t hash;
} preq;

/* Parses path into req's grouping labels. Returns 0, or the HTTP status
 * of the error with the message in msg (BASE_E_NOMEM as -1). */
static int parse_path(agent_push *p, const char *path, int method, preq *req, base_buf *msg) {
    if (!path || strncmp(path, "/metrics/job", 12) != 0) {
        msgf(msg, "404 page not found\n");
        return 404;
    }
    size_t plen = strlen(path);
    if (plen > p->o.max_path) {
        msgf(msg, "request path longer than %zu bytes\n", p->o.max_path);
        return 400;
    }
    const char *r = path + 12;
    int job_b64 = 0;
    if (starts_with(r, "@base64/"))
        job_b64 = 1, r += 8;
    else if (*r == '/')
        r++;
    else {
        msgf(msg, "404 page not found\n");
        return 404;
    }
    const char *slash = strchr(r, '/');
    size_t jlen = slash ? (size_t)(slash - r) : strlen(r);
    if (jlen == 0 && job_b64) {
        msgf(msg, "404 page not found\n");
        return 404;
    }
    if (method == MT_OTHER) {
        msgf(msg, "Method Not Allowed\n");
        return 405;
    }
    const char *labels = slash ? slash : "";
    size_t llen = strlen(labels);

    /* count components: at most one label per two segments */
    size_t ncomp = 0;
    if (llen > 1)
        for (size_t i = 0; i < llen; i++) ncomp += labels[i] == '/';
    if (llen > 1 && ncomp % 2 != 0) {
        msgf(msg, "odd number of components in label string ");
        put_quoted(msg, labels, llen);
        base_buf_putc(msg, '\n');
        return 400;
    }
    size_t cap = ncomp / 2 + 2;
    plabel *l = base_arena_alloc(&req->arena, cap * sizeof *l);
    if (!l) return -1;
    size_t n = 0;
    if (llen > 1) {
        const char *c = labels + 1;
        for (;;) {
            const char *e1 = strchr(c, '/');
            const char *v = e1 + 1; /* odd count checked: e1 exists */
            const char *e2 = strchr(v, '/');
            size_t nl = (size_t)(e1 - c), vl = e2 ? (size_t)(e2 - v) : strlen(v);
            size_t tl = nl;
            int b64 = 0;
            if (nl >= 7 && memcmp(c + nl - 7, "@base64", 7) == 0) tl -= 7, b64 = 1;
            if (!label_name_ok(c, tl) || (tl >= 2 && c[0] == '_' && c[1] == '_')) {
                msgf(msg, "improper label name ");
                put_quoted(msg, c, tl);
                base_buf_putc(msg, '\n');
                return 400;
            }
            char *name = base_arena_strndup(&req->arena, c, tl);
            if (!name) return -1;
            char *val;
            size_t vlen;
            if (b64) {
                size_t bad = 0;
                int rc = b64url_decode(&req->arena, v, vl, &val, &vlen, &bad);
                if (rc == BASE_E_NOMEM) return -1;
                if (rc) {
                    msgf(msg, "invalid base64 encoding for label %s=", name);
                    put_quoted(msg, v, vl);
                    msgf(msg, ": illegal base64 data at input byte %zu\n", bad);
                    return 400;
                }
            } else {
                val = base_arena_strndup(&req->arena, v, vl);
                vlen = vl;
                if (!val) return -1;
            }
            /* later occurrences win, as in the Pushgateway's map */
            size_t k = 0;
            while (k < n && strcmp(l[k].name, name) != 0) k++;
            l[k] = (plabel){name, val, vlen};
            if (k == n) n++;
            if (!e2) break;
            c = e2 + 1;
        }
    }
    char *job;
    size_t joblen;
    if (job_b64) {
        size_t bad = 0;
        int rc = b64url_decode(&req->arena, r, jlen, &job, &joblen, &bad);
        if (rc == BASE_E_NOMEM) return -1;
        if (rc) {
            msgf(msg, "invalid base64 encoding in job name ");
            put_quoted(msg, r, jlen);
            msgf(msg, ": illegal base64 data at input byte %zu\n", bad);
            return 400;
        }
    } else {
        job = base_arena_strndup(&req->arena, r, jlen);
        joblen = jlen;
        if (!job) return -1;
    }
    if (joblen == 0) {
        msgf(msg, "job name is required\n");
        return 400;
    }
    size_t k = 0;
    while (k < n && strcmp(l[k].name, "job") != 0) k++;
    l[k] = (plabel){"job", job, joblen};
    if (k == n) n++;
    for (size_t i = 0; i < n; i++)
        if (memchr(l[i].value, '\0', l[i].vlen) || !base_utf8_valid(l[i].value, l[i].vlen)) {
            msgf(msg, "grouping label %s has a value that is not valid UTF-8 or holds a NUL byte\n",
                 l[i].name);
            return 400;
        }
    qsort(l, n, sizeof *l, cmp_label_name);
    base_buf kb = BASE_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        base_buf_puts(&kb, l[i].name);
        base_buf_putc(&kb, '\xff');
        base_buf_append(&kb, l[i].value, l[i].vlen);
        base_buf_putc(&kb, '\xff');
    }
    if (kb.err) {
        base_buf_free(&kb);
        return -1;
    }
    req->key = base_arena_strndup(&req->arena, kb.data, kb.len);
    req->keylen = kb.len;
    base_buf_free(&kb);
    if (!req->key) return -1;
    req->hash = fnv1a(FNV_INIT, req->key, req->keylen);
    req->labels = l;
    req->nlabels = n;
    return 0;
}

/* ---- the body: families as the Pushgateway's parser builds them ------- */

typedef struct pbuild {
    agent_push *p;
    pbatch *b;
    expo_format fmt;
    pfamily **ftab; /* name table */
    size_t fcap;
    pmetric **stab; /* summary/histogram signature table */
    size_t scap;
    int has_ts;
    base_buf tmp, val;
    size_t line_hint;
} pbuild;

static pfamily *fam_lookup(pbuild *bd, const char *name, size_t n) {
    uint64_t h = fnv1a(FNV_INIT, name, n);
    for (pfamily *f = bd->ftab[h & (bd->fcap - 1)]; f; f = f->hnext)
        if (f->nhash == h && f->nlen == n && memcmp(f->name, name, n) == 0) return f;
    return NULL;
}

static int ftab_grow(pbuild *bd) {
    size_t ncap = bd->fcap * 2;
    pfamily **t = calloc(ncap, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    for (size_t i = 0; i < bd->fcap; i++)
        for (pfamily *f = bd->ftab[i], *nx; f; f = nx) {
            nx = f->hnext;
            f->hnext = t[f->nhash & (ncap - 1)];
            t[f->nhash & (ncap - 1)] = f;
        }
    free(bd->ftab);
    bd->ftab = t;
    bd->fcap = ncap;
    return 0;
}

static void ftab_remove(pbuild *bd, pfamily *f) {
    pfamily **pp = &bd->ftab[f->nhash & (bd->fcap - 1)];
    while (*pp && *pp != f) pp = &(*pp)->hnext;
    if (*pp) *pp = f->hnext;
}

static void ftab_insert(pbuild *bd, pfamily *f) {
    f->nhash = fnv1a(FNV_INIT, f->name, f->nlen);
    f->hnext = bd->ftab[f->nhash & (bd->fcap - 1)];
    bd->ftab[f->nhash & (bd->fcap - 1)] = f;
}

static pfamily *fam_create(pbuild *bd, const char *name, size_t n) {
    if (bd->b->nfams + 1 > bd->fcap && ftab_grow(bd)) return NULL;
    pfamily *f = base_arena_alloc(&bd->b->arena, sizeof *f);
    char *nm = base_arena_strndup(&bd->b->arena, name, n);
    if (!f || !nm) return NULL;
    memset(f, 0, sizeof *f);
    f->name = nm;
    f->nlen = n;
    f->batch = bd->b;
    ftab_insert(bd, f);
    if (bd->b->tail)
        bd->b->tail->next = f;
    else
        bd->b->head = f;
    bd->b->tail = f;
    bd->b->nfams++;
    return f;
}

/* Go expfmt's setOrCreateCurrentMF: the family a name belongs to. */
static pfamily *fam_for(pbuild *bd, const char *name, size_t n, int *is_count, int *is_sum) {
    *is_count = *is_sum = 0;
    pfamily *f = fam_lookup(bd, name, n);
    if (f) return f;
    int c = n > 6 && ends_with(name, n, "_count"), s = n > 4 && ends_with(name, n, "_sum"),
        bk = n > 7 && ends_with(name, n, "_bucket");
    if (c || s) {
        f = fam_lookup(bd, name, n - (c ? 6 : 4));
        if (f && f->type == EXPO_SUMMARY) {
            *is_count = c, *is_sum = s;
            return f;
        }
    }
    if (c || s || bk) {
        f = fam_lookup(bd, name, n - (c ? 6 : s ? 4 : 7));
        if (f && f->type == EXPO_HISTOGRAM) {
            *is_count = c, *is_sum = s;
            return f;
        }
    }
    f = fam_create(bd, name, n);
    return f;
}

static int parse_float_go(const char *s, size_t n, double *ret) {
    for (size_t i = 0; i < n; i++)
        if (s[i] == 'p' || s[i] == 'P' || s[i] == '_') return BASE_E_PARSE;
    return base_parse_double(s, n, ret);
}

/* The metric of summary/histogram family f with these labels (quantile /
 * le excluded; l sorted by name), or NULL; *ret_sig is the signature. */
static pmetric *sig_metric(pbuild *bd, const pfamily *f, const plabel *l, size_t n, uint64_t *ret_sig) {
    uint64_t h = fnv1a(labels_hash(l, n), &f, sizeof f);
    *ret_sig = h;
    for (pmetric *m = bd->stab[h & (bd->scap - 1)]; m; m = m->hnext)
        if (m->sig == h && m->fam == f && labels_equal(m->labels, m->nlabels, l, n)) return m;
    return NULL;
}

static int metric_new(pbuild *bd, pfamily *f, plabel *l, size_t n, pmetric **ret, base_buf *msg) {
    if (bd->b->nmetrics >= bd->p->o.max_series_per_group) {
        msgf(msg, "push has more than %zu series (the limit per group)\n", bd->p->o.max_series_per_group);
        return BASE_E_LIMIT;
    }
    pmetric *m = base_arena_alloc(&bd->b->arena, sizeof *m);
    if (!m) return BASE_E_NOMEM;
    memset(m, 0, sizeof *m);
    m->labels = l;
    m->nlabels = n;
    m->fam = f;
    if (f->tail)
        f->tail->next = m;
    else
        f->head = m;
    f->tail = m;
    f->nm++;
    bd->b->nmetrics++;
    *ret = m;
    return 0;
}

static int qb_add(base_arena *a, pmetric *m, double bound, double v) {
    if (m->nqb == m->capqb) {
        size_t nc = m->capqb ? m->capqb * 2 : 8;
        double *nb = base_arena_alloc(a, nc * sizeof *nb), *nv = base_arena_alloc(a, nc * sizeof *nv);
        if (!nb || !nv) return BASE_E_NOMEM;
        if (m->nqb) {
            memcpy(nb, m->qb_bound, m->nqb * sizeof *nb);
            memcpy(nv, m->qb_value, m->nqb * sizeof *nv);
        }
        m->qb_bound = nb, m->qb_value = nv, m->capqb = nc;
    }
    m->qb_bound[m->nqb] = bound;
    m->qb_value[m->nqb] = v;
    m->nqb++;
    return 0;
}

/* Go's uint64(float64) for the counts the Pushgateway keeps as integers. */
static double as_count(double v) {
    if (!(v >= 0)) return 0;
    if (v >= 18446744073709551616.0) return 18446744073709551615.0;
    return (double)(uint64_t)v;
}

static int on_help(pbuild *bd, expo_parser *ps, base_buf *msg) {
    base_str nm = expo_parser_name(ps);
    pfamily *f = NULL;
    if (bd->fmt == EXPO_FMT_OPENMETRICS) {
        /* OpenMetrics metadata names counters and infos without their
         * _total / _info suffix; their families carry it */
        static const char *const sufs[] = {"_total", "_info"};
        for (size_t i = 0; i < 2 && !f; i++) {
            base_buf_reset(&bd->tmp);
            base_buf_append(&bd->tmp, nm.p, nm.n);
            base_buf_puts(&bd->tmp, sufs[i]);
            if (bd->tmp.err) return BASE_E_NOMEM;
            f = fam_lookup(bd, bd->tmp.data, bd->tmp.len);
            if (f && !f->type_set) f = NULL;
        }
    }
    int c, s;
    if (!f) f = fam_for(bd, nm.p, nm.n, &c, &s);
    if (!f) return BASE_E_NOMEM;
    if (f->help_set) {
        msgf(msg, "text format parsing error: second HELP line for metric name ");
        put_quoted(msg, f->name, f->nlen);
        base_buf_putc(msg, '\n');
        return BASE_E_PARSE;
    }
    base_buf_reset(&bd->tmp);
    if (expo_parser_help(ps, &bd->tmp)) return BASE_E_NOMEM;
    f->help = base_arena_strndup(&bd->b->arena, bd->tmp.data ? bd->tmp.data : "", bd->tmp.len);
    if (!f->help) return BASE_E_NOMEM;
    f->help_set = 1;
    return 0;
}

static int on_type(pbuild *bd, expo_parser *ps, base_buf *msg) {
    base_str nm = expo_parser_name(ps);
    expo_type t = expo_parser_type(ps);
    int om = bd->fmt == EXPO_FMT_OPENMETRICS;
    const char *suffix = "";
    if (om && t == EXPO_COUNTER)
        suffix = "_total";
    else if (om && t == EXPO_INFO)
        suffix = "_info", t = EXPO_GAUGE;
    else if (om && t == EXPO_STATESET)
        t = EXPO_GAUGE;
    else if (t == EXPO_GAUGEHISTOGRAM || t == EXPO_INFO || t == EXPO_STATESET) {
        msgf(msg, "text format parsing error: metric type of ");
        put_quoted(msg, nm.p, nm.n);
        msgf(msg, " is not supported by the push endpoint (counter, gauge, histogram, summary, untyped)\n");
        return BASE_E_PARSE;
    }
    pfamily *f;
    if (*suffix) {
        base_buf_reset(&bd->tmp);
        base_buf_append(&bd->tmp, nm.p, nm.n);
        base_buf_puts(&bd->tmp, suffix);
        if (bd->tmp.err) return BASE_E_NOMEM;
        f = fam_lookup(bd, bd->tmp.data, bd->tmp.len);
        if (!f) {
            /* a HELP line may have come first under the bare name */
            pfamily *bare = fam_lookup(bd, nm.p, nm.n);
            if (bare && !bare->type_set && bare->nm == 0) {
                ftab_remove(bd, bare);
                bare->name = base_arena_strndup(&bd->b->arena, bd->tmp.data, bd->tmp.len);
                if (!bare->name) return BASE_E_NOMEM;
                bare->nlen = bd->tmp.len;
                ftab_insert(bd, bare);
                f = bare;
            } else {
                f = fam_create(bd, bd->tmp.data, bd->tmp.len);
            }
        }
    } else {
        int c, s;
        f = fam_for(bd, nm.p, nm.n, &c, &s);
    }
    if (!f) return BASE_E_NOMEM;
    if (f->type_set || f->nm) {
        msgf(msg, "text format parsing error: second TYPE line for metric name ");
        put_quoted(msg, f->name, f->nlen);
        msgf(msg, ", or TYPE reported after samples\n");
        return BASE_E_PARSE;
    }
    f->type = t;
    f->type_set = 1;
    return 0;
}

static int on_series(pbuild *bd, expo_parser *ps, base_buf *msg) {
    base_arena *a = &bd->b->arena;
    base_str nm = expo_parser_name(ps);
    if (expo_parser_has_ts(ps)) bd->has_ts = 1;
    int is_count, is_sum;
    pfamily *f = fam_for(bd, nm.p, nm.n, &is_count, &is_sum);
    if (!f) return BASE_E_NOMEM;
    if (!f->type_set) {
        /* OpenMetrics' _created samples are gauges (client_python serves
         * them so in text 0.0.4) */
        f->type = bd->fmt == EXPO_FMT_OPENMETRICS && ends_with(f->name, f->nlen, "_created") ? EXPO_GAUGE
                                                                                             : EXPO_UNTYPED;
        f->type_set = 1;
    }
    size_t nl = expo_parser_nlabels(ps);
    const expo_label *el = expo_parser_labels(ps);
    plabel *l = base_arena_alloc(a, (nl + 1) * sizeof *l);
    if (!l) return BASE_E_NOMEM;
    size_t n = 0;
    int special = 0;
    double special_v = NAN;
    const char *special_name = f->type == EXPO_SUMMARY ? "quantile" : f->type == EXPO_HISTOGRAM ? "le" : NULL;
    for (size_t i = 0; i < nl; i++) {
        base_str ln = el[i].name, lv = el[i].value;
        for (size_t j = 0; j < i; j++)
            if (el[j].name.n == ln.n && memcmp(el[j].name.p, ln.p, ln.n) == 0) {
                msgf(msg, "text format parsing error: duplicate label names for metric ");
                put_quoted(msg, f->name, f->nlen);
                base_buf_putc(msg, '\n');
                return BASE_E_PARSE;
            }
        if (ln.n >= 2 && ln.p[0] == '_' && ln.p[1] == '_') {
            msgf(msg, "text format parsing error: label name ");
            put_quoted(msg, ln.p, ln.n);
            msgf(msg, " is reserved\n");
            return BASE_E_PARSE;
        }
        base_buf_reset(&bd->val);
        if (expo_unescape_label(lv, &bd->val)) return BASE_E_NOMEM;
        const char *v = bd->val.data ? bd->val.data : "";
        size_t vn = bd->val.len;
        if (memchr(v, '\0', vn) || !base_utf8_valid(v, vn)) {
            msgf(msg, "text format parsing error: invalid label value ");
            put_quoted(msg, v, vn);
            base_buf_putc(msg, '\n');
            return BASE_E_PARSE;
        }
        if (special_name && ln.n == strlen(special_name) && memcmp(ln.p, special_name, ln.n) == 0) {
            if (parse_float_go(v, vn, &special_v) != 0) {
                msgf(msg, "text format parsing error: expected float as value for '%s' label, got ",
                     special_name);
                put_quoted(msg, v, vn);
                base_buf_putc(msg, '\n');
                return BASE_E_PARSE;
            }
            special = 1;
            continue;
        }
        char *name = base_arena_strndup(a, ln.p, ln.n);
        char *val = base_arena_strndup(a, v, vn);
        if (!name || !val) return BASE_E_NOMEM;
        l[n++] = (plabel){name, val, vn};
    }
    double v = expo_parser_value(ps);
    pmetric *m;
    int rc;
    if (f->type == EXPO_SUMMARY || f->type == EXPO_HISTOGRAM) {
        qsort(l, n, sizeof *l, cmp_label_name); /* the signature ignores order */
        uint64_t sig;
        m = sig_metric(bd, f, l, n, &sig);
        if (!m) {
            if ((rc = metric_new(bd, f, l, n, &m, msg))) return rc;
            m->sig = sig;
            m->hnext = bd->stab[sig & (bd->scap - 1)];
            bd->stab[sig & (bd->scap - 1)] = m;
        }
        if (is_count)
            m->count = as_count(v);
        else if (is_sum)
            m->sum = v;
        else if (special && qb_add(a, m, special_v, f->type == EXPO_HISTOGRAM ? as_count(v) : v))
            return BASE_E_NOMEM;
    } else {
        if ((rc = metric_new(bd, f, l, n, &m, msg))) return rc;
        m->value = v;
    }
    return 0;
}

/* Sets the grouping labels on every metric (their values win), adds
 * instance="" where no instance label is, sorts, renders, hashes. */
static int sanitize(pbuild *bd, const plabel *rg, size_t ng) {
    base_arena *a = &bd->b->arena;
    /* the request's labels die with the request: the batch keeps copies */
    plabel *g = base_arena_alloc(a, (ng + 1) * sizeof *g);
    if (!g) return BASE_E_NOMEM;
    for (size_t k = 0; k < ng; k++) {
        g[k].name = base_arena_strdup(a, rg[k].name);
        g[k].value = base_arena_strndup(a, rg[k].value, rg[k].vlen);
        g[k].vlen = rg[k].vlen;
        if (!g[k].name || !g[k].value) return BASE_E_NOMEM;
    }
    for (pfamily *f = bd->b->head; f; f = f->next)
        for (pmetric *m = f->head; m; m = m->next) {
            plabel *l = base_arena_alloc(a, (m->nlabels + ng + 1) * sizeof *l);
            if (!l) return BASE_E_NOMEM;
            size_t n = 0;
            int has_instance = 0;
            for (size_t i = 0; i < m->nlabels; i++) {
                plabel x = m->labels[i];
                for (size_t k = 0; k < ng; k++)
                    if (!strcmp(g[k].name, x.name)) x.value = g[k].value, x.vlen = g[k].vlen;
                if (!strcmp(x.name, "instance")) has_instance = 1;
                l[n++] = x;
            }
            for (size_t k = 0; k < ng; k++) {
                size_t i = 0;
                while (i < m->nlabels && strcmp(m->labels[i].name, g[k].name)) i++;
                if (i < m->nlabels) continue;
                l[n++] = g[k];
                if (!strcmp(g[k].name, "instance")) has_instance = 1;
            }
            if (!has_instance) l[n++] = (plabel){"instance", "", 0};
            qsort(l, n, sizeof *l, cmp_label_name);
            m->labels = l;
            m->nlabels = n;
            m->sig = labels_hash(l, n);
            m->rendered = render_labels(a, l, n, &bd->tmp);
            if (!m->rendered) return BASE_E_NOMEM;
        }
    return 0;
}

static void batch_free(pbatch *b) {
    if (!b) return;
    base_arena_free(&b->arena);
    free(b);
}

/* Parses body into a new batch. Returns 0, BASE_E_PARSE / BASE_E_LIMIT
 * (message in msg) or BASE_E_NOMEM. */
static int build_batch(agent_push *p, const char *body, size_t len, expo_format fmt, const preq *req,
                       pbatch **ret, int *ret_has_ts, base_buf *msg) {
    pbatch *b = calloc(1, sizeof *b);
    if (!b) return BASE_E_NOMEM;
    base_arena_init(&b->arena, 16384, 0);
    pbuild bd = {.p = p, .b = b, .fmt = fmt, .fcap = 64, .scap = 1024};
    base_buf_init(&bd.tmp, 0);
    base_buf_init(&bd.val, 0);
    bd.ftab = calloc(bd.fcap, sizeof *bd.ftab);
    bd.stab = calloc(bd.scap, sizeof *bd.stab);
    int rc = BASE_E_NOMEM;
    expo_parse_limits lim = {.max_labels = p->o.max_labels, .max_name_len = 1024, .max_value_len = 65536};
    expo_parser ps;
    expo_parser_init(&ps, body, len, fmt, &lim);
    if (!bd.ftab || !bd.stab) goto out;
    for (;;) {
        int e = expo_parser_next(&ps);
        if (e == EXPO_ENTRY_EOF) break;
        if (e < 0) {
            if (e == BASE_E_NOMEM) goto out;
            msgf(msg, "text format parsing error: %s\n", expo_parser_error_at(&ps));
            rc = e == BASE_E_LIMIT ? BASE_E_LIMIT : BASE_E_PARSE;
            goto out;
        }
        if (e == EXPO_ENTRY_HELP)
            rc = on_help(&bd, &ps, msg);
        else if (e == EXPO_ENTRY_TYPE)
            rc = on_type(&bd, &ps, msg);
        else if (e == EXPO_ENTRY_SERIES)
            rc = on_series(&bd, &ps, msg);
        else
            rc = 0;
        if (rc) goto out;
        /* the signature table grows with the metrics it holds */
        if (b->nmetrics > bd.scap) {
            size_t ncap = bd.scap * 2;
            pmetric **t = calloc(ncap, sizeof *t);
            if (!t) {
                rc = BASE_E_NOMEM;
                goto out;
            }
            for (size_t i = 0; i < bd.scap; i++)
                for (pmetric *m = bd.stab[i], *nx; m; m = nx) {
                    nx = m->hnext;
                    m->hnext = t[m->sig & (ncap - 1)];
                    t[m->sig & (ncap - 1)] = m;
                }
            free(bd.stab);
            bd.stab = t;
            bd.scap = ncap;
        }
    }
    /* drop families without metrics (TYPE or HELP only), and the two the
     * Pushgateway sets itself */
    pfamily **pp = &b->head;
    b->tail = NULL;
    b->nfams = 0;
    while (*pp) {
        pfamily *f = *pp;
        if (f->nm == 0 || !strcmp(f->name, PUSH_TIME_NAME) || !strcmp(f->name, PUSH_FAIL_NAME)) {
            b->nmetrics -= f->nm;
            *pp = f->next;
            continue;
        }
        b->tail = f;
        b->nfams++;
        pp = &f->next;
    }
    rc = sanitize(&bd, req->labels, req->nlabels);
out:
    expo_parser_free(&ps);
    free(bd.ftab);
    free(bd.stab);
    base_buf_free(&bd.tmp);
    base_buf_free(&bd.val);
    if (rc) {
        batch_free(b);
        return rc;
    }
    *ret_has_ts = bd.has_ts;
    *ret = b;
    return 0;
}

/* ---- the store: index of names, groups ------------------------------ */

static pname *name_find(agent_push *p, const char *name, size_t n) {
    if (!p->ncap) return NULL;
    uint64_t h = fnv1a(FNV_INIT, name, n);
    for (pname *e = p->ntab[h & (p->ncap - 1)]; e; e = e->hnext)
        if (e->hash == h && e->nlen == n && memcmp(e->name, name, n) == 0) return e;
    return NULL;
}

static int name_add(agent_push *p, pfamily *f) {
    pname *e = name_find(p, f->name, f->nlen);
    if (!e) {
        if (p->nnames + 1 > p->ncap) {
            size_t ncap = p->ncap ? p->ncap * 2 : 256;
            pname **t = calloc(ncap, sizeof *t);
            if (!t) return BASE_E_NOMEM;
            for (size_t i = 0; i < p->ncap; i++)
                for (pname *x = p->ntab[i], *nx; x; x = nx) {
                    nx = x->hnext;
                    x->hnext = t[x->hash & (ncap - 1)];
                    t[x->hash & (ncap - 1)] = x;
                }
            free(p->ntab);
            p->ntab = t;
            p->ncap = ncap;
        }
        e = calloc(1, sizeof *e + f->nlen + 1);
        if (!e) return BASE_E_NOMEM;
        memcpy(e->name, f->name, f->nlen);
        e->nlen = f->nlen;
        e->hash = fnv1a(FNV_INIT, f->name, f->nlen);
        e->type = f->type;
        e->hnext = p->ntab[e->hash & (p->ncap - 1)];
        p->ntab[e->hash & (p->ncap - 1)] = e;
        p->nnames++;
    }
    if (e->nfams == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 4;
        pfamily **t = realloc(e->fams, nc * sizeof *t);
        if (!t) return BASE_E_NOMEM;
        e->fams = t;
        e->cap = nc;
    }
    e->fams[e->nfams++] = f;
    return 0;
}

static void name_remove(agent_push *p, pfamily *f) {
    pname *e = name_find(p, f->name, f->nlen);
    if (!e) return;
    for (size_t i = 0; i < e->nfams; i++)
        if (e->fams[i] == f) {
            e->fams[i] = e->fams[--e->nfams];
            break;
        }
    if (e->nfams) return;
    pname **pp = &p->ntab[e->hash & (p->ncap - 1)];
    while (*pp != e) pp = &(*pp)->hnext;
    *pp = e->hnext;
    p->nnames--;
    free(e->fams);
    free(e);
}

static pgroup *group_find(agent_push *p, const preq *req) {
    for (pgroup *g = p->groups; g; g = g->next)
        if (g->hash == req->hash && g->keylen == req->keylen && memcmp(g->key, req->key, g->keylen) == 0)
            return g;
    return NULL;
}

static pgroup *group_new(agent_push *p, const preq *req) {
    pgroup *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    base_arena_init(&g->arena, 1024, 0);
    base_buf tmp = BASE_BUF_INIT;
    g->labels = base_arena_alloc(&g->arena, (req->nlabels + 1) * sizeof *g->labels);
    g->slabels = base_arena_alloc(&g->arena, (req->nlabels + 1) * sizeof *g->slabels);
    g->key = base_arena_strndup(&g->arena, req->key, req->keylen);
    if (!g->labels || !g->slabels || !g->key) goto fail;
    int has_instance = 0;
    for (size_t i = 0; i < req->nlabels; i++) {
        char *n = base_arena_strdup(&g->arena, req->labels[i].name);
        char *v = base_arena_strndup(&g->arena, req->labels[i].value, req->labels[i].vlen);
        if (!n || !v) goto fail;
        g->labels[i] = (plabel){n, v, req->labels[i].vlen};
        g->slabels[i] = g->labels[i];
        if (!strcmp(n, "instance")) has_instance = 1;
    }
    g->nlabels = g->nslabels = req->nlabels;
    if (!has_instance) g->slabels[g->nslabels++] = (plabel){"instance", "", 0};
    qsort(g->slabels, g->nslabels, sizeof *g->slabels, cmp_label_name);
    g->rendered = (char *)render_labels(&g->arena, g->slabels, g->nslabels, &tmp);
    if (!g->rendered) goto fail;
    base_buf_free(&tmp);
    g->keylen = req->keylen;
    g->hash = req->hash;
    g->next = p->groups;
    p->groups = g;
    p->ngroups++;
    return g;
fail:
    base_buf_free(&tmp);
    base_arena_free(&g->arena);
    free(g);
    return NULL;
}

static void family_release(agent_push *p, pfamily *f) {
    name_remove(p, f);
    f->group->nseries -= f->nm;
    p->nseries -= f->nm;
    f->group = NULL;
    pbatch *b = f->batch;
    if (--b->refs == 0) batch_free(b);
}

static void group_free(agent_push *p, pgroup *g) {
    for (size_t i = 0; i < g->nfams; i++) family_release(p, g->fams[i]);
    free(g->fams);
    base_arena_free(&g->arena);
    free(g);
}

static void group_delete(agent_push *p, pgroup *g) {
    pgroup **pp = &p->groups;
    while (*pp != g) pp = &(*pp)->next;
    *pp = g->next;
    p->ngroups--;
    group_free(p, g);
}

static int cmp_fam_name(const void *a, const void *b) {
    const pfamily *x = *(pfamily *const *)a, *y = *(pfamily *const *)b;
    return strcmp(x->name, y->name);
}

/* ---- the consistency check ------------------------------------------ */

typedef struct pcheck {
    agent_push *p;
    pgroup *g; /* the target group, or NULL */
    int replace_all;
    pbatch *b;
    pfamily **newf; /* the batch's families sorted by name */
    size_t nnew;
} pcheck;

static pfamily *new_family(const pcheck *c, const char *name) {
    size_t lo = 0, hi = c->nnew;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(c->newf[mid]->name, name);
        if (r == 0) return c->newf[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The type served under name after the push, or -1 if none. */
static int alive_type(const pcheck *c, const char *name, size_t n) {
    char stack[512];
    char *z = n < sizeof stack ? stack : malloc(n + 1);
    if (!z) return -1;
    memcpy(z, name, n);
    z[n] = '\0';
    int t = -1;
    pfamily *nf = new_family(c, z);
    if (nf)
        t = (int)nf->type;
    else {
        pname *e = name_find(c->p, z, n);
        for (size_t i = 0; e && i < e->nfams && t < 0; i++)
            if (e->fams[i]->group != c->g || !c->replace_all) t = (int)e->fams[i]->type;
    }
    if (z != stack) free(z);
    return t;
}

static void describe_metric(base_buf *msg, const pfamily *f, const pmetric *m) {
    msgf(msg, "collected metric ");
    put_quoted(msg, f->name, f->nlen);
    msgf(msg, " {%s}", m->rendered);
}

/* Duplicate series of family f: within f, and against alive families of
 * the same name in other groups. */
static int check_duplicates(const pcheck *c, pfamily *f, base_buf *msg) {
    size_t cap = 16;
    while (cap < f->nm * 2) cap *= 2;
    pmetric **t = calloc(cap, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    int rc = 0;
    for (pmetric *m = f->head; m && !rc; m = m->next) {
        size_t i = m->sig & (cap - 1);
        for (; t[i]; i = (i + 1) & (cap - 1))
            if (t[i]->sig == m->sig && labels_equal(t[i]->labels, t[i]->nlabels, m->labels, m->nlabels)) {
                msgf(msg, INCONSISTENT);
                describe_metric(msg, f, m);
                msgf(msg, " was collected before with the same name and label values\n");
                rc = BASE_E_CONFLICT;
                break;
            }
        if (!rc) t[i] = m;
    }
    pname *e = rc ? NULL : name_find(c->p, f->name, f->nlen);
    for (size_t k = 0; e && k < e->nfams && !rc; k++) {
        pfamily *o = e->fams[k];
        if (o->group == c->g) continue; /* replaced by this push */
        for (pmetric *m = o->head; m && !rc; m = m->next)
            for (size_t i = m->sig & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
                if (t[i]->sig == m->sig && labels_equal(t[i]->labels, t[i]->nlabels, m->labels, m->nlabels)) {
                    msgf(msg, INCONSISTENT);
                    describe_metric(msg, f, t[i]);
                    msgf(msg, " was collected before with the same name and label values\n");
                    rc = BASE_E_CONFLICT;
                    break;
                }
    }
    free(t);
    return rc;
}

/* Returns 0, or BASE_E_CONFLICT with the message and *reason set. */
static int check(const pcheck *c, base_buf *msg, int *reason) {
    static const char *const sufs[] = {"_count", "_sum", "_bucket"};
    char nb[1100];
    for (size_t i = 0; i < c->nnew; i++) {
        pfamily *f = c->newf[i];
        if (reserved_name(f->name, f->nlen)) {
            *reason = R_RESERVED;
            msgf(msg, INCONSISTENT "metric name ");
            put_quoted(msg, f->name, f->nlen);
            msgf(msg, " is reserved for the agent's own metrics\n");
            return BASE_E_CONFLICT;
        }
        *reason = R_INCONSISTENT;
        pname *e = name_find(c->p, f->name, f->nlen);
        for (size_t k = 0; e && k < e->nfams; k++) {
            pfamily *o = e->fams[k];
            if (o->group == c->g || o->type == f->type) continue;
            msgf(msg, INCONSISTENT);
            describe_metric(msg, f, f->head);
            msgf(msg, " is a %s, but metric family ", expo_type_name(f->type, EXPO_FMT_TEXT));
            put_quoted(msg, f->name, f->nlen);
            msgf(msg, " is a %s in other groups\n", expo_type_name(o->type, EXPO_FMT_TEXT));
            return BASE_E_CONFLICT;
        }
        for (size_t s = 0; s < 3; s++) {
            size_t sl = strlen(sufs[s]);
            if (f->nlen > sl && ends_with(f->name, f->nlen, sufs[s])) {
                int t = alive_type(c, f->name, f->nlen - sl);
                if (t == EXPO_HISTOGRAM || (t == EXPO_SUMMARY && s != 2)) {
                    msgf(msg, INCONSISTENT "collected metric named ");
                    put_quoted(msg, f->name, f->nlen);
                    msgf(msg, " collides with previously collected %s named ",
                         t == EXPO_HISTOGRAM ? "histogram" : "summary");
                    put_quoted(msg, f->name, f->nlen - sl);
                    base_buf_putc(msg, '\n');
                    return BASE_E_CONFLICT;
                }
            }
            if ((f->type == EXPO_SUMMARY && s < 2) || f->type == EXPO_HISTOGRAM) {
                if (f->nlen + sl >= sizeof nb) continue;
                memcpy(nb, f->name, f->nlen);
                memcpy(nb + f->nlen, sufs[s], sl + 1);
                if (alive_type(c, nb, f->nlen + sl) >= 0) {
                    msgf(msg, INCONSISTENT "collected histogram or summary named ");
                    put_quoted(msg, f->name, f->nlen);
                    msgf(msg, " collides with previously collected metric named ");
                    put_quoted(msg, nb, f->nlen + sl);
                    base_buf_putc(msg, '\n');
                    return BASE_E_CONFLICT;
                }
            }
        }
        const char *special = f->type == EXPO_SUMMARY ? "quantile" : f->type == EXPO_HISTOGRAM ? "le" : NULL;
        for (pmetric *m = f->head; special && m; m = m->next)
            for (size_t k = 0; k < m->nlabels; k++)
                if (!strcmp(m->labels[k].name, special)) {
                    msgf(msg, INCONSISTENT);
                    describe_metric(msg, f, m);
                    msgf(msg, " must not have an explicit \"%s\" label\n", special);
                    return BASE_E_CONFLICT;
                }
        int rc = check_duplicates(c, f, msg);
        if (rc) return rc;
    }
    /* a kept family of the group may collide with a new one's suffixes:
     * covered above, since alive_type() sees kept families */
    return 0;
}

/* Asserts invariants 1, 3 and 4 (see the top of the file); debug builds
 * run it after every change of the store. */
static void check_invariants(agent_push *p) {
#ifdef NDEBUG
    (void)p;
#else
    size_t total = 0, groups = 0;
    for (pgroup *g = p->groups; g; g = g->next) {
        size_t gs = 0;
        groups++;
        for (size_t i = 0; i < g->nfams; i++) {
            pfamily *f = g->fams[i];
            assert(f->group == g);
            assert(i == 0 || strcmp(g->fams[i - 1]->name, f->name) < 0);
            pname *e = name_find(p, f->name, f->nlen);
            assert(e && e->type == f->type);
            size_t seen = 0;
            for (size_t k = 0; k < e->nfams; k++) seen += e->fams[k] == f;
            assert(seen == 1);
            size_t nm = 0, refs = 0;
            for (pmetric *m = f->head; m; m = m->next) nm++;
            assert(nm == f->nm);
            for (pfamily *x = f->batch->head; x; x = x->next) refs += x->group != NULL;
            assert(refs == (size_t)f->batch->refs);
            gs += f->nm;
        }
        assert(gs == g->nseries);
        total += gs;
    }
    assert(groups == p->ngroups);
    assert(total == p->nseries);
#endif
}

/* ---- requests -------------------------------------------------------- */

static void set_failure(agent_push *p, const preq *req, double now) {
    pgroup *g = group_find(p, req);
    if (!g && p->ngroups < p->o.max_groups) g = group_new(p, req);
    if (g) g->fail_time = now;
}

/* Moves the batch's families into the group (lock held, checks passed). */
static int apply(agent_push *p, pgroup *g, const pcheck *c, pbatch *b, double now) {
    int replace_all = c->replace_all;
    size_t need = (replace_all ? 0 : g->nfams) + b->nfams;
    if (need > g->capfams) {
        size_t nc = g->capfams ? g->capfams : 8;
        while (nc < need) nc *= 2;
        pfamily **t = realloc(g->fams, nc * sizeof *t);
        if (!t) return BASE_E_NOMEM;
        g->fams = t;
        g->capfams = nc;
    }
    /* make sure the index can take every new family before changing anything */
    size_t k = 0;
    for (size_t i = 0; i < g->nfams; i++) {
        pfamily *f = g->fams[i];
        if (replace_all || new_family(c, f->name))
            family_release(p, f);
        else
            g->fams[k++] = f;
    }
    g->nfams = k;
    int rc = 0;
    b->refs = 0;
    for (pfamily *f = b->head; f; f = f->next) {
        if (name_add(p, f)) {
            rc = BASE_E_NOMEM;
            continue; /* the family is not served; the batch keeps it */
        }
        f->group = g;
        g->fams[g->nfams++] = f;
        g->nseries += f->nm;
        p->nseries += f->nm;
        b->refs++;
    }
    if (g->nfams > 1) qsort(g->fams, g->nfams, sizeof *g->fams, cmp_fam_name);
    g->push_time = now;
    if (b->refs == 0) batch_free(b);
    return rc;
}

static int method_of(const char *m) {
    if (!m) return MT_OTHER;
    if (!strcmp(m, "PUT")) return MT_PUT;
    if (!strcmp(m, "POST")) return MT_POST;
    if (!strcmp(m, "DELETE")) return MT_DELETE;
    return MT_OTHER;
}

/* Content-Type's media type, lower-cased, into out. */
static void media_type(const char *ct, char *out, size_t cap) {
    size_t n = 0;
    while (ct && (*ct == ' ' || *ct == '\t')) ct++;
    for (; ct && *ct && *ct != ';' && *ct != ' ' && n + 1 < cap; ct++)
        out[n++] = (char)(*ct >= 'A' && *ct <= 'Z' ? *ct + 32 : *ct);
    out[n] = '\0';
}

static int handle(agent_push *p, int method, const char *path, const char *content_type, const char *body,
                  size_t len, base_buf *msg, int *reason) {
    preq req = {0};
    base_arena_init(&req.arena, 1024, 0);
    int status = parse_path(p, path, method, &req, msg);
    pbatch *b = NULL;
    if (status != 0) {
        *reason = status == 405 ? R_METHOD : R_PATH;
        goto out;
    }
    if (method == MT_DELETE) {
        pthread_mutex_lock(&p->mu);
        pgroup *g = group_find(p, &req);
        if (g) group_delete(p, g);
        check_invariants(p);
        pthread_mutex_unlock(&p->mu);
        status = 202;
        goto out;
    }
    char mt[128];
    media_type(content_type, mt, sizeof mt);
    expo_format fmt = EXPO_FMT_TEXT;
    if (!strcmp(mt, "application/vnd.google.protobuf")) {
        msgf(msg, "protobuf pushes are not supported; push the text format (Content-Type: text/plain; "
                  "version=0.0.4)\n");
        *reason = R_MEDIA;
        status = 415;
        goto out;
    }
    if (!strcmp(mt, "application/openmetrics-text")) fmt = EXPO_FMT_OPENMETRICS;
    if (len > p->o.max_body) {
        msgf(msg, "push body of %zu bytes is over the limit of %zu bytes\n", len, p->o.max_body);
        *reason = R_BODY_SIZE;
        status = 413;
        goto out;
    }
    int has_ts = 0;
    int rc = build_batch(p, body ? body : "", body ? len : 0, fmt, &req, &b, &has_ts, msg);
    if (rc == BASE_E_NOMEM) {
        status = -1;
        goto out;
    }
    if (rc) {
        *reason = rc == BASE_E_LIMIT ? R_SERIES : R_PARSE;
        status = 400;
        goto out;
    }
    int64_t now_ns;
    double now = unix_now_s(&now_ns);
    b->time_ns = now_ns;
    int replace_all = method == MT_PUT;

    pcheck c = {.p = p, .replace_all = replace_all, .b = b, .nnew = b->nfams};
    c.newf = malloc((b->nfams + 1) * sizeof *c.newf);
    if (!c.newf) {
        status = -1;
        goto out;
    }
    size_t k = 0;
    for (pfamily *f = b->head; f; f = f->next) c.newf[k++] = f;
    qsort(c.newf, k, sizeof *c.newf, cmp_fam_name);

    pthread_mutex_lock(&p->mu);
    pgroup *g = group_find(p, &req);
    c.g = g;
    if (has_ts) {
        msgf(msg, INCONSISTENT "pushed metrics must not have timestamps\n");
        *reason = R_TIMESTAMP;
        set_failure(p, &req, now);
        status = 400;
    } else if ((rc = check(&c, msg, reason)) != 0) {
        if (rc == BASE_E_NOMEM || msg->err)
            status = -1;
        else {
            set_failure(p, &req, now);
            status = 400;
        }
    } else {
        size_t removed = 0;
        if (g) {
            for (size_t i = 0; i < g->nfams; i++)
                if (replace_all || new_family(&c, g->fams[i]->name)) removed += g->fams[i]->nm;
        }
        size_t group_after = (g ? g->nseries : 0) - removed + b->nmetrics;
        size_t total_after = p->nseries - removed + b->nmetrics;
        if (!g && p->ngroups >= p->o.max_groups) {
            msgf(msg, "too many push groups (limit %zu); delete groups that are no longer used\n",
                 p->o.max_groups);
            *reason = R_GROUPS;
            status = 400;
        } else if (group_after > p->o.max_series_per_group || total_after > p->o.max_series) {
            msgf(msg,
                 "push refused: the group would hold %zu series (limit %zu) and all groups %zu (limit %zu)\n",
                 group_after, p->o.max_series_per_group, total_after, p->o.max_series);
            *reason = R_SERIES;
            if (g) g->fail_time = now;
            status = 400;
        } else {
            if (!g) g = group_new(p, &req);
            if (!g)
                status = -1;
            else {
                int arc = apply(p, g, &c, b, now);
                b = NULL; /* owned by the store now */
                status = arc ? -1 : 200;
            }
        }
    }
    check_invariants(p);
    pthread_mutex_unlock(&p->mu);
    free(c.newf);
out:
    batch_free(b);
    base_arena_free(&req.arena);
    return status;
}

int agent_push_handle(agent_push *p, const char *method, const char *path, const char *content_type,
                      const char *body, size_t len, int *ret_status, base_buf *ret_body) {
    int m = method_of(method);
    int reason = R_NONE;
    base_buf msg = BASE_BUF_INIT;
    base_buf_init(&msg, 64 << 10);
    int status = handle(p, m, path, content_type, body, len, &msg, &reason);
    int rc = 0;
    if (status < 0 || (msg.err && msg.err != BASE_E_LIMIT)) {
        status = 500;
        rc = BASE_E_NOMEM;
    }
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < NCODES; i++)
        if (codes[i] == status) p->requests[m][i]++;
    if (reason != R_NONE) p->rejected[reason]++;
    pthread_mutex_unlock(&p->mu);
    if (rc == 0) {
        if (msg.len) base_buf_append(ret_body, msg.data, msg.len);
        *ret_status = status;
    }
    base_buf_free(&msg);
    return rc;
}

/* ---- collect --------------------------------------------------------- */

/* client_golang's metricSorter: by label count, then values in order. */
static int cmp_metric(const void *a, const void *b) {
    const pmetric *x = *(pmetric *const *)a, *y = *(pmetric *const *)b;
    if (x->nlabels != y->nlabels) return x->nlabels < y->nlabels ? -1 : 1;
    for (size_t i = 0; i < x->nlabels; i++) {
        size_t n = x->labels[i].vlen < y->labels[i].vlen ? x->labels[i].vlen : y->labels[i].vlen;
        int c = memcmp(x->labels[i].value, y->labels[i].value, n);
        if (c) return c;
        if (x->labels[i].vlen != y->labels[i].vlen) return x->labels[i].vlen < y->labels[i].vlen ? -1 : 1;
    }
    return 0;
}

static int cmp_group(const void *a, const void *b) {
    const pgroup *x = *(pgroup *const *)a, *y = *(pgroup *const *)b;
    pmetric mx = {.labels = x->slabels, .nlabels = x->nslabels},
            my = {.labels = y->slabels, .nlabels = y->nslabels};
    const pmetric *px = &mx, *py = &my;
    return cmp_metric(&px, &py);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const pname *const *)a)[0]->name, ((const pname *const *)b)[0]->name);
}

static const char *le_label(expo_mset *ms, const char *name, double v) {
    base_buf b = BASE_BUF_INIT;
    base_buf_printf(&b, "%s=\"", name);
    base_buf_double(&b, v);
    base_buf_putc(&b, '"');
    const char *r = b.err ? NULL : expo_mset_strdup(ms, b.data);
    if (b.err) ms->err = b.err;
    base_buf_free(&b);
    return r;
}

static void emit_family(expo_mset *ms, const pname *e, pmetric **buf) {
    const pfamily *hf = e->fams[0];
    size_t k = 0;
    for (size_t i = 0; i < e->nfams; i++) {
        const pfamily *f = e->fams[i];
        if (f->batch->time_ns > hf->batch->time_ns) hf = f;
        for (pmetric *m = f->head; m; m = m->next) buf[k++] = m;
    }
    qsort(buf, k, sizeof *buf, cmp_metric);
    expo_family *ef = expo_mset_family(ms, expo_mset_strdup(ms, e->name), e->type,
                                       hf->help ? expo_mset_strdup(ms, hf->help) : NULL, NULL);
    for (size_t i = 0; i < k; i++) {
        pmetric *m = buf[i];
        const char *l = expo_mset_strdup(ms, m->rendered);
        switch (e->type) {
        case EXPO_SUMMARY:
            for (size_t q = 0; q < m->nqb; q++)
                expo_mset_add(ms, ef, "", l, le_label(ms, "quantile", m->qb_bound[q]), m->qb_value[q]);
            expo_mset_add(ms, ef, "_sum", l, NULL, m->sum);
            expo_mset_add(ms, ef, "_count", l, NULL, m->count);
            break;
        case EXPO_HISTOGRAM: {
            int inf = 0;
            for (size_t q = 0; q < m->nqb; q++) {
                expo_mset_add(ms, ef, "_bucket", l, le_label(ms, "le", m->qb_bound[q]), m->qb_value[q]);
                if (isinf(m->qb_bound[q]) && m->qb_bound[q] > 0) inf = 1;
            }
            if (!inf) expo_mset_add(ms, ef, "_bucket", l, "le=\"+Inf\"", m->count);
            expo_mset_add(ms, ef, "_sum", l, NULL, m->sum);
            expo_mset_add(ms, ef, "_count", l, NULL, m->count);
            break;
        }
        default: expo_mset_add(ms, ef, "", l, NULL, m->value); break;
        }
    }
}

static void emit_push_times(agent_push *p, expo_mset *ms, int fail, pgroup **gs) {
    const agent_metric *c = p->cat[fail ? SM_PUSH_FAIL : SM_PUSH_TIME];
    expo_family *f = expo_mset_family(ms, c->name, c->type, c->help, NULL);
    for (size_t i = 0; i < p->ngroups; i++)
        expo_mset_add(ms, f, "", expo_mset_strdup(ms, gs[i]->rendered), NULL,
                      fail ? gs[i]->fail_time : gs[i]->push_time);
}

int agent_push_collect(void *ctx, expo_mset *ms) {
    agent_push *p = ctx;
    pthread_mutex_lock(&p->mu);
    /* self metrics */
    const agent_metric *c = p->cat[SM_REQUESTS];
    expo_family *f = expo_mset_family(ms, c->name, c->type, c->help, c->unit);
    for (int m = 0; m < MT__N; m++)
        for (size_t i = 0; i < NCODES; i++) {
            if (!p->requests[m][i]) continue;
            char code[16];
            snprintf(code, sizeof code, "%d", codes[i]);
            expo_mset_add(ms, f, "", method_label[m], expo_mset_labels(ms, "code", code, NULL),
                          (double)p->requests[m][i]);
        }
    c = p->cat[SM_REJECTED];
    f = expo_mset_family(ms, c->name, c->type, c->help, c->unit);
    for (int r = 0; r < R__N; r++) expo_mset_add(ms, f, "", reject_label[r], NULL, (double)p->rejected[r]);
    c = p->cat[SM_GROUPS];
    expo_mset_add(ms, expo_mset_family(ms, c->name, c->type, c->help, c->unit), "", NULL, NULL,
                  (double)p->ngroups);
    c = p->cat[SM_SERIES];
    expo_mset_add(ms, expo_mset_family(ms, c->name, c->type, c->help, c->unit), "", NULL, NULL,
                  (double)p->nseries);

    int rc = 0;
    pname **names = malloc((p->nnames + 1) * sizeof *names);
    pmetric **buf = malloc((p->nseries + 1) * sizeof *buf);
    pgroup **gs = malloc((p->ngroups + 1) * sizeof *gs);
    if (!names || !buf || !gs) {
        rc = BASE_E_NOMEM;
    } else {
        size_t n = 0;
        for (size_t i = 0; i < p->ncap; i++)
            for (pname *e = p->ntab[i]; e; e = e->hnext) names[n++] = e;
        qsort(names, n, sizeof *names, cmp_name);
        size_t ng = 0;
        for (pgroup *g = p->groups; g; g = g->next) gs[ng++] = g;
        qsort(gs, ng, sizeof *gs, cmp_group);
        int done_fail = 0, done_time = 0;
        for (size_t i = 0; i <= n; i++) {
            const char *nm = i < n ? names[i]->name : NULL;
            if (!done_fail && ng && (!nm || strcmp(nm, PUSH_FAIL_NAME) > 0)) {
                emit_push_times(p, ms, 1, gs);
                done_fail = 1;
            }
            if (!done_time && ng && (!nm || strcmp(nm, PUSH_TIME_NAME) > 0)) {
                emit_push_times(p, ms, 0, gs);
                done_time = 1;
            }
            if (nm) emit_family(ms, names[i], buf);
        }
    }
    free(names);
    free(buf);
    free(gs);
    pthread_mutex_unlock(&p->mu);
    return rc ? rc : ms->err;
}

/* ---- lifetime -------------------------------------------------------- */

void agent_push_opts_init(agent_push_opts *o) {
    o->max_body = 16 << 20;
    o->max_groups = 1000;
    o->max_series_per_group = 10000;
    o->max_series = 100000;
    o->max_labels = 64;
    o->max_path = 8192;
}

int agent_push_new(const agent_push_opts *opts, agent_push **ret, char *err, size_t errlen) {
    agent_push_opts d;
    agent_push_opts_init(&d);
    agent_push *p = calloc(1, sizeof *p);
    if (!p) return BASE_E_NOMEM;
    p->o = opts ? *opts : d;
#define DEF(f)                                                                                               \
    if (!p->o.f) p->o.f = d.f;
    DEF(max_body)
    DEF(max_groups)
    DEF(max_series_per_group)
    DEF(max_series)
    DEF(max_labels)
    DEF(max_path)
#undef DEF
    for (int i = 0; i < SM__N; i++) {
        p->cat[i] = agent_catalog_find(self_names[i]);
        if (!p->cat[i]) {
            if (err && errlen) snprintf(err, errlen, "push: %s missing from the catalog", self_names[i]);
            free(p);
            return BASE_E_INVAL;
        }
    }
    pthread_mutex_init(&p->mu, NULL);
    *ret = p;
    return 0;
}

void agent_push_free(agent_push *p) {
    if (!p) return;
    while (p->groups) group_delete(p, p->groups);
    for (size_t i = 0; i < p->ncap; i++)
        for (pname *e = p->ntab[i], *nx; e; e = nx) {
            nx = e->hnext;
            free(e->fams);
            free(e);
        }
    free(p->ntab);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
