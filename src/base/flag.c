/* flag.c -- Prometheus-style flag parsing; see flag.h. */
#include "base/flag.h"

#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/time.h"

/* As Prometheus's units.Base2Bytes: KB and KiB alike are 1024 bytes. */
static int parse_size(const char *v, int64_t *ret) {
    static const struct {
        const char *suf;
        int64_t mul;
    } sufs[] = {{"KiB", 1024},     {"MiB", 1 << 20},   {"GiB", 1 << 30}, {"TiB", 1LL << 40},
                {"KB", 1024},      {"MB", 1 << 20},    {"GB", 1 << 30},  {"TB", 1LL << 40},
                {"PB", 1LL << 50}, {"PiB", 1LL << 50}, {"B", 1}};
    size_t n = strlen(v);
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++) {
        size_t sl = strlen(sufs[i].suf);
        if (n > sl && strcmp(v + n - sl, sufs[i].suf) == 0) {
            int64_t x;
            if (base_parse_i64(v, n - sl, &x) || x < 0 || x > INT64_MAX / sufs[i].mul) return BASE_E_INVAL;
            *ret = x * sufs[i].mul;
            return 0;
        }
    }
    int64_t x;
    if (base_parse_i64(v, n, &x) || x < 0) return BASE_E_INVAL;
    *ret = x;
    return 0;
}

static int set_value(const base_flag *f, const char *v, char *err, size_t errlen) {
    switch (f->kind) {
    case BASE_FLAG_STRING: *(const char **)f->target = v; return 0;
    case BASE_FLAG_BOOL:
        if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
            *(int *)f->target = 1;
        else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
            *(int *)f->target = 0;
        else
            break;
        return 0;
    case BASE_FLAG_DURATION:
        if (base_parse_duration_ms(v, (int64_t *)f->target) == 0) return 0;
        break;
    case BASE_FLAG_INT:
        if (base_parse_i64(v, strlen(v), (int64_t *)f->target) == 0) return 0;
        break;
    case BASE_FLAG_SIZE:
        if (parse_size(v, (int64_t *)f->target) == 0) return 0;
        break;
    }
    snprintf(err, errlen, "invalid value %s for flag --%s", v, f->name);
    return BASE_E_INVAL;
}

int base_flags_parse(const base_flag *flags, size_t n, int argc, char **argv, char *err, size_t errlen) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return 1;
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument %s", a);
            return BASE_E_INVAL;
        }
        a += 2;
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        int negated = 0;
        const base_flag *f = NULL;
        for (size_t k = 0; k < n && !f; k++)
            if (strlen(flags[k].name) == nl && strncmp(flags[k].name, a, nl) == 0) f = &flags[k];
        if (!f && nl > 3 && strncmp(a, "no-", 3) == 0) {
            for (size_t k = 0; k < n && !f; k++)
                if (flags[k].kind == BASE_FLAG_BOOL && strlen(flags[k].name) == nl - 3 &&
                    strncmp(flags[k].name, a + 3, nl - 3) == 0)
                    f = &flags[k];
            negated = f != NULL;
        }
        if (!f) {
            snprintf(err, errlen, "unknown flag --%.*s", (int)nl, a);
            return BASE_E_INVAL;
        }
        const char *v;
        if (eq)
            v = eq + 1;
        else if (f->kind == BASE_FLAG_BOOL)
            v = negated ? "false" : "true";
        else if (i + 1 < argc)
            v = argv[++i];
        else {
            snprintf(err, errlen, "flag --%s needs a value", f->name);
            return BASE_E_INVAL;
        }
        if (negated && eq) {
            snprintf(err, errlen, "flag --no-%s takes no value", f->name);
            return BASE_E_INVAL;
        }
        int rc = set_value(f, v, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

void base_flags_usage(FILE *out, const char *usage_line, const char *summary, const base_flag *flags,
                      size_t n) {
    fprintf(out, "usage: %s\n\n%s\n\nFlags:\n  -h, --help  Show this help.\n", usage_line, summary);
    for (size_t i = 0; i < n; i++) {
        const base_flag *f = &flags[i];
        char def[64] = "";
        switch (f->kind) {
        case BASE_FLAG_STRING: {
            const char *s = *(const char **)f->target;
            if (s && *s) snprintf(def, sizeof def, "\"%s\"", s);
            break;
        }
        case BASE_FLAG_BOOL: snprintf(def, sizeof def, "%s", *(int *)f->target ? "true" : "false"); break;
        case BASE_FLAG_DURATION: {
            int64_t ms = *(int64_t *)f->target;
            if (ms % 1000 == 0)
                snprintf(def, sizeof def, "%llds", (long long)(ms / 1000));
            else
                snprintf(def, sizeof def, "%lldms", (long long)ms);
            break;
        }
        case BASE_FLAG_INT:
        case BASE_FLAG_SIZE: snprintf(def, sizeof def, "%lld", (long long)*(int64_t *)f->target); break;
        }
        const char *arg = f->kind == BASE_FLAG_BOOL ? "" : "=VALUE";
        fprintf(out, "  --%s%s%s\n      %s%s%s%s\n", f->kind == BASE_FLAG_BOOL ? "[no-]" : "", f->name, arg,
                f->help, *def ? " (default: " : "", def, *def ? ")" : "");
    }
}
