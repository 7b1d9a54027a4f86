/* decode.c -- remote write 1.0 bodies in (remote_rx_decode) and out
 * (remote_rx_encode, for tests and fuzzing): see decode.h for the rules.
 *
 * DESIGN. Three stages, each bounded before it allocates:
 *   1. snappy: snappy_uncompressed_length reads the block's length header;
 *      over lim->max_decoded is BASE_E_LIMIT before any allocation, then
 *      snappy_uncompress must produce exactly that many bytes;
 *   2. protobuf-c: prometheus__write_request__unpack with an allocator
 *      that counts every allocation (plus malloc's overhead) against
 *      lim->max_unpacked and refuses past it, so a crafted body cannot
 *      make protobuf-c's structures grow without bound; a refusal is told
 *      apart from malformed input and from a real allocation failure by
 *      the allocator's flags;
 *   3. the view: one labels_builder pass per series (empty values skipped
 *      before they reach the builder, so `job=""` next to `job="x"` is no
 *      duplicate, as 2.42's WithoutEmpty-then-check), the samples copied
 *      into one array, messages for bad series into one buffer.
 * Invariant: after stage 3 nothing points into the body, the decompressed
 * bytes or the protobuf-c messages; all three are freed before return.
 *
 * The generated header (<build>/gen/remote/prompb.pb-c.h) is included
 * here only, never from decode.h.
 */
#include "remote/decode.h"

#include <protobuf-c/protobuf-c.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "remote/prompb.pb-c.h" /* generated into <build>/gen/remote */

/* TimeSeries field 4: native histograms (prompb.proto leaves it out). */
#define TS_FIELD_HISTOGRAMS 4u
/* What malloc adds to each block, counted against the budget. */
#define MALLOC_OVERHEAD     16u

void remote_rx_limits_default(remote_rx_limits *l) {
    l->max_compressed = REMOTE_RX_MAX_COMPRESSED;
    l->max_decoded = REMOTE_RX_MAX_DECODED;
    l->max_unpacked = REMOTE_RX_MAX_UNPACKED;
}

/* ---- the counting allocator ------------------------------------------------ */

typedef struct budget {
    size_t used, max;
    int over;  /* refused: past max */
    int nomem; /* malloc failed */
} budget;

static void *budget_alloc(void *data, size_t n) {
    budget *b = data;
    size_t cost = n + MALLOC_OVERHEAD;
    if (cost < n || cost > b->max - b->used) {
        b->over = 1;
        return NULL;
    }
    void *p = malloc(n ? n : 1);
    if (!p) {
        b->nomem = 1;
        return NULL;
    }
    b->used += cost;
    return p;
}

static void budget_free(void *data, void *p) {
    (void)data;
    free(p);
}

/* ---- the view ---------------------------------------------------------------- */

typedef struct rx_priv {
    remote_rx_sample *samples;
    char *msgs; /* every series' message, NUL-separated */
} rx_priv;

void remote_rx_free(remote_rx_request *r) {
    if (!r) return;
    for (size_t i = 0; i < r->nseries; i++) labels_unref(r->series[i].ls);
    free(r->series);
    rx_priv *p = r->priv;
    if (p) {
        free(p->samples);
        free(p->msgs);
        free(p);
    }
    memset(r, 0, sizeof *r);
}

static base_str bin_str(ProtobufCBinaryData d) {
    return (base_str){d.len ? (const char *)d.data : "", d.len};
}

