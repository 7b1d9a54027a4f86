/* template_funcs.c -- Go's fmt printing of template values (print.go,
 * format.go: %v and the verbs printf takes), time.Time's String() and
 * Prometheus 2.42's humanize functions (template/template.go).
 *
 * Design: values print as Go's fmt prints the Go value the template would
 * hold (pointers inside collections, which Go prints as addresses, print
 * as fixed fake addresses so that output is deterministic): float64 with the shortest 'g' digits (%v), maps
 * as map[k:v ...] in key order, a sample through its pointer as {map[...] v}, a *time.Time through its String
 * method. printf parses Go's format syntax (flags, width, precision, '*', argument indexes are not supported)
 * and writes Go's bad-verb forms (%!d(string=x), %!d(MISSING), %!(EXTRA ...)). Floats with an explicit
 * precision use C's printf, which rounds as Go does (exact decimal, ties to even), except for the non-finite
 * values, which print as Go's +Inf, -Inf and NaN.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/num.h"
#include "base/utf8.h"
#include "rules/template_int.h"

const char *rules__tt_type_name(const tt_val *v) {
    switch (v->k) {
    case TK_INVALID: return "<invalid>";
    case TK_NIL: return "interface {}";
    case TK_BOOL: return "bool";
    case TK_INT: return "int";
    case TK_FLOAT: return "float64";
    case TK_STRING: return "string";
    case TK_HTML: return "template.HTML";
    case TK_MAP: return "map[string]string";
    case TK_ARGS: return "map[string]interface {}";
    case TK_DATA:
        return "struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; "
               "Value "
               "float64 }";
    case TK_SAMPLE: return "*template.sample";
    case TK_VEC: return "template.queryResult";
    case TK_TIME: return "*time.Time";
    }
    return "?";
}

void rules__tt_g4(base_buf *out, double v) {
    if (isnan(v))
        base_buf_puts(out, "NaN");
    else if (isinf(v))
        base_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    else
        base_buf_printf(out, "%.4g", v);
}

/* days since 1970-01-01 -> civil date (Howard Hinnant's algorithm) */
static void civil(int64_t z, int64_t *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void rules__tt_time_string(base_buf *out, int64_t ms) {
    int64_t secs = ms / 1000, msr = ms % 1000;
    if (msr < 0) msr += 1000, secs--;
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) sod += 86400, days--;
    int64_t y;
    int m, d;
    civil(days, &y, &m, &d);
    if (y < 0)
        base_buf_printf(out, "-%04lld", (long long)-y);
    else
        base_buf_printf(out, "%04lld", (long long)y);
    base_buf_printf(out, "-%02d-%02d %02d:%02d:%02d", m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
                    (int)(sod % 60));
    if (msr) {
        char frac[8];
        snprintf(frac, sizeof frac, "%03d", (int)msr);
        size_t n = 3;
        while (n > 0 && frac[n - 1] == '0') n--;
        base_buf_putc(out, '.');
        base_buf_append(out, frac, n);
    }
    base_buf_puts(out, " +0000 UTC");
}

void rules__tt_query_escape(base_buf *out, base_str s) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t k = 0; k < s.n; k++) {
        unsigned char c = (unsigned char)s.p[k];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '_' || c == '.' || c == '~')
            base_buf_putc(out, (char)c);
        else if (c == ' ')
            base_buf_putc(out, '+');
        else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            base_buf_append(out, e, 3);
        }
    }
}

/* Humanizers (Prometheus 2.42 template.go) -------------------------- */

static void si(base_buf *out, double v, const char *suffix) {
    static const char *const big[] = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
    static const char *const small[] = {"m", "u", "n", "p", "f", "a", "z", "y"};
    const char *prefix = "";
    if (fabs(v) >= 1) {
        for (int k = 0; k < 8 && fabs(v) >= 1000; k++) {
            prefix = big[k];
            v /= 1000;
        }
    } else {
        for (int k = 0; k < 8 && fabs(v) < 1; k++) {
            prefix = small[k];
            v *= 1000;
        }
    }
    rules__tt_g4(out, v);
    base_buf_puts(out, prefix);
    base_buf_puts(out, suffix);
}

void rules_humanize(base_buf *out, double v) {
    if (v == 0 || isnan(v) || isinf(v)) {
        rules__tt_g4(out, v);
        return;
    }
    si(out, v, "");
}

