/* func_win.c -- rate, increase, delta, deriv and predict_linear over the
 * windows of one series at many steps at once (pq_fn_range_windows).
 *
 * Why: a range query evaluates the same function over thousands of
 * windows per series, and each window's arithmetic is a chain of
 * dependent divisions (extrapolatedRate) or four compensated sums
 * (linearRegression) whose latency, not the CPU's throughput, sets the
 * pace. The windows of different steps are independent, so eight of them
 * go side by side through AVX-512 lanes: lane j does window j's scalar
 * operations in the scalar order, and IEEE-754 makes every lane's
 * add, multiply, divide and int64 -> double conversion round exactly as
 * the scalar instruction does. The answers are pq_fn_range's to the bit
 * (tests/unit/promql/func_win.c compares the two paths on hostile data).
 * This file is compiled with -ffp-contract=off (the project's flags): a
 * fused multiply-add would round differently from Go.
 *
 * Counter resets: a window's raw difference needs the values before its
 * resets; a prefix count of resets over the series (scratch, counted
 * only when the series decreases somewhere) tells which windows have
 * none (the common case, computed in lanes) and the others take
 * pq__rate_delta's scalar loop.
 *
 * Timestamps alone: the rate family's sampled interval, distance to the
 * start and extrapolation factor are kept in the caller's pq_wtimes and
 * reused for the next series with the same timestamps (a target's
 * series), the same bits as computing them again. Samples: where a
 * group's eight windows start within eight samples, one load and a
 * permute fetch them instead of a gather (gathers dominated the kernels).
 *
 * Without AVX-512F/DQ/VL (checked once at run time), or with
 * pq__fn_windows_vector = 0, every window goes through pq_fn_range.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "promql/func.h"
#include "promql/func_int.h"

int pq__fn_windows_vector = 1;
size_t pq__fn_windows_cached;

void pq_wtimes_free(pq_wtimes *tc) {
    free(tc->sampled);
    tc->sampled = tc->to_start = tc->factor = NULL;
    tc->cap = tc->nw = 0;
    tc->id = 0;
}

int pq_fn_range_windowed(pq_func_id id) {
    return id == PQ_F_RATE || id == PQ_F_INCREASE || id == PQ_F_DELTA || id == PQ_F_DERIV ||
           id == PQ_F_PREDICT_LINEAR;
}

static void put(double *out, uint64_t *bm, uint32_t k, double v) {
    out[k] = v;
    bm[k >> 6] |= (uint64_t)1 << (k & 63);
}

/* Window j's pq_fn_range answer. */
static size_t one(pq_func_id id, const pq_windows *w, size_t j, double *out, uint64_t *bm) {
    uint32_t k = w->k[j], lo = w->lo[j];
    int64_t ts = w->start + (int64_t)k * w->step, maxt = ts - w->off;
    double arg = w->arg ? w->arg[k] : 0, val;
    if (pq_fn_range(id, w->t + lo, w->v + lo, w->hi[j] - lo, maxt - w->range, maxt, ts, &arg, w->arg ? 1 : 0,
                    &val) != 1)
        return 0;
    put(out, bm, k, val);
    return 1;
}

static size_t plain(pq_func_id id, const pq_windows *w, size_t from, double *out, uint64_t *bm) {
    size_t got = 0;
    for (size_t j = from; j < w->nw; j++) got += one(id, w, j, out, bm);
    return got;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VEC_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

/* Scatters the active lanes of a group of eight starting at window j: one
 * store and one bitmap update when the eight are consecutive steps. */
VEC_TARGET static size_t put8(const pq_windows *w, size_t j, __mmask8 m, __m512d val, double *out,
                              uint64_t *bm) {
    uint32_t k0 = w->k[j];
    if (m == 0xff && w->k[j + 7] - k0 == 7) {
        _mm512_storeu_pd(out + k0, val);
        unsigned sh = k0 & 63;
        bm[k0 >> 6] |= (uint64_t)0xff << sh;
        if (sh > 56) bm[(k0 >> 6) + 1] |= (uint64_t)0xff >> (64 - sh);
        return 8;
    }
    double tmp[8];
    _mm512_storeu_pd(tmp, val);
    size_t got = 0;
    for (int l = 0; l < 8; l++)
        if (m >> l & 1) {
            put(out, bm, w->k[j + (size_t)l], tmp[l]);
            got++;
        }
    return got;
}

/* a[idx[l]] (eight-byte elements: int64 or double) in the lanes of m,
 * idx non-decreasing (the windows' first, last or i-th samples): one load
 * and a permute when the eight lie within eight elements of idx[0] = i0
 * (i7 = idx[7]), as they do when several steps fall between samples;
 * else a gather. */
VEC_TARGET static inline __m512i pick8(const void *a, size_t n, __m512i idx, uint32_t i0, uint32_t i7,
                                       __mmask8 m) {
    if (i7 - i0 < 8 && (size_t)i0 + 8 <= n)
        return _mm512_maskz_permutexvar_epi64(m, _mm512_sub_epi64(idx, _mm512_set1_epi64(i0)),
                                              _mm512_loadu_si512((const int64_t *)a + i0));
    return _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), m, idx, a, 8);
}

