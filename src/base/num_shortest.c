/* num_shortest.c -- base_shortest_digits(): shortest round-trip decimal
 * digits of a double, by Ulf Adams' Ryu algorithm ("Ryu: fast float-to-string
 * conversion", PLDI 2018), written from the paper.
 *
 * Design. v = m2 x 2^e2 (two extra bits so that the interval bounds are
 * integers): the rounding interval of v is [mm, mp] = [4m2 - 1 - mmShift,
 * 4m2 + 2] x 2^e2, lopsided (mmShift = 0) at a power of two. All three are
 * scaled by 10^-e10 in one 64x128-bit multiply and shift each, with the
 * truncated powers of 5 (or their inverses) from two tables; then decimal
 * digits are removed while the scaled interval still holds a shorter
 * number, and the last kept digit of the scaled v is rounded to nearest
 * (ties to even when v's expansion is exact there). The result is the
 * shortest decimal in the interval (bounds included when m2 is even, as
 * strtod rounds ties to even) and, among those, the one nearest to v --
 * the semantics of Go's strconv.FormatFloat(v, 'g'/'f'/'e', -1, 64)
 * (tests/unit/base/num_shortest.c checks it digit for digit against the
 * previous printf/strtod search). Integers below 2^53 skip all this: they
 * are their own shortest form. Digits are dropped 8/4/2/1 at a time in
 * the common case, and written two at a time.
 *
 * Tables: pow5[i] = 5^i normalised to 125 bits (truncated), inv5[i] =
 * floor(2^(bits(5^i) - 1 + 125) / 5^i) + 1, computed once (pthread_once)
 * with exact multi-word integer arithmetic; after that the function is
 * pure and thread-safe. Invariant: tables are read only after init.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/num.h"

#define R_POW5_BITS     125
#define R_POW5_INV_BITS 125
#define R_POW5_N        326 /* i = -e2 - q <= 325 */
#define R_POW5_INV_N    342 /* q <= 341 */

typedef unsigned __int128 u128;

static uint64_t r_pow5[R_POW5_N][2]; /* [lo, hi] */
static uint64_t r_pow5_inv[R_POW5_INV_N][2];
static char r_pairs[200]; /* "00" "01" ... "99" */
static pthread_once_t r_once = PTHREAD_ONCE_INIT;

/* ceil(log2(5^e)) for 1 <= e <= 3528; 1 for e = 0. */
static int32_t pow5bits(int32_t e) {
    return (int32_t)(((uint32_t)e * 1217359u) >> 19) + 1;
}
/* floor(log10(2^e)), 0 <= e <= 1650. */
static uint32_t log10pow2(int32_t e) {
    return ((uint32_t)e * 78913u) >> 18;
}
/* floor(log10(5^e)), 0 <= e <= 2620. */
static uint32_t log10pow5(int32_t e) {
    return ((uint32_t)e * 732923u) >> 20;
}

/* Multi-word integers: little-endian 32-bit limbs, enough for 5^341 (< 2^793)
 * shifted by a few bits. */
#define BIG_LIMBS 28

typedef struct {
    uint32_t w[BIG_LIMBS];
} big;

static void big_mul_small(big *a, uint32_t m) {
    uint64_t c = 0;
    for (int i = 0; i < BIG_LIMBS; i++) {
        uint64_t t = (uint64_t)a->w[i] * m + c;
        a->w[i] = (uint32_t)t;
        c = t >> 32;
    }
}

static int big_bitlen(const big *a) {
    for (int i = BIG_LIMBS - 1; i >= 0; i--)
        if (a->w[i]) return i * 32 + 32 - __builtin_clz(a->w[i]);
    return 0;
}

static int big_bit(const big *a, int k) {
    return k >= 0 && k < BIG_LIMBS * 32 ? (a->w[k / 32] >> (k % 32)) & 1 : 0;
}

static int big_cmp(const big *a, const big *b) {
    for (int i = BIG_LIMBS - 1; i >= 0; i--)
        if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}

static void big_sub(big *a, const big *b) { /* a -= b, a >= b */
    int64_t br = 0;
    for (int i = 0; i < BIG_LIMBS; i++) {
        int64_t t = (int64_t)a->w[i] - b->w[i] - br;
        br = t < 0;
        a->w[i] = (uint32_t)(t + (br ? ((int64_t)1 << 32) : 0));
    }
}

static void big_shl1(big *a) {
    for (int i = BIG_LIMBS - 1; i > 0; i--) a->w[i] = (a->w[i] << 1) | (a->w[i - 1] >> 31);
    a->w[0] <<= 1;
}