void rules_humanize1024(base_buf *out, double v) {
    static const char *const pre[] = {"ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
    if (fabs(v) <= 1 || isnan(v) || isinf(v)) {
        rules__tt_g4(out, v);
        return;
    }
    const char *prefix = "";
    for (int k = 0; k < 8 && fabs(v) >= 1024; k++) {
        prefix = pre[k];
        v /= 1024;
    }
    rules__tt_g4(out, v);
    base_buf_puts(out, prefix);
}

void rules_humanize_duration(base_buf *out, double v) {
    if (isnan(v) || isinf(v)) {
        rules__tt_g4(out, v);
        return;
    }
    if (v == 0) {
        rules__tt_g4(out, v);
        base_buf_putc(out, 's');
        return;
    }
    if (fabs(v) >= 1) {
        const char *sign = "";
        if (v < 0) {
            sign = "-";
            v = -v;
        }
        /* Go's int64(v) of a huge float is implementation-defined; amd64
         * gives INT64_MIN, which we mirror */
        int64_t iv = v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
        int64_t seconds = iv % 60, minutes = (iv / 60) % 60, hours = (iv / 60 / 60) % 24,
                days = iv / 60 / 60 / 24;
        if (days != 0)
            base_buf_printf(out, "%s%lldd %lldh %lldm %llds", sign, (long long)days, (long long)hours,
                            (long long)minutes, (long long)seconds);
        else if (hours != 0)
            base_buf_printf(out, "%s%lldh %lldm %llds", sign, (long long)hours, (long long)minutes,
                            (long long)seconds);
        else if (minutes != 0)
            base_buf_printf(out, "%s%lldm %llds", sign, (long long)minutes, (long long)seconds);
        else {
            base_buf_puts(out, sign);
            rules__tt_g4(out, v);
            base_buf_putc(out, 's');
        }
        return;
    }
    si(out, v, "s");
}

void rules_humanize_percentage(base_buf *out, double ratio) {
    rules__tt_g4(out, ratio * 100);
    base_buf_putc(out, '%');
}

void rules_humanize_timestamp(base_buf *out, double v) {
    if (isnan(v) || isinf(v)) {
        rules__tt_g4(out, v);
        return;
    }
    double ts = v * 1e9;
    if (ts >= 9223372036854775808.0 || ts < -9223372036854775808.0) {
        /* the template function fails here; callers outside get the %v */
        base_buf_double(out, v);
        return;
    }
    rules__tt_time_string(out, (int64_t)ts / 1000000);
}

/* fmt --------------------------------------------------------------- */

typedef struct fmtspec {
    int minus, plus, sharp, space, zero;
    int wid, prec; /* -1: absent */
} fmtspec;

static size_t rune_count(const char *s, size_t n) {
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        if (((unsigned char)s[k] & 0xC0) != 0x80) c++;
    return c;
}

/* Pads s to the width (in runes) as fmt.pad does. */
static void pad(base_buf *out, const fmtspec *f, const char *s, size_t n, int zero_ok) {
    size_t rc = rune_count(s, n);
    if (f->wid < 0 || (size_t)f->wid <= rc) {
        base_buf_append(out, s, n);
        return;
    }
    size_t padn = (size_t)f->wid - rc;
    if (f->minus) {
        base_buf_append(out, s, n);
        for (size_t k = 0; k < padn; k++) base_buf_putc(out, ' ');
        return;
    }
    char pc = (f->zero && zero_ok) ? '0' : ' ';
    if (pc == '0' && n && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) {
        base_buf_putc(out, s[0]);
        s++, n--;
    }
    for (size_t k = 0; k < padn; k++) base_buf_putc(out, pc);
    base_buf_append(out, s, n);
}

static void fmt_float(base_buf *out, const fmtspec *f, double v, char verb) {
    char buf[512];
    size_t n;
    if (isnan(v) || isinf(v)) {
        const char *s = isnan(v) ? (f->plus    ? "+NaN"
                                    : f->space ? " NaN"
                                               : "NaN")
                        : v > 0  ? (f->space && !f->plus ? " Inf" : "+Inf")
                                 : "-Inf";
        fmtspec g = *f;
        g.zero = 0;
        pad(out, &g, s, strlen(s), 0);
        return;
    }
    if ((verb == 'g' || verb == 'G' || verb == 'v') && f->prec < 0) {
        n = base_fmt_double_g(buf, v);
        if (verb == 'G')
            for (size_t k = 0; k < n; k++)
                if (buf[k] == 'e') buf[k] = 'E';
    } else {
        char cf[16];
        int p = f->prec < 0 ? 6 : f->prec;
        if (p > 300) p = 300;
        snprintf(cf, sizeof cf, "%%%s.%d%c", f->sharp ? "#" : "", p,
                 verb == 'v'   ? 'g'
                 : verb == 'F' ? 'f'
                               : verb);
        int r = snprintf(buf, sizeof buf, cf, v);
        n = r < 0 ? 0 : (size_t)r >= sizeof buf ? sizeof buf - 1 : (size_t)r;
    }
    char tmp[520];
    size_t tn = 0;
    if (buf[0] != '-') {
        if (f->plus)
            tmp[tn++] = '+';
        else if (f->space)
            tmp[tn++] = ' ';
    }
    memcpy(tmp + tn, buf, n);
    tn += n;
    pad(out, f, tmp, tn, 1);
}

static void fmt_int(base_buf *out, const fmtspec *f, int64_t v, char verb) {
    char digits[80];
    size_t n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int base = verb == 'x' || verb == 'X' ? 16 : verb == 'o' || verb == 'O' ? 8 : verb == 'b' ? 2 : 10;
    const char *dig = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char rev[80];
    size_t rn = 0;
    do {
        rev[rn++] = dig[u % (uint64_t)base];
        u /= (uint64_t)base;
    } while (u);
    if (f->prec == 0 && v == 0) rn = 0;
    int prec = f->prec;
    if (prec < 0 && f->zero && f->wid > 0 && !f->minus) {
        prec = f->wid;
        if (v < 0 || f->plus || f->space) prec--;
    }
    if (v < 0)
        digits[n++] = '-';
    else if (f->plus)
        digits[n++] = '+';
    else if (f->space)
        digits[n++] = ' ';
    if (f->sharp && base == 16) digits[n++] = '0', digits[n++] = verb;
    if (f->sharp && base == 8 && verb == 'o') digits[n++] = '0';
    if (verb == 'O') digits[n++] = '0', digits[n++] = 'o';
    for (int k = (int)rn; k < prec && n < sizeof digits - rn - 1; k++) digits[n++] = '0';
    while (rn) digits[n++] = rev[--rn];
    fmtspec g = *f;
    g.zero = 0;
    pad(out, &g, digits, n, 0);
}

static void quote_go(base_buf *out, base_str s) {
    labels_quote(out, s);
}

static void fmt_str(base_buf *out, const fmtspec *f, base_str s, char verb) {
    if (f->prec >= 0) {
        size_t k = 0, r = 0;
        while (k < s.n && r < (size_t)f->prec) {
            k++;
            while (k < s.n && ((unsigned char)s.p[k] & 0xC0) == 0x80) k++;
            r++;
        }
        s.n = k;
    }
    if (verb == 's' || verb == 'v') {
        pad(out, f, s.p, s.n, 1);
        return;
    }
    base_buf tmp = BASE_BUF_INIT;
    if (verb == 'q') {
        if (f->sharp) {
            int raw_ok = 1;
            for (size_t k = 0; k < s.n; k++)
                if (s.p[k] == '`' || (s.p[k] < ' ' && s.p[k] != '\t')) raw_ok = 0;
            if (raw_ok) {
                base_buf_putc(&tmp, '`');
                base_buf_append(&tmp, s.p, s.n);
                base_buf_putc(&tmp, '`');
            } else
                quote_go(&tmp, s);
        } else
            quote_go(&tmp, s);
    } else { /* x X */
        const char *dig = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
        for (size_t k = 0; k < s.n; k++) {
            if (f->space && k > 0) base_buf_putc(&tmp, ' ');
            if (f->sharp && (k == 0 || f->space)) base_buf_puts(&tmp, verb == 'X' ? "0X" : "0x");
            unsigned char c = (unsigned char)s.p[k];
            base_buf_putc(&tmp, dig[c >> 4]);
            base_buf_putc(&tmp, dig[c & 15]);
        }
    }
    pad(out, f, tmp.data ? tmp.data : "", tmp.len, 1);
    base_buf_free(&tmp);
}

static void print_arg(base_buf *out, const tt_val *v, char verb, const fmtspec *f, int depth);

static void bad_verb(base_buf *out, const tt_val *v, char verb) {
    base_buf_puts(out, "%!");
    base_buf_putc(out, verb);
    base_buf_putc(out, '(');
    if (v->k == TK_NIL || v->k == TK_INVALID)
        base_buf_puts(out, "<nil>");
    else {
        base_buf_puts(out, rules__tt_type_name(v));
        base_buf_putc(out, '=');
        fmtspec z = {0, 0, 0, 0, 0, -1, -1};
        print_arg(out, v, 'v', &z, 0);
    }
    base_buf_putc(out, ')');
}

static void print_map(base_buf *out, const tt_val *v, char verb, const fmtspec *f, int depth) {
    base_buf_puts(out, "map[");
    labels_iter it;
    base_str name, value;
    labels_iter_init(&it, v->ls);
    int first = 1;
    while (labels_iter_next(&it, &name, &value)) {
        if (!first) base_buf_putc(out, ' ');
        first = 0;
        tt_val kn = {.k = TK_STRING, .s = name}, vv = {.k = TK_STRING, .s = value};
        print_arg(out, &kn, verb, f, depth + 1);
        base_buf_putc(out, ':');
        print_arg(out, &vv, verb, f, depth + 1);
    }
    base_buf_putc(out, ']');
}

static void print_arg(base_buf *out, const tt_val *v, char verb, const fmtspec *f, int depth) {
    if (depth > 8) {
        base_buf_puts(out, "...");
        return;
    }
    switch (v->k) {
    case TK_INVALID:
    case TK_NIL:
        if (verb == 'v')
            pad(out, f, "<nil>", 5, 0);
        else
            bad_verb(out, v, verb);
        return;
    case TK_BOOL:
        if (verb == 'v' || verb == 't') {
            const char *s = v->b ? "true" : "false";
            pad(out, f, s, strlen(s), 0);
        } else
            bad_verb(out, v, verb);
        return;
    case TK_INT:
        switch (verb) {
        case 'v':
        case 'd': fmt_int(out, f, v->i, 'd'); return;
        case 'x':
        case 'X':
        case 'o':
        case 'O':
        case 'b': fmt_int(out, f, v->i, verb); return;
        case 'c':
        case 'q': {
            uint32_t r =
                v->i < 0 || v->i > 0x10FFFF || (v->i >= 0xD800 && v->i < 0xE000) ? 0xFFFD : (uint32_t)v->i;
            unsigned char enc[4];
            size_t el = base_utf8_encode(r, enc);
            if (verb == 'c') {
                pad(out, f, (const char *)enc, el, 0);
            } else {
                base_buf t = BASE_BUF_INIT;
                base_buf q = BASE_BUF_INIT;
                quote_go(&q, (base_str){(const char *)enc, el});
                /* a rune literal: swap the double quotes for single ones */
                base_buf_putc(&t, '\'');
                if (q.len >= 2) {
                    if (q.len == 3 && q.data[1] == '\'')
                        base_buf_puts(&t, "\\'");
                    else if (q.len == 4 && q.data[1] == '\\' && q.data[2] == '"')
                        base_buf_putc(&t, '"');
                    else
                        base_buf_append(&t, q.data + 1, q.len - 2);
                }
                base_buf_putc(&t, '\'');
                pad(out, f, t.data, t.len, 0);
                base_buf_free(&t);
                base_buf_free(&q);
            }
            return;
        }
        case 'U': {
            char b[32];
            int n = snprintf(b, sizeof b, "U+%04llX", (unsigned long long)v->i);
            pad(out, f, b, (size_t)n, 0);
            return;
        }
        default: bad_verb(out, v, verb); return;
        }
    case TK_FLOAT:
        switch (verb) {
        case 'v':
        case 'g':
        case 'G':
        case 'e':
        case 'E':
        case 'f':
        case 'F': fmt_float(out, f, v->f, verb); return;
        default: bad_verb(out, v, verb); return;
        }
    case TK_STRING:
    case TK_HTML:
        switch (verb) {
        case 'v':
        case 's':
        case 'q':
        case 'x':
        case 'X': fmt_str(out, f, v->s, verb); return;
        default: bad_verb(out, v, verb); return;
        }
    case TK_TIME:
        if (verb == 'v' || verb == 's' || verb == 'q' || verb == 'x' || verb == 'X') {
            base_buf t = BASE_BUF_INIT;
            rules__tt_time_string(&t, v->i);
            fmt_str(out, f, (base_str){t.data, t.len}, verb);
            base_buf_free(&t);
        } else
            bad_verb(out, v, verb);
        return;
    case TK_MAP: print_map(out, v, verb, f, depth); return;
    case TK_ARGS: {
        base_buf_puts(out, "map[");
        /* keys sorted as strings: arg0 arg1 arg10 arg11 ... arg2 */
        char(*keys)[24] = NULL;
        size_t n = v->args->n;
        size_t *ord = n ? calloc(n, sizeof *ord) : NULL;
        keys = n ? calloc(n, sizeof *keys) : NULL;
        if (n && (!ord || !keys)) {
            out->err = out->err ? out->err : -1;
            free(ord);
            free(keys);
            return;
        }
        for (size_t k = 0; k < n; k++) {
            snprintf(keys[k], sizeof keys[k], "arg%zu", k);
            ord[k] = k;
        }
        for (size_t k = 1; k < n; k++)
            for (size_t j = k; j > 0 && strcmp(keys[ord[j - 1]], keys[ord[j]]) > 0; j--) {
                size_t t = ord[j];
                ord[j] = ord[j - 1];
                ord[j - 1] = t;
            }
        for (size_t k = 0; k < n; k++) {
            if (k) base_buf_putc(out, ' ');
            tt_val kn = {.k = TK_STRING, .s = base_str_c(keys[ord[k]])};
            print_arg(out, &kn, verb, f, depth + 1);
            base_buf_putc(out, ':');
            print_arg(out, &v->args->v[ord[k]], verb, f, depth + 1);
        }
        free(ord);
        free(keys);
        base_buf_putc(out, ']');
        return;
    }
    case TK_SAMPLE:
        if (!v->smp) {
            if (verb == 'v')
                pad(out, f, "<nil>", 5, 0);
            else
                bad_verb(out, v, verb);
            return;
        }
        if (depth == 0) {
            base_buf_puts(out, "&{");
            tt_val m = {.k = TK_MAP, .ls = v->smp->ls}, x = {.k = TK_FLOAT, .f = v->smp->v};
            print_arg(out, &m, verb, f, depth + 1);
            base_buf_putc(out, ' ');
            print_arg(out, &x, verb, f, depth + 1);
            base_buf_putc(out, '}');
        } else
            base_buf_puts(out, "0xc000000010"); /* Go prints the address; we print a fixed one */
        return;
    case TK_VEC:
        base_buf_putc(out, '[');
        for (size_t k = 0; v->vec && k < v->vec->n; k++) {
            if (k) base_buf_putc(out, ' ');
            base_buf_printf(out, "0xc000%06zx", (k + 1) * 16); /* addresses in Go; fixed here */
        }
        base_buf_putc(out, ']');
        return;
    case TK_DATA: {
        const rules_tmpl_data *d = v->data;
        tt_val l = {.k = TK_MAP, .ls = d->labels ? d->labels : labels_empty()};
        tt_val e = {.k = TK_MAP, .ls = d->external_labels ? d->external_labels : labels_empty()};
        tt_val u = {.k = TK_STRING, .s = base_str_c(d->external_url ? d->external_url : "")};
        tt_val x = {.k = TK_FLOAT, .f = d->value};
        base_buf_putc(out, '{');
        print_arg(out, &l, verb, f, depth + 1);
        base_buf_putc(out, ' ');
        print_arg(out, &e, verb, f, depth + 1);
        base_buf_putc(out, ' ');
        print_arg(out, &u, verb, f, depth + 1);
        base_buf_putc(out, ' ');
        print_arg(out, &x, verb, f, depth + 1);
        base_buf_putc(out, '}');
        return;
    }
    }
}

/* Prints one value the way text/template's printValue does (indirecting
 * a pointer to a struct). */
void rules__tt_print_val(base_buf *out, const tt_val *v) {
    fmtspec z = {0, 0, 0, 0, 0, -1, -1};
    if (v->k == TK_SAMPLE && v->smp) {
        base_buf_putc(out, '{');
        tt_val m = {.k = TK_MAP, .ls = v->smp->ls}, x = {.k = TK_FLOAT, .f = v->smp->v};
        print_arg(out, &m, 'v', &z, 1);
        base_buf_putc(out, ' ');
        print_arg(out, &x, 'v', &z, 1);
        base_buf_putc(out, '}');
        return;
    }
    print_arg(out, v, 'v', &z, 0);
}

static int is_stringish(const tt_val *v) {
    return v->k == TK_STRING || v->k == TK_HTML;
}

void rules__tt_sprint(base_buf *out, const tt_val *v, size_t n, int ln) {
    fmtspec z = {0, 0, 0, 0, 0, -1, -1};
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && (ln || (!is_stringish(&v[k]) && !is_stringish(&v[k - 1])))) base_buf_putc(out, ' ');
        print_arg(out, &v[k], 'v', &z, 0);
    }
    if (ln) base_buf_putc(out, '\n');
}