VEC_TARGET static inline __m512d pick8_pd(const double *v, size_t n, __m512i idx, uint32_t i0, uint32_t i7,
                                          __mmask8 m) {
    return _mm512_castsi512_pd(pick8(v, n, idx, i0, i7, m));
}

/* The step times of windows j..j+7, plus delta: start + k * step + delta. */
VEC_TARGET static __m512i times8(const pq_windows *w, size_t j, int64_t delta) {
    __m512i k = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(w->k + j)));
    return _mm512_add_epi64(_mm512_set1_epi64(w->start + delta),
                            _mm512_mullo_epi64(k, _mm512_set1_epi64(w->step)));
}

/* extrapolatedRate's factor from the window's durations (seconds):
 * (sampled + start part + end part) / sampled, then / per_sec for rate. */
VEC_TARGET static __m512d rate_factor8(__m512d sampled, __m512d avg, __m512d to_start, __m512d to_end,
                                       int is_rate, double per_sec) {
    __m512d threshold = _mm512_mul_pd(avg, _mm512_set1_pd(1.1));
    __m512d half = _mm512_mul_pd(avg, _mm512_set1_pd(0.5)); /* avg / 2 to the bit, without a division */
    __m512d ext = _mm512_add_pd(
        sampled, _mm512_mask_blend_pd(_mm512_cmp_pd_mask(to_start, threshold, _CMP_LT_OQ), half, to_start));
    ext = _mm512_add_pd(
        ext, _mm512_mask_blend_pd(_mm512_cmp_pd_mask(to_end, threshold, _CMP_LT_OQ), half, to_end));
    __m512d factor = _mm512_div_pd(ext, sampled);
    return is_rate ? _mm512_div_pd(factor, _mm512_set1_pd(per_sec)) : factor;
}

static int wtimes_reserve(pq_wtimes *tc, size_t nw) {
    if (tc->cap >= nw) return 0;
    pq_wtimes_free(tc);
    tc->sampled = malloc(3 * nw * sizeof(double));
    if (!tc->sampled) return -1;
    tc->to_start = tc->sampled + nw;
    tc->factor = tc->to_start + nw;
    tc->cap = nw;
    return 0;
}

/* extrapolatedRate over the windows, eight at a time. The arithmetic
 * that depends on timestamps alone comes from w->tc when it holds this
 * function's figures for the same timestamps; what depends on values --
 * the raw difference, counter resets, and a counter's distance to zero
 * (which replaces the distance to the start when shorter: then the
 * group is computed whole) -- is computed per series. */