static void r_init(void) {
    for (int i = 0; i < 100; i++) {
        r_pairs[2 * i] = (char)('0' + i / 10);
        r_pairs[2 * i + 1] = (char)('0' + i % 10);
    }
    big p;
    memset(&p, 0, sizeof p);
    p.w[0] = 1; /* 5^i */
    for (int i = 0; i < R_POW5_INV_N; i++) {
        int len = big_bitlen(&p); /* == pow5bits(i) */
        if (i < R_POW5_N) {
            /* Top 125 bits of 5^i (exact below 2^125: shifted up). */
            u128 t = 0;
            for (int k = 0; k < R_POW5_BITS; k++) t = (t << 1) | (u128)big_bit(&p, len - 1 - k);
            r_pow5[i][0] = (uint64_t)t;
            r_pow5[i][1] = (uint64_t)(t >> 64);
        }
        /* floor(2^n / 5^i) + 1 with n = len - 1 + 125: the quotient is below
         * 2^126, so the dividend's bits above 127 leave a remainder of
         * 2^(n-127) (< 5^i); then 127 long-division steps on zero bits. */
        int n = len - 1 + R_POW5_INV_BITS;
        big r;
        memset(&r, 0, sizeof r);
        int steps = n < 127 ? n : 127;
        r.w[(n - steps) / 32] = 1u << ((n - steps) % 32);
        u128 q = 0;
        for (int k = 0; k < steps; k++) {
            big_shl1(&r);
            q <<= 1;
            if (big_cmp(&r, &p) >= 0) {
                big_sub(&r, &p);
                q |= 1;
            }
        }
        q += 1;
        r_pow5_inv[i][0] = (uint64_t)q;
        r_pow5_inv[i][1] = (uint64_t)(q >> 64);
        big_mul_small(&p, 5);
    }
}

/* (m x mul) >> j for j >= 64, mul = [lo, hi]. */
static uint64_t mul_shift(uint64_t m, const uint64_t *mul, int32_t j) {
    u128 b0 = (u128)m * mul[0];
    u128 b2 = (u128)m * mul[1];
    return (uint64_t)(((b0 >> 64) + b2) >> (j - 64));
}

static uint32_t pow5_factor(uint64_t v) {
    uint32_t c = 0;
    while (v % 5 == 0) {
        v /= 5;
        c++;
    }
    return c;
}

static int mult_pow5(uint64_t v, uint32_t p) {
    return pow5_factor(v) >= p;
}
static int mult_pow2(uint64_t v, uint32_t p) {
    return p >= 64 || (v & ((UINT64_C(1) << p) - 1)) == 0;
}

/* Writes x < 10^8 as exactly 8 digits, two at a time from r_pairs. */
static inline void put8(char *o, uint32_t x) {
    uint32_t hi = x / 10000, lo = x % 10000;
    memcpy(o, r_pairs + 2 * (hi / 100), 2);
    memcpy(o + 2, r_pairs + 2 * (hi % 100), 2);
    memcpy(o + 4, r_pairs + 2 * (lo / 100), 2);
    memcpy(o + 6, r_pairs + 2 * (lo % 100), 2);
}

/* Digits of 0 < out < 10^17 x 10^e (e of the last digit), trailing zeros
 * dropped; *ret_exp10 is the exponent of the first digit. */
static inline int put_digits(uint64_t out, int32_t e, char digits[20], int *ret_exp10) {
    char buf[17];
    uint64_t hi9 = out / 100000000u;
    buf[0] = (char)('0' + (uint32_t)(hi9 / 100000000u));
    put8(buf + 1, (uint32_t)(hi9 % 100000000u));
    put8(buf + 9, (uint32_t)(out % 100000000u));
    int first = 0;
    while (buf[first] == '0') first++;
    int last = 16;
    while (buf[last] == '0') last--;
    int nd = last - first + 1;
    memcpy(digits, buf + first, (size_t)nd);
    *ret_exp10 = e + (16 - first);
    return nd;
}

/* Drops k = log10(p) digits if the interval still holds a shorter number. */
static inline void drop_if(uint64_t *vr, uint64_t *vp, uint64_t *vm, uint32_t p, int k, int32_t *removed,
                           int *up) {
    if (*vp / p > *vm / p) {
        *up = *vr % p >= p / 2;
        *vr /= p;
        *vp /= p;
        *vm /= p;
        *removed += k;
    }
}