static int str_cmp(const void *a, const void *b) {
    const base_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Why the builder refused a series' labels (the rare path): 2.42's
 * duplicate check on the sorted names first, then what kelvin cannot
 * hold. Appends the message to msgs; returns the verdict, or BASE_E_NOMEM. */
static int classify(const Prometheus__TimeSeries *ts, int brc, const char *berr, base_buf *msgs) {
    size_t n = 0;
    base_str *names = malloc((ts->n_labels ? ts->n_labels : 1) * sizeof *names);
    if (!names) return BASE_E_NOMEM;
    int empty_name = 0;
    for (size_t i = 0; i < ts->n_labels; i++) {
        if (ts->labels[i]->value.len == 0) continue;
        names[n] = bin_str(ts->labels[i]->name);
        empty_name |= names[n].n == 0;
        n++;
    }
    qsort(names, n, sizeof *names, str_cmp);
    int verdict = REMOTE_RX_UNSUPPORTED;
    for (size_t i = 1; i < n; i++)
        if (str_cmp(&names[i - 1], &names[i]) == 0) {
            /* 2.42: errors.Wrap(ErrInvalidSample, fmt.Sprintf(`label name "%s" is not unique`, l)) */
            base_buf_puts(msgs, "label name \"");
            base_buf_append(msgs, names[i].p, names[i].n);
            base_buf_puts(msgs, "\" is not unique: invalid sample");
            verdict = REMOTE_RX_DUPLICATE;
            break;
        }
    if (verdict == REMOTE_RX_UNSUPPORTED) {
        if (empty_name)
            base_buf_puts(msgs, "a label with an empty name: kelvin cannot store the series");
        else if (brc == BASE_E_LIMIT && n > LABELS_MAX_PAIRS)
            base_buf_printf(msgs, "more than %d labels: kelvin cannot store the series", LABELS_MAX_PAIRS);
        else
            base_buf_printf(msgs, "%s: kelvin cannot store the series", berr);
    }
    free(names);
    return verdict;
}

static size_t histograms_of(const Prometheus__TimeSeries *ts) {
    size_t n = 0;
    for (unsigned i = 0; i < ts->base.n_unknown_fields; i++)
        n += ts->base.unknown_fields[i].tag == TS_FIELD_HISTOGRAMS;
    return n;
}

/* Stage 3 (see DESIGN). 0 or BASE_E_NOMEM. */
static int build_view(const Prometheus__WriteRequest *wr, remote_rx_request *r, char *err, size_t errlen) {
    size_t nsamples = 0;
    for (size_t i = 0; i < wr->n_timeseries; i++) nsamples += wr->timeseries[i]->n_samples;
    rx_priv *p = calloc(1, sizeof *p);
    r->priv = p;
    r->series = calloc(wr->n_timeseries ? wr->n_timeseries : 1, sizeof *r->series);
    if (p) p->samples = malloc((nsamples ? nsamples : 1) * sizeof *p->samples);
    if (!p || !r->series || !p->samples) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    r->nmetadata = wr->n_metadata;

    base_buf msgs;
    base_buf_init(&msgs, 0);
    base_buf_putc(&msgs, '\0'); /* offset 0: "" */
    size_t *msg_at = calloc(wr->n_timeseries ? wr->n_timeseries : 1, sizeof *msg_at);
    labels_builder b;
    labels_builder_init(&b);
    int rc = msg_at ? 0 : BASE_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < wr->n_timeseries && rc == 0; i++) {
        const Prometheus__TimeSeries *ts = wr->timeseries[i];
        remote_rx_series *s = &r->series[i];
        r->nseries = i + 1;
        labels_builder_reset(&b);
        int brc = 0;
        for (size_t j = 0; j < ts->n_labels && brc == 0; j++)
            if (ts->labels[j]->value.len) /* 2.42: WithoutEmpty */
                brc = labels_builder_add(&b, bin_str(ts->labels[j]->name), bin_str(ts->labels[j]->value));
        char berr[160] = "";
        labels_set *ls = NULL;
        if (brc == 0) brc = labels_builder_finish(&b, 0, &ls, berr, sizeof berr);
        if (brc == BASE_E_NOMEM) {
            rc = BASE_E_NOMEM;
            break;
        }
        if (brc == 0 && labels_len(ls) == 0) {
            labels_unref(ls);
            s->err = REMOTE_RX_EMPTY;
            msg_at[i] = msgs.len;
            base_buf_puts(&msgs, "empty labelset: invalid sample"); /* 2.42's words */
            base_buf_putc(&msgs, '\0');
        } else if (brc == 0) {
            s->ls = ls;
        } else {
            if (brc == BASE_E_LIMIT && !berr[0]) snprintf(berr, sizeof berr, "%s", base_strerror(brc));
            msg_at[i] = msgs.len;
            int v = classify(ts, brc, berr, &msgs);
            if (v < 0) {
                rc = v;
                break;
            }
            s->err = (remote_rx_label_err)v;
            base_buf_putc(&msgs, '\0');
        }
        s->samples = p->samples + k;
        s->nsamples = ts->n_samples;
        for (size_t j = 0; j < ts->n_samples; j++, k++) {
            p->samples[k].t = ts->samples[j]->timestamp;
            p->samples[k].v = ts->samples[j]->value;
        }
        s->nexemplars = ts->n_exemplars;
        s->nhistograms = histograms_of(ts);
        r->nsamples += s->nsamples;
        r->nexemplars += s->nexemplars;
        r->nhistograms += s->nhistograms;
    }
    labels_builder_free(&b);
    if (rc == 0 && base_buf_err(&msgs)) rc = BASE_E_NOMEM;
    if (rc == 0) {
        p->msgs = base_buf_steal(&msgs, NULL);
        for (size_t i = 0; i < r->nseries; i++) r->series[i].msg = p->msgs + msg_at[i];
    }
    base_buf_free(&msgs);
    free(msg_at);
    if (rc != 0) {
        /* messages not placed yet: point every series at a static "" */
        for (size_t i = 0; i < r->nseries; i++) r->series[i].msg = "";
        return base_errf(err, errlen, rc, "out of memory");
    }
    return 0;
}

