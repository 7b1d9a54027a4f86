/* func_quantile.c -- quantile() (the quantile aggregation and
 * quantile_over_time) and bucketQuantile() (histogram_quantile over
 * classic `le` buckets), as Prometheus 2.42's promql/quantile.go.
 *
 * Design: quantile sorts the values (NaN first, as vectorByValueHeap's
 * Less puts it) and interpolates linearly between the two ranks around
 * q * (n - 1). bucketQuantile sorts the buckets by bound, requires the
 * highest to be +Inf, merges equal bounds (coalesceBuckets), raises any
 * count below an earlier one to it (ensureMonotonic, over every bucket),
 * finds the first bucket whose count reaches q * total, and interpolates
 * inside it -- from 0 for the lowest bucket when its bound is positive,
 * returning the bound itself when it is not, and the second-highest
 * bound when the rank falls in the +Inf bucket.
 *
 * Invariants: both sort their input in place and allocate nothing.
 */
#include <math.h>
#include <stdlib.h>

#include "promql/func.h"
#include "promql/func_int.h"

static int cmp_nan_first(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    int na = isnan(a), nb = isnan(b);
    if (na || nb) return nb - na; /* NaN sorts before everything */
    return (a > b) - (a < b);
}

double pq_quantile(double q, double *vals, size_t n) {
    if (n == 0 || isnan(q)) return NAN;
    if (q < 0) return -INFINITY;
    if (q > 1) return INFINITY;
    qsort(vals, n, sizeof *vals, cmp_nan_first);

    double cnt = (double)n;
    /* between two samples: their weighted average */
    double rank = q * (cnt - 1);
    double lower = pq__go_max(0, floor(rank));
    double upper = pq__go_min(cnt - 1, lower + 1);
    double weight = rank - floor(rank);
    return vals[(size_t)lower] * (1 - weight) + vals[(size_t)upper] * weight;
}

static int cmp_bucket(const void *pa, const void *pb) {
    double a = ((const pq_bucket *)pa)->upper, b = ((const pq_bucket *)pb)->upper;
    return (a > b) - (a < b);
}

double pq_bucket_quantile(double q, pq_bucket *b, size_t n) {
    if (isnan(q)) return NAN;
    if (q < 0) return -INFINITY;
    if (q > 1) return INFINITY;
    if (n == 0) return NAN;
    qsort(b, n, sizeof *b, cmp_bucket);
    if (!(isinf(b[n - 1].upper) && b[n - 1].upper > 0)) return NAN;

    /* coalesceBuckets: merge equal bounds */
    pq_bucket last = b[0];
    size_t w = 0;
    for (size_t i = 1; i < n; i++) {
        if (b[i].upper == last.upper) {
            last.count += b[i].count;
        } else {
            b[w++] = last;
            last = b[i];
        }
    }
    b[w++] = last;
    n = w;

    /* ensureMonotonic: the envelope of the counts */
    double max = b[0].count;
    for (size_t i = 1; i < n; i++) {
        if (b[i].count > max)
            max = b[i].count;
        else if (b[i].count < max)
            b[i].count = max;
    }

    if (n < 2) return NAN;
    double observations = b[n - 1].count;
    if (observations == 0) return NAN;
    double rank = q * observations;
    /* sort.Search over [0, n-1): the first bucket with count >= rank */
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (!(b[mid].count >= rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;

    if (k == n - 1) return b[n - 2].upper;
    if (k == 0 && b[0].upper <= 0) return b[0].upper;
    double bucket_start = 0;
    double bucket_end = b[k].upper;
    double count = b[k].count;
    if (k > 0) {
        bucket_start = b[k - 1].upper;
        count -= b[k - 1].count;
        rank -= b[k - 1].count;
    }
    return bucket_start + (bucket_end - bucket_start) * (rank / count);
}