VEC_TARGET static size_t rate_vec(pq_func_id id, const pq_windows *w, double *out, uint64_t *bm) {
    int is_counter = id != PQ_F_DELTA, is_rate = id == PQ_F_RATE;
    /* resets before sample i (counters): scratch[i], counted only where a
     * pass in lanes finds a decrease (most series have none) */
    uint32_t nresets = 0;
    __mmask8 dec = 0;
    size_t i8 = 1;
    if (is_counter) {
        for (; i8 + 8 <= w->n && !dec; i8 += 8)
            dec = _mm512_cmp_pd_mask(_mm512_loadu_pd(w->v + i8), _mm512_loadu_pd(w->v + i8 - 1), _CMP_LT_OQ);
        for (; i8 < w->n && !dec; i8++) dec = w->v[i8] < w->v[i8 - 1];
    }
    if (dec) {
        w->scratch[0] = 0;
        for (size_t i = 1; i < w->n; i++) {
            nresets += w->v[i] < w->v[i - 1];
            w->scratch[i] = nresets;
        }
    }
    pq_wtimes *tc = w->tc;
    int use = tc && tc->same && tc->id == (int)id && tc->nw == w->nw;
    int fill = tc && !use && wtimes_reserve(tc, w->nw) == 0;
    if (tc && !use) tc->id = 0;
    /* the per-second divisor is the same for every window */
    double per_sec = pq__duration_seconds(w->range);
    const __m512d thousand = _mm512_set1_pd(1000), zero = _mm512_setzero_pd();
    const __m512i range = _mm512_set1_epi64(w->range), one_i = _mm512_set1_epi64(1);
    size_t got = 0, j = 0, cached = 0;
    for (; j + 8 <= w->nw; j += 8) {
        __m256i lo32 = _mm256_loadu_si256((const __m256i *)(w->lo + j));
        __m256i hi32 = _mm256_loadu_si256((const __m256i *)(w->hi + j));
        __m512i lo = _mm512_cvtepu32_epi64(lo32), hi = _mm512_cvtepu32_epi64(hi32);
        __m512i last = _mm512_sub_epi64(hi, one_i);
        __mmask8 m = _mm512_cmpgt_epi64_mask(last, lo); /* >= 2 samples */
        if (!m) continue;
        uint32_t lo0 = w->lo[j], lo7 = w->lo[j + 7], last0 = w->hi[j] - 1, last7 = w->hi[j + 7] - 1;
        __m512d v0 = pick8_pd(w->v, w->n, lo, lo0, lo7, m);
        __m512d v1 = pick8_pd(w->v, w->n, last, last0, last7, m);
        __m512d result = _mm512_sub_pd(v1, v0);
        if (nresets) {
            __m256i r0 =
                _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), m, lo, (const int *)w->scratch, 4);
            __m256i r1 =
                _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), m, last, (const int *)w->scratch, 4);
            __mmask8 resets = _mm256_cmpneq_epi32_mask(r0, r1) & m;
            if (resets) {
                double tmp[8];
                _mm512_storeu_pd(tmp, result);
                for (int l = 0; l < 8; l++)
                    if (resets >> l & 1) {
                        uint32_t a = w->lo[j + (size_t)l];
                        tmp[l] = pq__rate_delta(w->v + a, w->hi[j + (size_t)l] - a, 1);
                    }
                result = _mm512_loadu_pd(tmp);
            }
        }
        /* a counter's distance to zero, where it applies: sampled * (v0 / result) */
        __mmask8 c = 0;
        if (is_counter)
            c = _mm512_cmp_pd_mask(result, zero, _CMP_GT_OQ) & _mm512_cmp_pd_mask(v0, zero, _CMP_GE_OQ) & m;
        if (use) {
            __m512d sampled = _mm512_loadu_pd(tc->sampled + j);
            if (c) {
                __m512d to_zero = _mm512_mul_pd(sampled, _mm512_div_pd(v0, result));
                c &= _mm512_cmp_pd_mask(to_zero, _mm512_loadu_pd(tc->to_start + j), _CMP_LT_OQ);
            }
            if (!c) {
                got += put8(w, j, m, _mm512_mul_pd(result, _mm512_loadu_pd(tc->factor + j)), out, bm);
                cached++;
                continue;
            }
        }
        __m512i t0 = pick8(w->t, w->n, lo, lo0, lo7, m);
        __m512i t1 = pick8(w->t, w->n, last, last0, last7, m);
        __m512i end = times8(w, j, -w->off);
        __m512i startt = _mm512_sub_epi64(end, range);
        __m512d to_start = _mm512_div_pd(_mm512_cvtepi64_pd(_mm512_sub_epi64(t0, startt)), thousand);
        __m512d to_end = _mm512_div_pd(_mm512_cvtepi64_pd(_mm512_sub_epi64(end, t1)), thousand);
        __m512d sampled = _mm512_div_pd(_mm512_cvtepi64_pd(_mm512_sub_epi64(t1, t0)), thousand);
        __m512d avg = _mm512_div_pd(sampled, _mm512_cvtepi64_pd(_mm512_sub_epi64(last, lo)));
        __m512d factor = rate_factor8(sampled, avg, to_start, to_end, is_rate, per_sec);
        if (fill) {
            _mm512_storeu_pd(tc->sampled + j, sampled);
            _mm512_storeu_pd(tc->to_start + j, to_start);
            _mm512_storeu_pd(tc->factor + j, factor);
        }
        if (c) {
            __m512d to_zero = _mm512_mul_pd(sampled, _mm512_div_pd(v0, result));
            c &= _mm512_cmp_pd_mask(to_zero, to_start, _CMP_LT_OQ);
            if (c)
                factor = _mm512_mask_blend_pd(c, factor,
                                              rate_factor8(sampled, avg,
                                                           _mm512_mask_blend_pd(c, to_start, to_zero), to_end,
                                                           is_rate, per_sec));
        }
        got += put8(w, j, m, _mm512_mul_pd(result, factor), out, bm);
    }
    if (fill) {
        tc->nw = w->nw;
        tc->id = (int)id;
    }
    if (cached) __atomic_fetch_add(&pq__fn_windows_cached, cached, __ATOMIC_RELAXED);
    return got + plain(id, w, j, out, bm);
}

