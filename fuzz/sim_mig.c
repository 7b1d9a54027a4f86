/* fuzz/sim_mig.c -- fuzzes the simulator's MIG layout parser
 * (sim_config_set_mig, the KELVIN_SIM_MIG syntax
 * "GPU:PROFILE,PROFILE,...[;GPU:...]" with GPU an index or "*").
 *
 * Every input is parsed against every GPU model and several GPU counts,
 * into a config whose layouts are not all empty (so "unchanged" means
 * something). Checks:
 *   1. on failure the config is byte-for-byte unchanged, the code is
 *      BASE_E_PARSE, BASE_E_INVAL or BASE_E_RANGE and err (a heap block of
 *      exactly the size passed, so ASan sees overflows) holds a message;
 *   2. on success every layout is valid: only MIG-capable models change,
 *      count <= SIM_MAX_MIG, profile indexes in range, slots past count
 *      zero, per-profile instance limits kept, and sim__mig_place puts the
 *      instances on valid, non-overlapping slice ranges of 7;
 *   3. the GPUs the spec names (scanned here independently) are enabled,
 *      every other GPU is unchanged;
 *   4. round trip: the layouts written back as a spec (plain, and with
 *      blanks, upper case and the "MIG " prefix) parse, into a config with
 *      no MIG, to the same layouts; when all 16 are equal, "*:" does too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "sim/sim.h"
#include "sim/sim_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                            \
    do {                                                                                                     \
        fprintf(stderr, "fuzz_sim_mig: " __VA_ARGS__);                                                       \
        fputc('\n', stderr);                                                                                 \
        abort();                                                                                             \
    } while (0)

static const unsigned gpu_counts[] = {0, 1, 8, SIM_MAX_GPUS};

/* A config for model mi with n GPUs and a few non-empty layouts. */
static void base_config(sim_config *cfg, unsigned mi, unsigned n, int with_layouts) {
    sim_config_init(cfg);
    cfg->model = sim_model_get((sim_model_id)mi);
    cfg->gpu_count = n;
    if (!with_layouts || cfg->model->mig_profile_count == 0) return;
    for (unsigned k = 0; k < SIM_MAX_GPUS; k++) {
        if (k % 3 == 1) cfg->mig[k].enabled = true;
        if (k % 3 == 2) {
            cfg->mig[k].enabled = true;
            cfg->mig[k].count = 1;
            cfg->mig[k].profile[0] = cfg->model->mig_profile_count - 1;
        }
    }
}

static int set_mig(sim_config *cfg, const char *spec, size_t n, size_t errlen, char *ret_msg, size_t msglen) {
    char *err = malloc(errlen);
    if (!err) abort();
    memset(err, 'Z', errlen);
    err[0] = '\0';
    int rc = sim_config_set_mig(cfg, spec, n, err, errlen);
    if (memchr(err, '\0', errlen) == NULL) FAIL("err not NUL-terminated");
    snprintf(ret_msg, msglen, "%s", err);
    free(err);
    return rc;
}

static void check_layout(const sim_model *m, const sim_mig_layout *l, unsigned k) {
    if (!l->enabled) {
        if (l->count) FAIL("GPU %u: MIG off with %u instances", k, l->count);
        return;
    }
    if (l->count > SIM_MAX_MIG) FAIL("GPU %u: %u instances", k, l->count);
    unsigned per[64] = {0}, slices = 0;
    for (unsigned i = 0; i < SIM_MAX_MIG; i++) {
        if (i >= l->count) {
            if (l->profile[i]) FAIL("GPU %u: slot %u past count is %u", k, i, l->profile[i]);
            continue;
        }
        unsigned p = l->profile[i];
        if (p >= m->mig_profile_count || p >= 64) FAIL("GPU %u: profile index %u", k, p);
        if (++per[p] > m->mig_profiles[p].max_count) FAIL("GPU %u: too many %s", k, m->mig_profiles[p].name);
        slices += m->mig_profiles[p].slices;
    }
    if (slices > 7) FAIL("GPU %u: %u slices", k, slices);
    unsigned start[SIM_MAX_MIG];
    if (sim__mig_place(m, l, start) != 0) FAIL("GPU %u: accepted layout cannot be placed", k);
    unsigned used = 0;
    for (unsigned i = 0; i < l->count; i++) {
        unsigned sl = m->mig_profiles[l->profile[i]].slices;
        if (sl == 0 || start[i] + sl > 7) FAIL("GPU %u: instance %u at %u+%u", k, i, start[i], sl);
        unsigned mask = ((1u << sl) - 1u) << start[i];
        if (used & mask) FAIL("GPU %u: instances overlap", k);
        used |= mask;
    }
}

static int blank(char c) {
    return c == ' ' || c == '\t';
}

/* Marks in named[] the GPUs an accepted spec names; returns whether it
 * has a "*" part. */
static int scan_named(const char *s, size_t n, bool named[SIM_MAX_GPUS]) {
    memset(named, 0, SIM_MAX_GPUS * sizeof named[0]);
    int star = 0;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != ';') j++;
        const char *part = s + i;
        size_t pn = j - i;
        i = j + 1;
        while (pn && blank(*part)) part++, pn--;
        if (pn == 0) continue;
        const char *colon = memchr(part, ':', pn);
        if (!colon) FAIL("accepted a part without ':'");
        size_t gn = (size_t)(colon - part);
        while (gn && blank(part[gn - 1])) gn--;
        if (gn == 1 && part[0] == '*') {
            for (unsigned k = 0; k < SIM_MAX_GPUS; k++) named[k] = true;
            star = 1;
            continue;
        }
        uint64_t idx;
        if (base_parse_u64(part, gn, &idx) != 0 || idx >= SIM_MAX_GPUS) FAIL("accepted a bad GPU index");
        named[idx] = true;
    }
    return star;
}

