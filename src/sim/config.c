/* config.c -- sim_config defaults, names of scenarios and workloads, the
 * MIG layout parser and placement, and the driver -> CUDA version table.
 *
 * The MIG parser is the one place that turns user text into a layout; it
 * validates everything (profile names, per-profile instance limits, that
 * the instances can be placed on 7 compute slices) before touching cfg, so
 * a bad spec leaves the config as it was.
 */
#include <stdio.h>
#include <strings.h>

#include "base/num.h"
#include "sim/sim_int.h"

static const char *const scenario_names[SIM_SCENARIO__COUNT] = {
    "healthy", "cooling-failure", "memory-leak", "xid-storm", "ecc-degradation", "fell-off-bus",
};
static const char *const workload_names[SIM_WORKLOAD__COUNT] = {"training", "inference", "idle"};

void sim_config_init(sim_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->model = sim_model_get(SIM_MODEL_H100_SXM5_80GB);
    cfg->gpu_count = 8;
    snprintf(cfg->driver_version, sizeof cfg->driver_version, "%s", "550.54.15");
    cfg->scenario = SIM_SCENARIO_HEALTHY;
    cfg->workload = SIM_WORKLOAD_TRAINING;
    cfg->seed = 1;
    cfg->fault_gpu = 0;
    cfg->onset_s = 60.0;
    cfg->lost_after_s = 300.0;
    cfg->cool_ramp_s = 600.0;
    cfg->cool_ramp_to = 0.6;
    cfg->cool_fan_after_s = 900.0;
    cfg->cool_fan_to = 0.3;
    cfg->leak_rate_bps = 0.0;
    cfg->ecc_rate0 = 0.05;
    cfg->ecc_doubling_s = 300.0;
    cfg->ecc_dbe_after_s = 1800.0;
    cfg->max_substep_s = 0.0;
}

/* Case-insensitive match that treats '_' and '-' alike. */
static int name_eq(const char *s, size_t n, const char *name) {
    if (strlen(name) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char a = s[i] == '_' ? '-' : s[i], b = name[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != b) return 0;
    }
    return 1;
}

int sim_scenario_parse(const char *s, size_t n, sim_scenario *ret) {
    if (!s) return BASE_E_PARSE;
    for (unsigned i = 0; i < SIM_SCENARIO__COUNT; i++) {
        if (name_eq(s, n, scenario_names[i])) {
            *ret = (sim_scenario)i;
            return 0;
        }
    }
    return BASE_E_PARSE;
}

const char *sim_scenario_name(sim_scenario s) {
    return (unsigned)s < SIM_SCENARIO__COUNT ? scenario_names[s] : "unknown";
}

int sim_workload_parse(const char *s, size_t n, sim_workload *ret) {
    if (!s) return BASE_E_PARSE;
    for (unsigned i = 0; i < SIM_WORKLOAD__COUNT; i++) {
        if (name_eq(s, n, workload_names[i])) {
            *ret = (sim_workload)i;
            return 0;
        }
    }
    return BASE_E_PARSE;
}

const char *sim_workload_name(sim_workload w) {
    return (unsigned)w < SIM_WORKLOAD__COUNT ? workload_names[w] : "unknown";
}

/* ------------------------------------------------------------------------ */
/* MIG placement                                                             */

static int valid_start(unsigned slices, unsigned start) {
    switch (slices) {
    case 7:
    case 4: return start == 0;
    case 3: return start == 0 || start == 4;
    case 2: return start == 0 || start == 2 || start == 4;
    case 1: return start < 7;
    default: return 0;
    }
}

unsigned sim__mig_gi_id(unsigned slices, unsigned start) {
    switch (slices) {
    case 7: return 0;
    case 4: return 1;
    case 3: return start == 0 ? 1 : 2;
    case 2: return 3 + start / 2;
    default: return 7 + start;
    }
}

static int place(const sim_model *m, const sim_mig_layout *l, const unsigned *order, unsigned k,
                 unsigned used, unsigned *start) {
    if (k == l->count) return 1;
    unsigned i = order[k];
    unsigned sl = m->mig_profiles[l->profile[i]].slices;
    for (unsigned s = 0; s + sl <= 7; s++) {
        unsigned mask = ((1u << sl) - 1u) << s;
        if (!valid_start(sl, s) || (used & mask)) continue;
        start[i] = s;
        if (place(m, l, order, k + 1, used | mask, start)) return 1;
    }
    return 0;
}