void rules__tt_sprintf(base_buf *out, base_str format, const tt_val *v, size_t n) {
    size_t argi = 0;
    const char *p = format.p, *end = format.p + format.n;
    while (p < end) {
        const char *pct = memchr(p, '%', (size_t)(end - p));
        if (!pct) {
            base_buf_append(out, p, (size_t)(end - p));
            break;
        }
        base_buf_append(out, p, (size_t)(pct - p));
        p = pct + 1;
        fmtspec f = {0, 0, 0, 0, 0, -1, -1};
        for (; p < end; p++) {
            if (*p == '-')
                f.minus = 1, f.zero = 0;
            else if (*p == '+')
                f.plus = 1;
            else if (*p == '#')
                f.sharp = 1;
            else if (*p == ' ')
                f.space = 1;
            else if (*p == '0')
                f.zero = !f.minus;
            else
                break;
        }
        if (p < end && *p == '*') {
            p++;
            if (argi < n && v[argi].k == TK_INT && v[argi].i >= -1000000 && v[argi].i <= 1000000) {
                f.wid = (int)v[argi].i;
                if (f.wid < 0) f.minus = 1, f.wid = -f.wid, f.zero = 0;
            } else
                base_buf_puts(out, "%!(BADWIDTH)");
            argi++;
        } else {
            int w = -1;
            while (p < end && *p >= '0' && *p <= '9') {
                w = (w < 0 ? 0 : w) * 10 + (*p - '0');
                if (w > 1000000) w = 1000000;
                p++;
            }
            f.wid = w;
        }
        if (p < end && *p == '.') {
            p++;
            if (p < end && *p == '*') {
                p++;
                if (argi < n && v[argi].k == TK_INT && v[argi].i >= 0 && v[argi].i <= 1000000)
                    f.prec = (int)v[argi].i;
                else
                    base_buf_puts(out, "%!(BADPREC)");
                argi++;
            } else {
                int pr = 0;
                while (p < end && *p >= '0' && *p <= '9') {
                    pr = pr * 10 + (*p - '0');
                    if (pr > 1000000) pr = 1000000;
                    p++;
                }
                f.prec = pr;
            }
        }
        if (p >= end) {
            base_buf_puts(out, "%!(NOVERB)");
            break;
        }
        uint32_t verb = 0xFFFD; /* an invalid byte reads as utf8.RuneError */
        size_t w = base_utf8_decode((const unsigned char *)p, (size_t)(end - p), &verb);
        if (w == 0) w = 1, verb = 0xFFFD;
        p += w;
        unsigned char venc[4];
        size_t vlen = base_utf8_encode(verb, venc);
        if (verb == '%') {
            base_buf_putc(out, '%');
            continue;
        }
        if (argi >= n) {
            base_buf_puts(out, "%!");
            base_buf_append(out, venc, vlen);
            base_buf_puts(out, "(MISSING)");
            continue;
        }
        if (verb == 'T') {
            const char *tn =
                v[argi].k == TK_NIL || v[argi].k == TK_INVALID ? "<nil>" : rules__tt_type_name(&v[argi]);
            pad(out, &f, tn, strlen(tn), 0);
            argi++;
            continue;
        }
        if (verb > 0x7f) {
            base_buf_puts(out, "%!");
            base_buf_append(out, venc, vlen);
            base_buf_putc(out, '(');
            base_buf_puts(out, rules__tt_type_name(&v[argi]));
            base_buf_putc(out, '=');
            rules__tt_print_val(out, &v[argi]);
            base_buf_putc(out, ')');
            argi++;
            continue;
        }
        print_arg(out, &v[argi], (char)verb, &f, 0);
        argi++;
    }
    if (argi < n) {
        base_buf_puts(out, "%!(EXTRA ");
        for (size_t k = argi; k < n; k++) {
            if (k > argi) base_buf_puts(out, ", ");
            if (v[k].k == TK_NIL || v[k].k == TK_INVALID)
                base_buf_puts(out, "<nil>");
            else {
                base_buf_puts(out, rules__tt_type_name(&v[k]));
                base_buf_putc(out, '=');
                fmtspec z = {0, 0, 0, 0, 0, -1, -1};
                print_arg(out, &v[k], 'v', &z, 0);
            }
        }
        base_buf_putc(out, ')');
    }
}