/* kahanSumInc in lanes m. */
VEC_TARGET static void kahan8(__mmask8 m, __m512d inc, __m512d *sum, __m512d *c) {
    const __m512i abs = _mm512_set1_epi64(INT64_MAX);
    __m512d t = _mm512_add_pd(*sum, inc);
    __m512d as = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(*sum), abs));
    __m512d ai = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(inc), abs));
    __mmask8 ge = _mm512_cmp_pd_mask(as, ai, _CMP_GE_OQ);
    __m512d a = _mm512_add_pd(_mm512_sub_pd(*sum, t), inc);
    __m512d b = _mm512_add_pd(_mm512_sub_pd(inc, t), *sum);
    *c = _mm512_mask_add_pd(*c, m, *c, _mm512_mask_blend_pd(ge, b, a));
    *sum = _mm512_mask_mov_pd(*sum, m, t);
}

VEC_TARGET static size_t lr_vec(pq_func_id id, const pq_windows *w, double *out, uint64_t *bm) {
    const __m512d thousand = _mm512_set1_pd(1e3), zero = _mm512_setzero_pd();
    size_t got = 0, j = 0;
    for (; j + 8 <= w->nw; j += 8) {
        __m512i lo = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(w->lo + j)));
        __m512i hi = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(w->hi + j)));
        __m512i cnt = _mm512_sub_epi64(hi, lo);
        __mmask8 m = _mm512_cmpgt_epi64_mask(cnt, _mm512_set1_epi64(1)); /* >= 2 samples */
        if (!m) continue;
        uint32_t lo0 = w->lo[j], lo7 = w->lo[j + 7];
        __m512i icpt = id == PQ_F_DERIV ? pick8(w->t, w->n, lo, lo0, lo7, m) : times8(w, j, 0);
        __m512d init_y = pick8_pd(w->v, w->n, lo, lo0, lo7, m);
        __m512d sx = zero, cx = zero, sy = zero, cy = zero, sxy = zero, cxy = zero, sx2 = zero, cx2 = zero;
        __mmask8 const_y = m;
        int64_t maxn = 0;
        for (int l = 0; l < 8; l++) {
            int64_t n = (int64_t)w->hi[j + (size_t)l] - w->lo[j + (size_t)l];
            if (n > maxn) maxn = n;
        }
        /* sample i of each window: lane l reads lo[j + l] + i */
        __m512i idx = lo;
        for (int64_t i = 0; i < maxn; i++) {
            __mmask8 a = _mm512_cmpgt_epi64_mask(cnt, _mm512_set1_epi64(i)) & m;
            uint32_t i0 = lo0 + (uint32_t)i, i7 = lo7 + (uint32_t)i;
            __m512i t = pick8(w->t, w->n, idx, i0, i7, a);
            __m512d v = pick8_pd(w->v, w->n, idx, i0, i7, a);
            idx = _mm512_add_epi64(idx, _mm512_set1_epi64(1));
            if (i > 0) const_y &= ~(_mm512_cmp_pd_mask(v, init_y, _CMP_NEQ_UQ) & a);
            __m512d x = _mm512_div_pd(_mm512_cvtepi64_pd(_mm512_sub_epi64(t, icpt)), thousand);
            kahan8(a, x, &sx, &cx);
            kahan8(a, v, &sy, &cy);
            kahan8(a, _mm512_mul_pd(x, v), &sxy, &cxy);
            kahan8(a, _mm512_mul_pd(x, x), &sx2, &cx2);
        }
        double a_sx[8], a_cx[8], a_sy[8], a_cy[8], a_sxy[8], a_cxy[8], a_sx2[8], a_cx2[8], a_iy[8];
        _mm512_storeu_pd(a_sx, sx);
        _mm512_storeu_pd(a_cx, cx);
        _mm512_storeu_pd(a_sy, sy);
        _mm512_storeu_pd(a_cy, cy);
        _mm512_storeu_pd(a_sxy, sxy);
        _mm512_storeu_pd(a_cxy, cxy);
        _mm512_storeu_pd(a_sx2, sx2);
        _mm512_storeu_pd(a_cx2, cx2);
        _mm512_storeu_pd(a_iy, init_y);
        for (int l = 0; l < 8; l++) {
            if (!(m >> l & 1)) continue;
            size_t jj = j + (size_t)l;
            double slope, intercept;
            pq__lr_finish((double)(w->hi[jj] - w->lo[jj]), a_sx[l], a_cx[l], a_sy[l], a_cy[l], a_sxy[l],
                          a_cxy[l], a_sx2[l], a_cx2[l], a_iy[l], const_y >> l & 1, &slope, &intercept);
            if (id == PQ_F_DERIV) {
                put(out, bm, w->k[jj], slope);
            } else {
                if (!w->arg) continue;
                put(out, bm, w->k[jj], slope * w->arg[w->k[jj]] + intercept);
            }
            got++;
        }
    }
    return got + plain(id, w, j, out, bm);
}

