/* decode.h -- the remote write receiver's decoder: a POST /api/v1/write
 * body (Prometheus remote write 1.0: a snappy block holding a protobuf
 * prometheus.WriteRequest) turned into a validated view the server
 * appends from (src/server/api_write.c).
 *
 * PIPELINE. body -> snappy block decompression (libsnappy; the claimed
 * length is checked against a limit before anything is allocated) ->
 * protobuf-c unpack of prometheus.WriteRequest (src/remote/prompb.proto;
 * every allocation goes through a counting allocator with a budget) ->
 * per series: a labels_set (interned, sorted) and its samples copied into
 * one flat array. The decompressed bytes and the protobuf-c messages are
 * freed before remote_rx_decode returns; what is left is the view.
 *
 * LABELS, as Prometheus 2.42's receiver stores them (checked against the
 * real 2.42 binary: tests/compat/remote_write_in.py; 2.42 validates no
 * name and no UTF-8 in remote write, and its head drops empty values and
 * refuses repeated names):
 *   - labels with an empty value are dropped (2.42: lset.WithoutEmpty());
 *   - the rest are sorted by name (2.42's labelProtosToLabels sorts), so
 *     unsorted input is fine;
 *   - a name given twice (after dropping empty values): the series is
 *     REMOTE_RX_DUPLICATE with 2.42's message `label name "job" is not
 *     unique: invalid sample` (the name as 2.42's "%s" prints it);
 *   - nothing left: REMOTE_RX_EMPTY, `empty labelset: invalid sample`;
 *   - anything else is stored as sent, as 2.42 does: no __name__ needed,
 *     names outside [a-zA-Z_][a-zA-Z0-9_]*, bytes that are not UTF-8;
 *   - what kelvin's label sets cannot hold although 2.42 stores it -- an
 *     empty label name, a name or value over LABELS_STRING_MAX bytes, more
 *     than LABELS_MAX_PAIRS labels -- makes the series
 *     REMOTE_RX_UNSUPPORTED (the server drops that series and counts it,
 *     as later Prometheus versions do with invalid labels).
 * Whether a bad series fails the request is the server's call (2.42
 * decides it per sample, in request order): the decoder only classifies.
 *
 * ALSO IN A REQUEST. Samples are kept as sent (t in ms, v's bits exact:
 * stale markers survive), in order, duplicates and disorder included: the
 * server applies 2.42's rules. Exemplars and metadata are counted and
 * dropped (kelvin keeps neither; 2.42 drops exemplars too unless its
 * exemplar storage is enabled). Native histograms (TimeSeries field 4,
 * unknown to our .proto) are counted per series from protobuf-c's unknown
 * fields: 2.42 without its native-histograms feature answers 500 "native
 * histograms are disabled", and so does the server. Other unknown fields
 * are skipped, as protobuf does.
 *
 * LIMITS (remote_rx_limits; defaults REMOTE_RX_MAX_*), all answered 400
 * by the server -- what 2.42 answers for a body it cannot decode
 * (Prometheus itself has no limit beyond snappy's 4 GiB and memory):
 *   compressed body   32 MiB (VictoriaMetrics' -maxInsertRequestSize;
 *                     bodies over the server's --web.max-request-size,
 *                     64 MiB by default, get 413 from src/http first);
 *   decompressed      64 MiB (checked on snappy's length header, before
 *                     the allocation);
 *   unpacked memory   512 MiB of protobuf-c allocations: protobuf needs
 *                     ~3-6x the decoded bytes for real requests but up to
 *                     ~32x for crafted ones (a 2-byte empty Label becomes
 *                     a 56-byte struct and a pointer).
 * Real senders send far less (Prometheus 2.42: 500 samples per request
 * by default, ~50 KiB).
 *
 * ERRORS (remote_rx_decode): BASE_E_PARSE, the body does not decode
 * (messages: Go snappy's "snappy: corrupt input"; protobuf-c gives no
 * detail, so "proto: cannot decode prometheus.WriteRequest"); BASE_E_LIMIT,
 * over a limit (the message names it); BASE_E_NOMEM. The server answers
 * PARSE and LIMIT with 400, NOMEM with 500.
 *
 * OWNERSHIP. A remote_rx_request owns its series array, the samples, the
 * messages and one reference to each labels_set; remote_rx_free releases
 * all. Nothing refers to the body after remote_rx_decode returns.
 * Thread-safety: none needed; one request per caller.
 */
#ifndef KELVIN_REMOTE_DECODE_H
#define KELVIN_REMOTE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "labels/labels.h"

#define REMOTE_RX_MAX_COMPRESSED ((size_t)32 << 20)
#define REMOTE_RX_MAX_DECODED    ((size_t)64 << 20)
#define REMOTE_RX_MAX_UNPACKED   ((size_t)512 << 20)

typedef struct remote_rx_limits {
    size_t max_compressed; /* body bytes */
    size_t max_decoded;    /* snappy's decompressed length */
    size_t max_unpacked;   /* bytes protobuf-c may allocate */
} remote_rx_limits;

/* The REMOTE_RX_MAX_* defaults. */
void remote_rx_limits_default(remote_rx_limits *l);

typedef struct remote_rx_sample {
    int64_t t; /* ms */
    double v;
} remote_rx_sample;

typedef enum remote_rx_label_err {
    REMOTE_RX_OK = 0,
    REMOTE_RX_EMPTY,       /* no label left: 2.42 500 "empty labelset: invalid sample" */
    REMOTE_RX_DUPLICATE,   /* a name twice: 2.42 500 `label name "x" is not unique: invalid sample` */
    REMOTE_RX_UNSUPPORTED, /* 2.42 stores it, kelvin's label sets cannot (see LABELS) */
} remote_rx_label_err;

typedef struct remote_rx_series {
    labels_set *ls;                  /* sorted, empty values dropped; NULL unless err == REMOTE_RX_OK */
    remote_rx_label_err err;         /* the labels' verdict */
    const char *msg;                 /* err's message ("" when OK), owned by the request */
    const remote_rx_sample *samples; /* as sent, in order */
    size_t nsamples;
    size_t nexemplars;  /* dropped */
    size_t nhistograms; /* native histograms (field 4), not stored */
} remote_rx_series;

typedef struct remote_rx_request {
    remote_rx_series *series;
    size_t nseries;
    size_t nsamples, nexemplars, nhistograms, nmetadata; /* totals */
    size_t decoded_bytes;                                /* the protobuf's size */
    void *priv;                                          /* samples and messages */
} remote_rx_request;

/* Decodes body[0..len) (see PIPELINE) with lim (NULL: the defaults) into
 * *ret. 0, or BASE_E_PARSE / BASE_E_LIMIT / BASE_E_NOMEM with a message
 * in err; *ret is written only on success (free it with remote_rx_free). */
int remote_rx_decode(const void *body, size_t len, const remote_rx_limits *lim, remote_rx_request *ret,
                     char *err, size_t errlen);
void remote_rx_free(remote_rx_request *r);

/* The other way, for tests, fuzzing and tools: a snappy-compressed
 * prometheus.WriteRequest of r's series (labels as stored in ls, samples
 * as held, except -0, which goes out as 0: proto3 leaves a zero double
 * out of the message, sign and all, as Prometheus's own sender does; a
 * series without a label set is written without labels; exemplars,
 * histograms and metadata are not written), appended to out.
 * 0, or BASE_E_NOMEM / BASE_E_LIMIT (out's sticky error). */
int remote_rx_encode(const remote_rx_request *r, base_buf *out);

#endif