/* Field by field: struct assignment need not copy padding. */
static int layout_eq(const sim_mig_layout *a, const sim_mig_layout *b) {
    if (a->enabled != b->enabled || a->count != b->count) return 0;
    for (unsigned i = 0; i < SIM_MAX_MIG; i++)
        if (a->profile[i] != b->profile[i]) return 0;
    return 1;
}

/* Appends "k:p,p,..;" for layout l; style 1 adds blanks, case changes and
 * the "MIG " prefix. Returns the new length. */
static size_t render_one(const sim_model *m, const sim_mig_layout *l, const char *gpu, int style, char *out,
                         size_t n, size_t cap) {
    int w = snprintf(out + n, cap - n, style ? " %s\t: " : "%s:", gpu);
    if (w < 0 || (size_t)w >= cap - n) abort();
    n += (size_t)w;
    for (unsigned i = 0; i < l->count; i++) {
        const char *name = m->mig_profiles[l->profile[i]].name;
        w = snprintf(out + n, cap - n, "%s%s%s", i ? (style ? " , " : ",") : "", style && i % 2 ? "mig " : "",
                     name);
        if (w < 0 || (size_t)w >= cap - n) abort();
        if (style)
            for (int c = 0; c < w; c++)
                if (out[n + (size_t)c] >= 'a' && out[n + (size_t)c] <= 'z')
                    out[n + (size_t)c] = (char)(out[n + (size_t)c] - 32);
        n += (size_t)w;
    }
    if (n + 2 >= cap) abort();
    out[n++] = ';';
    if (style) out[n++] = ' ';
    out[n] = '\0';
    return n;
}

static void round_trip(const sim_config *cfg, int style) {
    const sim_model *m = cfg->model;
    char spec[4096];
    size_t n = 0;
    spec[0] = '\0';
    unsigned lim = cfg->gpu_count < SIM_MAX_GPUS ? cfg->gpu_count : SIM_MAX_GPUS;
    for (unsigned k = 0; k < lim; k++) {
        if (!cfg->mig[k].enabled) continue;
        char gpu[16];
        snprintf(gpu, sizeof gpu, "%u", k);
        n = render_one(m, &cfg->mig[k], gpu, style, spec, n, sizeof spec);
    }
    sim_config back;
    base_config(&back, m->id, cfg->gpu_count, 0);
    char msg[256];
    if (set_mig(&back, spec, n, sizeof msg, msg, sizeof msg) != 0)
        FAIL("round trip of \"%s\" fails: %s", spec, msg);
    for (unsigned k = 0; k < SIM_MAX_GPUS; k++) {
        sim_mig_layout want;
        memset(&want, 0, sizeof want);
        if (k < lim) want = cfg->mig[k];
        if (!layout_eq(&want, &back.mig[k])) FAIL("round trip of \"%s\" changes GPU %u", spec, k);
    }

    for (unsigned k = 1; k < SIM_MAX_GPUS; k++)
        if (!layout_eq(&cfg->mig[k], &cfg->mig[0])) return;
    if (!cfg->mig[0].enabled) return;
    n = render_one(m, &cfg->mig[0], "*", style, spec, 0, sizeof spec);
    base_config(&back, m->id, cfg->gpu_count, 0);
    if (set_mig(&back, spec, n, sizeof msg, msg, sizeof msg) != 0)
        FAIL("round trip of \"%s\" fails: %s", spec, msg);
    for (unsigned k = 0; k < SIM_MAX_GPUS; k++)
        if (!layout_eq(&back.mig[k], &cfg->mig[k])) FAIL("round trip of \"%s\" changes GPU %u", spec, k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *spec = (const char *)data;
    for (unsigned mi = 0; mi < SIM_MODEL__COUNT; mi++) {
        for (size_t ci = 0; ci < sizeof gpu_counts / sizeof gpu_counts[0]; ci++) {
            sim_config cfg, before;
            base_config(&cfg, mi, gpu_counts[ci], 1);
            memcpy(&before, &cfg, sizeof cfg);
            char msg[256];
            /* a short err buffer on odd rounds: messages are truncated, not overrun */
            int rc = set_mig(&cfg, spec, size, ci % 2 ? 20 : sizeof msg, msg, sizeof msg);
            if (rc != 0) {
                if (rc != BASE_E_PARSE && rc != BASE_E_INVAL && rc != BASE_E_RANGE)
                    FAIL("unexpected rc %d", rc);
                if (msg[0] == '\0') FAIL("failure without a message");
                if (memcmp(&cfg, &before, sizeof cfg) != 0) FAIL("config changed on failure");
                continue;
            }
            const sim_model *m = cfg.model;
            if (m->mig_profile_count == 0 && memcmp(&cfg, &before, sizeof cfg) != 0)
                FAIL("model %s without MIG got a layout", m->key);
            if (memcmp(&cfg, &before, offsetof(sim_config, mig)) != 0) FAIL("fields other than mig changed");
            bool named[SIM_MAX_GPUS];
            int star = scan_named(spec, size, named);
            for (unsigned k = 0; k < SIM_MAX_GPUS; k++) {
                if (!named[k] && memcmp(&cfg.mig[k], &before.mig[k], sizeof cfg.mig[k]) != 0)
                    FAIL("GPU %u not named but changed", k);
                if (named[k] && !cfg.mig[k].enabled) FAIL("GPU %u named but MIG off", k);
                if (named[k] && k >= cfg.gpu_count && !star)
                    FAIL("GPU %u past gpu_count %u accepted", k, cfg.gpu_count);
                check_layout(m, &cfg.mig[k], k);
            }
            round_trip(&cfg, 0);
            round_trip(&cfg, 1);
        }
    }
    return 0;
}