/* avg's incremental mean over 64 steps (pq_agg_avg64). */
VEC_TARGET static void avg64_vec(double *mean, double *cnt, const double *v) {
    const __m512d one = _mm512_set1_pd(1), zero = _mm512_setzero_pd(), inf = _mm512_set1_pd(INFINITY);
    const __m512i abs = _mm512_set1_epi64(INT64_MAX);
    for (int j = 0; j < 64; j += 8) {
        __m512d c = _mm512_add_pd(_mm512_loadu_pd(cnt + j), one);
        _mm512_storeu_pd(cnt + j, c);
        __m512d m = _mm512_loadu_pd(mean + j), x = _mm512_loadu_pd(v + j);
        __m512d nm = _mm512_add_pd(m, _mm512_sub_pd(_mm512_div_pd(x, c), _mm512_div_pd(m, c)));
        __m512d am = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(m), abs));
        __m512d ax = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), abs));
        __mmask8 m_inf = _mm512_cmp_pd_mask(am, inf, _CMP_EQ_OQ);
        __mmask8 x_inf = _mm512_cmp_pd_mask(ax, inf, _CMP_EQ_OQ);
        __mmask8 x_nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
        __mmask8 same =
            (__mmask8) ~(_mm512_cmp_pd_mask(m, zero, _CMP_GT_OQ) ^ _mm512_cmp_pd_mask(x, zero, _CMP_GT_OQ));
        /* a mean at +-Inf stays: after an Inf of its sign, or after a number */
        __mmask8 keep = m_inf & ((x_inf & same) | (__mmask8)(~x_inf & ~x_nan));
        _mm512_storeu_pd(mean + j, _mm512_mask_blend_pd(keep, nm, m));
    }
}

static int have_vector(void) {
    static int have = -1; /* any thread may find it out: each finds the same */
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl");
        __atomic_store_n(&have, h, __ATOMIC_RELAXED);
    }
    return h;
}
#else
static int have_vector(void) {
    return 0;
}
#endif

int pq_agg_avg64(double *mean, double *cnt, const double *v) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (pq__fn_windows_vector && have_vector()) {
        avg64_vec(mean, cnt, v);
        return 1;
    }
#else
    (void)mean;
    (void)cnt;
    (void)v;
#endif
    return 0;
}

size_t pq_fn_range_windows(pq_func_id id, const pq_windows *w, double *out, uint64_t *bm) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (pq__fn_windows_vector && have_vector() && w->nw >= 8) {
        if (id == PQ_F_RATE || id == PQ_F_INCREASE || id == PQ_F_DELTA) return rate_vec(id, w, out, bm);
        if (id == PQ_F_DERIV || id == PQ_F_PREDICT_LINEAR) return lr_vec(id, w, out, bm);
    }
#endif
    return plain(id, w, 0, out, bm);
}
