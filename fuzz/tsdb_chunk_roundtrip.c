/* fuzz/tsdb_chunk_roundtrip.c -- bytes -> a sample sequence -> chunks ->
 * samples, which must be identical bit for bit (src/tsdb/chunk*.c).
 *
 * Input: byte 0 picks the chunk size (1..255 samples, or 65535) and the
 * encoding; then records of one opcode byte and its operands. The low
 * nibble of the opcode says how the timestamp moves (steady 15 s, jitter,
 * a gap, a huge jump, one of the last operand's raw 8 bytes, a step back
 * that the appender must refuse), the high nibble what the value is (the
 * previous one, a small integer, a short decimal, a counter step, a NaN
 * payload such as the stale marker, +-Inf, -0.0, a denormal, raw bits).
 * Every chunk is cut when full, decoded and compared; a snapshot of the
 * open chunk is checked now and then; a refused append must change
 * nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "tsdb/chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAXS = 4096 };

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static uint64_t take(rd *r, unsigned n) {
    uint64_t x = 0;
    for (unsigned i = 0; i < n; i++) x = x << 8 | (r->p < r->end ? *r->p++ : 0);
    return x;
}

static void check(const base_buf *out, const int64_t *t, const double *v, size_t n) {
    tsdb_chunk_it it;
    if (tsdb_chunk_it_init(&it, (const uint8_t *)out->data, out->len)) abort();
    size_t i = 0;
    while (tsdb_chunk_it_next(&it)) {
        if (i >= n || it.t != t[i] || memcmp(&it.v, &v[i], sizeof v[i])) abort();
        i++;
    }
    if (i != n || tsdb_chunk_it_err(&it) || tsdb_chunk_it_count(&it) != n) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    rd r = {data + 1, data + size};
    unsigned max = data[0] & 0x7f;
    max = max == 0x7f ? TSDB_CHUNK_MAX_SAMPLES : max + 1;
    unsigned flags = (data[0] & 0x80) ? TSDB_CHUNK_PROM_XOR : 0;
    static int64_t t[MAXS];
    static double v[MAXS];
    size_t n = 0, start = 0;
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, max, flags);
    base_buf out = BASE_BUF_INIT;
    uint64_t tc = 1700000000000ull, vb = 0;
    double counter = 0;
    while (r.p < r.end && n < MAXS) {
        uint8_t op = (uint8_t)take(&r, 1);
        int back = 0;
        switch (op & 15) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4: tc += 15000; break;
        case 5:
        case 6: tc += 15000 + take(&r, 1) % 21 - 10; break;
        case 7: tc += 15000 * (1 + take(&r, 1) % 8); break;
        case 8: tc += take(&r, 2) + 1; break;
        case 9: tc += (take(&r, 8) >> 1) + 1; break;
        case 10: tc = take(&r, 8); break;
        case 11: back = 1; break;
        default: tc += 1; break;
        }
        double x;
        switch (op >> 4) {
        case 0:
        case 1:
        case 2: x = n ? v[n - 1] : 0; break;
        case 3: x = (double)(int8_t)take(&r, 1); break;
        case 4: x = (double)(int16_t)take(&r, 2) / 1000.0; break;
        case 5: x = (double)(int32_t)take(&r, 4) / 1e6; break;
        case 6:
            counter += (double)take(&r, 2);
            x = counter;
            break;
        case 7:
            counter += (double)take(&r, 1) / 100.0;
            x = counter;
            break;
        case 8:
            vb = 0x7ff0000000000002ull;
            memcpy(&x, &vb, 8);
            break; /* stale marker */
        case 9:
            vb = 0x7ff0000000000000ull | take(&r, 8);
            memcpy(&x, &vb, 8);
            break; /* NaN / +Inf */
        case 10:
            vb = 0x8000000000000000ull | (take(&r, 1) ? 0 : 1);
            memcpy(&x, &vb, 8);
            break;
        case 11:
            vb = take(&r, 2);
            memcpy(&x, &vb, 8);
            break; /* denormals */
        case 12: x = (double)(int64_t)(take(&r, 8) >> (take(&r, 1) % 64)); break;
        default:
            vb = take(&r, 8);
            memcpy(&x, &vb, 8);
            break;
        }
        if (back || (n > start && (int64_t)tc <= t[n - 1])) {
            /* refused, and nothing changes */
            int64_t last = n > start ? t[n - 1] : 0;
            int64_t bt = last > INT64_MIN + 2 ? last - (int64_t)(op % 3) : last;
            if (n > start) {
                if (tsdb_chunk_app_append(&a, bt, x) != BASE_E_RANGE) abort();
                if (tsdb_chunk_app_count(&a) != n - start) abort();
                tc = (uint64_t)t[n - 1];
            }
            continue;
        }
        int err = tsdb_chunk_app_append(&a, (int64_t)tc, x);
        if (err == BASE_E_LIMIT) {
            if (tsdb_chunk_app_count(&a) != max) abort();
            base_buf_reset(&out);
            if (tsdb_chunk_app_finish(&a, &out)) abort();
            check(&out, t + start, v + start, n - start);
            start = n;
            err = tsdb_chunk_app_append(&a, (int64_t)tc, x);
        }
        if (err) abort();
        t[n] = (int64_t)tc;
        v[n] = x;
        n++;
        if (op == 0x2c) { /* a snapshot of the open chunk */
            base_buf_reset(&out);
            if (tsdb_chunk_app_snapshot(&a, &out)) abort();
            check(&out, t + start, v + start, n - start);
        }
    }
    if (n > start) {
        base_buf_reset(&out);
        if (tsdb_chunk_app_finish(&a, &out)) abort();
        check(&out, t + start, v + start, n - start);
    }
    base_buf_free(&out);
    tsdb_chunk_app_free(&a);
    return 0;
}