int remote_rx_decode(const void *body, size_t len, const remote_rx_limits *lim, remote_rx_request *ret,
                     char *err, size_t errlen) {
    remote_rx_limits def;
    if (!lim) {
        remote_rx_limits_default(&def);
        lim = &def;
    }
    if (len > lim->max_compressed)
        return base_errf(err, errlen, BASE_E_LIMIT,
                         "snappy: compressed body of %zu bytes is over the limit of %zu bytes", len,
                         lim->max_compressed);
    const char *in = len ? body : "";
    size_t dlen = 0;
    /* Go's snappy answers every malformed block with ErrCorrupt */
    if (len == 0 || snappy_uncompressed_length(in, len, &dlen) != SNAPPY_OK)
        return base_errf(err, errlen, BASE_E_PARSE, "snappy: corrupt input");
    if (dlen > lim->max_decoded)
        return base_errf(err, errlen, BASE_E_LIMIT,
                         "snappy: decoded block is too large: %zu bytes, the limit is %zu bytes", dlen,
                         lim->max_decoded);
    char *dec = malloc(dlen ? dlen : 1);
    if (!dec) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    size_t got = dlen;
    if (dlen && (snappy_uncompress(in, len, dec, &got) != SNAPPY_OK || got != dlen)) {
        free(dec);
        return base_errf(err, errlen, BASE_E_PARSE, "snappy: corrupt input");
    }
    if (!dlen && snappy_validate_compressed_buffer(in, len) != SNAPPY_OK) {
        free(dec);
        return base_errf(err, errlen, BASE_E_PARSE, "snappy: corrupt input");
    }

    budget bud = {.max = lim->max_unpacked};
    ProtobufCAllocator alloc = {.alloc = budget_alloc, .free = budget_free, .allocator_data = &bud};
    Prometheus__WriteRequest *wr = prometheus__write_request__unpack(&alloc, dlen, (const uint8_t *)dec);
    free(dec);
    if (!wr) {
        if (bud.nomem) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        if (bud.over)
            return base_errf(err, errlen, BASE_E_LIMIT,
                             "proto: request too large: decoding it needs more than %zu bytes of memory",
                             lim->max_unpacked);
        return base_errf(err, errlen, BASE_E_PARSE, "proto: cannot decode prometheus.WriteRequest");
    }
    remote_rx_request r;
    memset(&r, 0, sizeof r);
    r.decoded_bytes = dlen;
    int rc = build_view(wr, &r, err, errlen);
    prometheus__write_request__free_unpacked(wr, &alloc);
    if (rc != 0) {
        remote_rx_free(&r);
        return rc;
    }
    *ret = r;
    return 0;
}