int sim__mig_place(const sim_model *m, const sim_mig_layout *l, unsigned ret_start[SIM_MAX_MIG]) {
    if (l->count > SIM_MAX_MIG) return BASE_E_RANGE;
    unsigned order[SIM_MAX_MIG], start[SIM_MAX_MIG] = {0};
    for (unsigned i = 0; i < l->count; i++) order[i] = i;
    /* largest first: fewer dead ends */
    for (unsigned i = 1; i < l->count; i++) {
        for (unsigned j = i; j > 0; j--) {
            unsigned a = m->mig_profiles[l->profile[order[j - 1]]].slices;
            unsigned b = m->mig_profiles[l->profile[order[j]]].slices;
            if (a >= b) break;
            unsigned tmp = order[j - 1];
            order[j - 1] = order[j];
            order[j] = tmp;
        }
    }
    if (!place(m, l, order, 0, 0, start)) return BASE_E_RANGE;
    memcpy(ret_start, start, sizeof start);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* MIG spec parser                                                           */

static void trim(const char **p, size_t *n) {
    while (*n && (**p == ' ' || **p == '\t')) {
        (*p)++;
        (*n)--;
    }
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t')) (*n)--;
}

static int set_err(char *err, size_t errlen, int code, const char *fmt, const char *a, size_t an) {
    if (err && errlen) snprintf(err, errlen, fmt, (int)an, a);
    return code;
}

/* Parses "PROFILE,PROFILE,..." into l. */
static int parse_profiles(const sim_model *m, const char *p, size_t n, sim_mig_layout *l, char *err,
                          size_t errlen) {
    memset(l, 0, sizeof *l);
    l->enabled = true;
    trim(&p, &n);
    if (n == 0) return 0;
    unsigned per_profile[32] = {0};
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && p[j] != ',') j++;
        const char *tok = p + i;
        size_t tn = j - i;
        trim(&tok, &tn);
        const sim_mig_profile *prof = sim_mig_profile_find(m, tok, tn);
        if (!prof)
            return set_err(err, errlen, BASE_E_INVAL, "unknown MIG profile \"%.*s\" for this GPU model", tok,
                           tn);
        if (l->count == SIM_MAX_MIG)
            return set_err(err, errlen, BASE_E_RANGE, "more than 7 MIG instances%.*s", "", 0);
        unsigned idx = (unsigned)(prof - m->mig_profiles);
        if (idx < 32 && ++per_profile[idx] > prof->max_count)
            return set_err(err, errlen, BASE_E_RANGE, "too many instances of MIG profile %.*s", tok, tn);
        l->profile[l->count++] = idx;
        i = j + 1;
    }
    unsigned start[SIM_MAX_MIG];
    if (sim__mig_place(m, l, start) != 0)
        return set_err(err, errlen, BASE_E_RANGE, "MIG instances \"%.*s\" do not fit on 7 compute slices", p,
                       n);
    return 0;
}

int sim_config_set_mig(sim_config *cfg, const char *spec, size_t n, char *err, size_t errlen) {
    if (!cfg || !cfg->model || (!spec && n))
        return set_err(err, errlen, BASE_E_INVAL, "no model set%.*s", "", 0);
    sim_mig_layout out[SIM_MAX_GPUS];
    memcpy(out, cfg->mig, sizeof out);
    size_t i = 0;
    while (spec && i < n) {
        size_t j = i;
        while (j < n && spec[j] != ';') j++;
        const char *part = spec + i;
        size_t pn = j - i;
        i = j + 1;
        trim(&part, &pn);
        if (pn == 0) continue;
        const char *colon = memchr(part, ':', pn);
        if (!colon) return set_err(err, errlen, BASE_E_PARSE, "MIG spec \"%.*s\" lacks GPU:", part, pn);
        const char *g = part;
        size_t gn = (size_t)(colon - part);
        trim(&g, &gn);
        if (cfg->model->mig_profile_count == 0)
            return set_err(err, errlen, BASE_E_INVAL, "GPU model %.*s does not support MIG", cfg->model->key,
                           strlen(cfg->model->key));
        sim_mig_layout l;
        int rc = parse_profiles(cfg->model, colon + 1, pn - (size_t)(colon - part) - 1, &l, err, errlen);
        if (rc) return rc;
        if (gn == 1 && g[0] == '*') {
            for (unsigned k = 0; k < SIM_MAX_GPUS; k++) out[k] = l;
        } else {
            uint64_t idx;
            if (base_parse_u64(g, gn, &idx) != 0)
                return set_err(err, errlen, BASE_E_PARSE, "bad GPU index \"%.*s\" in MIG spec", g, gn);
            if (idx >= cfg->gpu_count || idx >= SIM_MAX_GPUS)
                return set_err(err, errlen, BASE_E_RANGE, "GPU index %.*s in MIG spec is out of range", g,
                               gn);
            out[idx] = l;
        }
    }
    memcpy(cfg->mig, out, sizeof out);
    return 0;
}

/* ------------------------------------------------------------------------ */

int sim_cuda_version(const char *driver) {
    static const struct {
        unsigned major;
        int cuda;
    } table[] = {{418, 10010}, {440, 10020}, {450, 11000}, {455, 11010}, {460, 11020}, {465, 11030},
                 {470, 11040}, {495, 11050}, {510, 11060}, {515, 11070}, {520, 11080}, {525, 12000},
                 {530, 12010}, {535, 12020}, {545, 12030}, {550, 12040}, {555, 12050}, {560, 12060},
                 {565, 12070}, {570, 12080}, {575, 12090}, {580, 13000}};
    if (!driver) return 0;
    size_t n = 0;
    while (driver[n] >= '0' && driver[n] <= '9') n++;
    uint64_t major;
    if (n == 0 || base_parse_u64(driver, n, &major) != 0) return 0;
    int cuda = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (major >= table[i].major) cuda = table[i].cuda;
    return cuda;
}