int base_shortest_digits(double v, char digits[20], int *ret_exp10) {
    pthread_once(&r_once, r_init);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t ieee_m = bits & ((UINT64_C(1) << 52) - 1);
    uint32_t ieee_e = (uint32_t)(bits >> 52) & 0x7ffu;
    int32_t e2;
    uint64_t m2;
    if (ieee_e == 0) {
        e2 = 1 - 1023 - 52 - 2;
        m2 = ieee_m;
    } else {
        e2 = (int32_t)ieee_e - 1023 - 52 - 2;
        m2 = (UINT64_C(1) << 52) | ieee_m;
    }
    /* Integers below 2^53: exact, and no shorter decimal is within half
     * an ulp (<= 0.5) of them. */
    if (e2 >= -54 && e2 <= -2) {
        uint32_t sh = (uint32_t)(-2 - e2);
        if ((m2 & ((UINT64_C(1) << sh) - 1)) == 0) return put_digits(m2 >> sh, 0, digits, ret_exp10);
    }
    int accept = (m2 & 1) == 0; /* strtod's ties-to-even reach v */
    uint64_t mv = 4 * m2;
    uint32_t mm_shift = ieee_m != 0 || ieee_e <= 1;

    uint64_t vr, vp, vm;
    int32_t e10;
    int vm_tz = 0, vr_tz = 0; /* whether the dropped part is exactly zero */
    if (e2 >= 0) {
        uint32_t q = log10pow2(e2) - (e2 > 3);
        e10 = (int32_t)q;
        int32_t k = R_POW5_INV_BITS + pow5bits((int32_t)q) - 1;
        int32_t i = -e2 + (int32_t)q + k;
        vr = mul_shift(mv, r_pow5_inv[q], i);
        vp = mul_shift(mv + 2, r_pow5_inv[q], i);
        vm = mul_shift(mv - 1 - mm_shift, r_pow5_inv[q], i);
        if (q <= 21) {
            if (mv % 5 == 0)
                vr_tz = mult_pow5(mv, q);
            else if (accept)
                vm_tz = mult_pow5(mv - 1 - mm_shift, q);
            else
                vp -= (uint64_t)mult_pow5(mv + 2, q);
        }
    } else {
        uint32_t q = log10pow5(-e2) - (-e2 > 1);
        e10 = (int32_t)q + e2;
        int32_t i = -e2 - (int32_t)q;
        int32_t k = pow5bits(i) - R_POW5_BITS;
        int32_t j = (int32_t)q - k;
        vr = mul_shift(mv, r_pow5[i], j);
        vp = mul_shift(mv + 2, r_pow5[i], j);
        vm = mul_shift(mv - 1 - mm_shift, r_pow5[i], j);
        if (q <= 1) {
            vr_tz = 1;
            if (accept)
                vm_tz = mm_shift == 1;
            else
                --vp;
        } else if (q < 63) {
            vr_tz = mult_pow2(mv, q);
        }
    }

    int32_t removed = 0;
    uint32_t last = 0;
    uint64_t out;
    if (vm_tz || vr_tz) {
        while (vp / 10 > vm / 10) {
            vm_tz &= vm % 10 == 0;
            vr_tz &= last == 0;
            last = (uint32_t)(vr % 10);
            vr /= 10;
            vp /= 10;
            vm /= 10;
            removed++;
        }
        if (vm_tz) {
            while (vm != 0 && vm % 10 == 0) {
                vr_tz &= last == 0;
                last = (uint32_t)(vr % 10);
                vr /= 10;
                vp /= 10;
                vm /= 10;
                removed++;
            }
        }
        if (vr_tz && last == 5 && vr % 2 == 0) last = 4; /* exact tie: to even */
        out = vr + ((vr == vm && (!accept || !vm_tz)) || last >= 5);
    } else {
        /* Common case: the dropped part of vr is not zero, so only the
         * first dropped digit decides the rounding. The number of digits
         * to drop is the largest k with vp / 10^k > vm / 10^k (a monotone
         * test); it is found 8, 4, 2, 1 digits at a time. */
        int up = 0;
        while (vp / 100000000u > vm / 100000000u) {
            up = vr % 100000000u >= 50000000u;
            vr /= 100000000u;
            vp /= 100000000u;
            vm /= 100000000u;
            removed += 8;
        }
        drop_if(&vr, &vp, &vm, 10000, 4, &removed, &up);
        drop_if(&vr, &vp, &vm, 100, 2, &removed, &up);
        drop_if(&vr, &vp, &vm, 10, 1, &removed, &up);
        out = vr + (vr == vm || up);
    }

    return put_digits(out, e10 + removed, digits, ret_exp10);
}