/* ---- encoding ---------------------------------------------------------------- */

int remote_rx_encode(const remote_rx_request *r, base_buf *out) {
    size_t nlabels = 0, nsamples = 0;
    for (size_t i = 0; i < r->nseries; i++) {
        if (r->series[i].ls) nlabels += labels_len(r->series[i].ls);
        nsamples += r->series[i].nsamples;
    }
    Prometheus__TimeSeries *ts = calloc(r->nseries ? r->nseries : 1, sizeof *ts);
    Prometheus__TimeSeries **tsp = calloc(r->nseries ? r->nseries : 1, sizeof *tsp);
    Prometheus__Label *lb = calloc(nlabels ? nlabels : 1, sizeof *lb);
    Prometheus__Label **lbp = calloc(nlabels ? nlabels : 1, sizeof *lbp);
    Prometheus__Sample *sm = calloc(nsamples ? nsamples : 1, sizeof *sm);
    Prometheus__Sample **smp = calloc(nsamples ? nsamples : 1, sizeof *smp);
    uint8_t *pb = NULL;
    int rc = ts && tsp && lb && lbp && sm && smp ? 0 : BASE_E_NOMEM;
    if (rc == 0) {
        Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
        wr.n_timeseries = r->nseries;
        wr.timeseries = tsp;
        size_t li = 0, si = 0;
        for (size_t i = 0; i < r->nseries; i++) {
            const remote_rx_series *s = &r->series[i];
            prometheus__time_series__init(&ts[i]);
            tsp[i] = &ts[i];
            ts[i].labels = lbp + li;
            ts[i].samples = smp + si;
            if (s->ls) {
                labels_iter it;
                base_str name, value;
                labels_iter_init(&it, s->ls);
                while (labels_iter_next(&it, &name, &value)) {
                    prometheus__label__init(&lb[li]);
                    lb[li].name = (ProtobufCBinaryData){name.n, (uint8_t *)(uintptr_t)name.p};
                    lb[li].value = (ProtobufCBinaryData){value.n, (uint8_t *)(uintptr_t)value.p};
                    lbp[li] = &lb[li];
                    li++;
                    ts[i].n_labels++;
                }
            }
            for (size_t j = 0; j < s->nsamples; j++) {
                prometheus__sample__init(&sm[si]);
                sm[si].timestamp = s->samples[j].t;
                sm[si].value = s->samples[j].v;
                smp[si] = &sm[si];
                si++;
            }
            ts[i].n_samples = s->nsamples;
        }
        size_t n = prometheus__write_request__get_packed_size(&wr);
        pb = malloc(n ? n : 1);
        if (!pb) rc = BASE_E_NOMEM;
        if (rc == 0) {
            prometheus__write_request__pack(&wr, pb);
            size_t max = snappy_max_compressed_length(n);
            if ((rc = base_buf_reserve(out, max + 1)) == 0) {
                size_t clen = max;
                if (snappy_compress((const char *)pb, n, out->data + out->len, &clen) != SNAPPY_OK) {
                    rc = BASE_E_NOMEM; /* only a too small buffer fails, and it is not */
                } else {
                    out->len += clen;
                    out->data[out->len] = '\0';
                }
            }
        }
    }
    free(pb);
    free(smp);
    free(sm);
    free(lbp);
    free(lb);
    free(tsp);
    free(ts);
    return rc;
}
