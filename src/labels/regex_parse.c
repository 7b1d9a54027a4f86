/* regex_parse.c -- a parser for Go's regexp/syntax (Perl flags), so that
 * Kelvin accepts exactly the regexes Prometheus 2.42 accepts and rejects
 * the rest with the same messages ("error parsing regexp: <code>: `<expr>`",
 * where expr is the offending fragment or the whole regexp).
 *
 * It is a recursive-descent rendering of Go's stack parser (parse.go, Go
 * 1.19 as in Prometheus 2.42): the same escapes, class syntax, flag groups
 * (?i) (?m) (?s) (?U), (?P<name>...), repetition rules (a** and a++ are
 * errors, counts up to 1000 and nested products up to 1000, {,n} is a
 * literal), the same order of checks and the same error fragments. It
 * builds a tree of labels__rx_node (labels_int.h) in an arena; regex.c
 * turns the tree into a PCRE2 pattern and into fast paths.
 *
 * Differences from Go's tree, none of which change what matches: literal
 * runs are kept as rune strings per concatenation (Go also merges them),
 * character classes keep Unicode property items (\pL) by name instead of
 * expanding them to ranges (PCRE2 evaluates them), and no simplification
 * (a|b -> [ab], common-prefix factoring) is done.
 *
 * Limits: nesting height 1000 (Go's maxHeight, "expression nests too
 * deeply"), compiled size like Go's calcSize up to 128 MiB / 40 bytes
 * ("expression too large"). The arena the caller passes bounds memory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "labels/labels_int.h"

enum { F_FOLD = 1, F_DOTNL = 2, F_ONELINE = 4, F_NONGREEDY = 8 };

#define MAX_REPEAT 1000
#define MAX_HEIGHT 1000
#define MAX_SIZE   ((int64_t)(128 << 20) / 40)

static const char E_CHARRANGE[] = "invalid character class range";
static const char E_ESCAPE[] = "invalid escape sequence";
static const char E_NAMEDCAP[] = "invalid named capture";
static const char E_PERLOP[] = "invalid or unsupported Perl syntax";
static const char E_REPEATOP[] = "invalid nested repetition operator";
static const char E_REPEATSIZE[] = "invalid repeat count";
static const char E_UTF8[] = "invalid UTF-8";
static const char E_BRACKET[] = "missing closing ]";
static const char E_PAREN[] = "missing closing )";
static const char E_REPEATARG[] = "missing argument to repetition operator";
static const char E_BACKSLASH[] = "trailing backslash at end of expression";
static const char E_UNEXPAREN[] = "unexpected )";
static const char E_DEPTH[] = "expression nests too deeply";
static const char E_LARGE[] = "expression too large";

/* Go's unicode.Categories keys (Go 1.19). */
static const char *const categories[] = {
    "C",  "Cc", "Cf", "Co", "Cs", "L",  "Ll", "Lm", "Lo", "Lt", "Lu", "M",
    "Mc", "Me", "Mn", "N",  "Nd", "Nl", "No", "P",  "Pc", "Pd", "Pe", "Pf",
    "Pi", "Po", "Ps", "S",  "Sc", "Sk", "Sm", "So", "Z",  "Zl", "Zp", "Zs",
};

/* Go's unicode.Scripts keys (Unicode 13.0.0, Go 1.19). */
static const char *const scripts[] = {
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Katakana",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Ugaritic",
    "Vai",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
};

/* ASCII groups: name, ranges (lo, hi pairs, 0-terminated list). */
typedef struct group {
    const char *name;
    uint8_t r[12];
} group;

static const group posix[] = {
    {"alnum", {'0', '9', 'A', 'Z', 'a', 'z'}},
    {"alpha", {'A', 'Z', 'a', 'z'}},
    {"ascii", {0x01, 0x7F}}, /* 0 is added by the lookup: 0 ends the list */
    {"blank", {'\t', '\t', ' ', ' '}},
    {"cntrl", {0x01, 0x1F, 0x7F, 0x7F}}, /* likewise */
    {"digit", {'0', '9'}},
    {"graph", {'!', '~'}},
    {"lower", {'a', 'z'}},
    {"print", {' ', '~'}},
    {"punct", {'!', '/', ':', '@', '[', '`', '{', '~'}},
    {"space", {'\t', '\r', ' ', ' '}},
    {"upper", {'A', 'Z'}},
    {"word", {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}},
    {"xdigit", {'0', '9', 'A', 'F', 'a', 'f'}},
};
static const group perl_d = {"d", {'0', '9'}};
static const group perl_s = {"s", {'\t', '\n', '\f', '\r', ' ', ' '}};
static const group perl_w = {"w", {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}};

typedef struct parser {
    base_arena *a;
    const char *s;
    size_t n;
    size_t i;
    unsigned flags;
    int ncap;
    base_str *names;
    size_t names_cap;
    int depth;
    int rc;
    char *err;
    size_t errlen;
} parser;

/* ---- errors -------------------------------------------------------- */

static int fail(parser *p, const char *code, size_t from, size_t to) {
    if (p->rc) return p->rc;
    p->rc = BASE_E_PARSE;
    if (p->err && p->errlen) {
        int k = snprintf(p->err, p->errlen, "error parsing regexp: %s: `", code);
        size_t len = k < 0 ? 0 : (size_t)k;
        if (len < p->errlen) {
            size_t room = p->errlen - len - 1;
            size_t m = to - from;
            if (m > room) m = room;
            memcpy(p->err + len, p->s + from, m);
            len += m;
            if (len + 1 < p->errlen) p->err[len++] = '`';
            p->err[len] = '\0';
        }
    }
    return p->rc;
}

static int nomem(parser *p) {
    if (!p->rc) {
        p->rc = BASE_E_NOMEM;
        labels__errf(p->err, p->errlen, "out of memory compiling regexp");
    }
    return p->rc;
}

/* ---- arena helpers ------------------------------------------------- */

static labels__rx_node *node(parser *p, uint8_t op) {
    labels__rx_node *n = base_arena_alloc(p->a, sizeof *n);
    if (!n) {
        nomem(p);
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->op = op;
    n->height = 1;
    return n;
}

/* Grows an arena array of elem-size items to hold need items. */
static void *grow(parser *p, void *arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return arr;
    size_t ncap = *cap ? *cap * 2 : 4;
    while (ncap < need) ncap *= 2;
    void *na = base_arena_alloc(p->a, ncap * elem);
    if (!na) {
        nomem(p);
        return NULL;
    }
    if (*cap) memcpy(na, arr, *cap * elem);
    *cap = ncap;
    return na;
}

static int set_height(parser *p, labels__rx_node *n) {
    int h = 1;
    for (size_t k = 0; k < n->nsub; k++)
        if (n->sub[k]->height + 1 > h) h = n->sub[k]->height + 1;
    n->height = h;
    if (h > MAX_HEIGHT) return fail(p, E_DEPTH, 0, p->n);
    return 0;
}

static labels__rx_node *wrap1(parser *p, uint8_t op, labels__rx_node *sub) {
    labels__rx_node *n = node(p, op);
    if (!n) return NULL;
    n->sub = base_arena_alloc(p->a, sizeof *n->sub);
    if (!n->sub) {
        nomem(p);
        return NULL;
    }
    n->sub[0] = sub;
    n->nsub = 1;
    if (set_height(p, n) < 0) return NULL;
    return n;
}

/* ---- small lexing helpers ------------------------------------------ */

/* Decodes the rune at position i; on invalid UTF-8 fails with Go's
 * ErrInvalidUTF8 (expr: the rest of the string). At the end of the input
 * returns U+FFFD with width 0, as Go's DecodeRuneInString(""). */
static int next_rune(parser *p, size_t i, uint32_t *r, size_t *w) {
    if (i >= p->n) {
        *r = 0xFFFD;
        *w = 0;
        return 0;
    }
    *w = labels__utf8_decode((const uint8_t *)p->s + i, p->n - i, r);
    if (*r == 0xFFFD && *w == 1) return fail(p, E_UTF8, i, p->n);
    return 0;
}

static int check_utf8(parser *p, size_t from, size_t to) {
    size_t k = labels__utf8_invalid_at((const uint8_t *)p->s + from, to - from);
    if (k < to - from) return fail(p, E_UTF8, from, p->n);
    return 0;
}

static int isalnum_(uint32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int unhex(uint32_t c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* ---- classes ------------------------------------------------------- */

typedef struct cbuild {
    uint32_t *r; /* pairs */
    size_t n, cap;
    labels__rx_prop *props;
    size_t np, pcap;
} cbuild;

static int cadd(parser *p, cbuild *c, uint32_t lo, uint32_t hi) {
    uint32_t *r = grow(p, c->r, &c->cap, (c->n + 1) * 2, sizeof *r);
    if (!r) return p->rc;
    c->r = r;
    c->r[c->n * 2] = lo;
    c->r[c->n * 2 + 1] = hi;
    c->n++;
    return 0;
}

static int range_cmp(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] > y[1] ? -1 : x[1] < y[1];
}

/* Sorts and merges the ranges of c (Go's cleanClass). */
static void cclean(cbuild *c) {
    if (c->n < 2) return;
    qsort(c->r, c->n, 2 * sizeof *c->r, range_cmp);
    size_t w = 1;
    for (size_t k = 1; k < c->n; k++) {
        uint32_t lo = c->r[2 * k], hi = c->r[2 * k + 1];
        if (lo <= c->r[2 * w - 1] + 1) {
            if (hi > c->r[2 * w - 1]) c->r[2 * w - 1] = hi;
            continue;
        }
        c->r[2 * w] = lo;
        c->r[2 * w + 1] = hi;
        w++;
    }
    c->n = w;
}

/* Adds an ASCII group, negated if neg. Under (?i) a group is first closed
 * under case folding (ASCII pairs plus U+017F for s and U+212A for k, the
 * only non-ASCII runes that fold to ASCII), as Go's appendGroup does. */
static int cadd_group(parser *p, cbuild *c, const group *g, int include_nul, int neg) {
    cbuild t = {0};
    if (include_nul && cadd(p, &t, 0, 0) < 0) return p->rc;
    for (size_t k = 0; k < sizeof g->r && g->r[k]; k += 2)
        if (cadd(p, &t, g->r[k], g->r[k + 1]) < 0) return p->rc;
    if (p->flags & F_FOLD) {
        size_t n0 = t.n;
        int has_k = 0, has_s = 0;
        for (size_t k = 0; k < n0; k++) {
            uint32_t lo = t.r[2 * k], hi = t.r[2 * k + 1];
            for (uint32_t ch = lo; ch <= hi && ch < 0x80; ch++) {
                uint32_t up = ch >= 'a' && ch <= 'z' ? ch - 32 : ch,
                         low = ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
                if (up != ch && cadd(p, &t, up, up) < 0) return p->rc;
                if (low != ch && cadd(p, &t, low, low) < 0) return p->rc;
                if (low == 'k') has_k = 1;
                if (low == 's') has_s = 1;
            }
        }
        if (has_s && cadd(p, &t, 0x17F, 0x17F) < 0) return p->rc;
        if (has_k && cadd(p, &t, 0x212A, 0x212A) < 0) return p->rc;
    }
    cclean(&t);
    if (!neg) {
        for (size_t k = 0; k < t.n; k++)
            if (cadd(p, c, t.r[2 * k], t.r[2 * k + 1]) < 0) return p->rc;
        return 0;
    }
    uint32_t next = 0;
    for (size_t k = 0; k < t.n; k++) {
        if (t.r[2 * k] > next && cadd(p, c, next, t.r[2 * k] - 1) < 0) return p->rc;
        next = t.r[2 * k + 1] + 1;
    }
    if (next <= 0x10FFFF && cadd(p, c, next, 0x10FFFF) < 0) return p->rc;
    return 0;
}

static const char *prop_name(base_str name) {
    if (base_str_eqc(name, "Any")) return "Any";
    for (size_t k = 0; k < sizeof categories / sizeof *categories; k++)
        if (base_str_eqc(name, categories[k])) return categories[k];
    for (size_t k = 0; k < sizeof scripts / sizeof *scripts; k++)
        if (base_str_eqc(name, scripts[k])) return scripts[k];
    return NULL;
}

/* At p->i: \p or \P. Adds the property to c and advances. */
static int parse_uclass(parser *p, cbuild *c) {
    size_t start = p->i;
    int neg = p->s[start + 1] == 'P';
    size_t t = start + 2;
    uint32_t r;
    size_t w;
    if (next_rune(p, t, &r, &w) < 0) return p->rc;
    size_t seq_end, name_from, name_to;
    if (r != '{') {
        seq_end = t + w;
        name_from = t;
        name_to = t + w;
    } else {
        const char *e = memchr(p->s + start, '}', p->n - start);
        if (!e) {
            if (check_utf8(p, start, p->n) < 0) return p->rc;
            return fail(p, E_CHARRANGE, start, p->n);
        }
        seq_end = (size_t)(e - p->s) + 1;
        name_from = start + 3;
        name_to = seq_end - 1;
        if (check_utf8(p, name_from, name_to) < 0) return p->rc;
    }
    base_str name = {p->s + name_from, name_to - name_from};
    if (name.n && name.p[0] == '^') {
        neg = !neg;
        name.p++;
        name.n--;
    }
    const char *canon = prop_name(name);
    if (!canon) return fail(p, E_CHARRANGE, start, seq_end);
    labels__rx_prop *pp = grow(p, c->props, &c->pcap, c->np + 1, sizeof *pp);
    if (!pp) return p->rc;
    c->props = pp;
    c->props[c->np++] = (labels__rx_prop){canon, (uint8_t)neg};
    p->i = seq_end;
    return 0;
}

/* At p->i: a backslash followed by d D s S w W? Adds it and returns 1. */
static int parse_perl_class(parser *p, cbuild *c) {
    if (p->i + 1 >= p->n || p->s[p->i] != '\\') return 0;
    const group *g;
    switch (p->s[p->i + 1] | 0x20) {
    case 'd': g = &perl_d; break;
    case 's': g = &perl_s; break;
    case 'w': g = &perl_w; break;
    default: return 0;
    }
    int neg = p->s[p->i + 1] >= 'A' && p->s[p->i + 1] <= 'Z';
    if (cadd_group(p, c, g, 0, neg) < 0) return -1;
    p->i += 2;
    return 1;
}

static labels__rx_node *class_node(parser *p, cbuild *c, int neg) {
    labels__rx_node *n = node(p, RX_CLASS);
    labels__rx_class *cls = base_arena_alloc(p->a, sizeof *cls);
    if (!n || !cls) {
        nomem(p);
        return NULL;
    }
    cclean(c);
    cls->ranges = c->r;
    cls->nranges = c->n;
    cls->props = c->props;
    cls->nprops = c->np;
    cls->neg = (uint8_t)neg;
    n->cls = cls;
    n->fold = (p->flags & F_FOLD) != 0;
    return n;
}

/* Go's parseEscape at position i (a backslash). */
static int parse_escape(parser *p, size_t i, uint32_t *ret, size_t *ret_next) {
    size_t t = i + 1;
    if (t >= p->n) return fail(p, E_BACKSLASH, 0, 0);
    uint32_t c;
    size_t w;
    if (next_rune(p, t, &c, &w) < 0) return p->rc;
    t += w;
    switch (c) {
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
        if (t >= p->n || p->s[t] < '0' || p->s[t] > '7') break;
        /* fallthrough */
    case '0': {
        uint32_t r = c - '0';
        for (int k = 1; k < 3; k++) {
            if (t >= p->n || p->s[t] < '0' || p->s[t] > '7') break;
            r = r * 8 + (uint32_t)(p->s[t] - '0');
            t++;
        }
        *ret = r;
        *ret_next = t;
        return 0;
    }
    case 'x': {
        if (t >= p->n) break;
        if (next_rune(p, t, &c, &w) < 0) return p->rc;
        t += w;
        if (c == '{') {
            int nhex = 0;
            uint32_t r = 0;
            for (;;) {
                if (t >= p->n) return fail(p, E_ESCAPE, i, t);
                if (next_rune(p, t, &c, &w) < 0) return p->rc;
                t += w;
                if (c == '}') break;
                int v = unhex(c);
                if (v < 0) return fail(p, E_ESCAPE, i, t);
                r = r * 16 + (uint32_t)v;
                if (r > 0x10FFFF) return fail(p, E_ESCAPE, i, t);
                nhex++;
            }
            if (nhex == 0) break;
            *ret = r;
            *ret_next = t;
            return 0;
        }
        int x = unhex(c);
        if (next_rune(p, t, &c, &w) < 0) return p->rc;
        t += w;
        int y = unhex(c);
        if (x < 0 || y < 0) break;
        *ret = (uint32_t)(x * 16 + y);
        *ret_next = t;
        return 0;
    }
    case 'a':
        *ret = '\a';
        *ret_next = t;
        return 0;
    case 'f':
        *ret = '\f';
        *ret_next = t;
        return 0;
    case 'n':
        *ret = '\n';
        *ret_next = t;
        return 0;
    case 'r':
        *ret = '\r';
        *ret_next = t;
        return 0;
    case 't':
        *ret = '\t';
        *ret_next = t;
        return 0;
    case 'v':
        *ret = '\v';
        *ret_next = t;
        return 0;
    default:
        if (c < 0x80 && !isalnum_(c)) {
            *ret = c;
            *ret_next = t;
            return 0;
        }
    }
    return fail(p, E_ESCAPE, i, t);
}

/* Go's parseClass: p->i at '['. */
static labels__rx_node *parse_class(parser *p) {
    size_t whole = p->i;
    size_t t = p->i + 1;
    int neg = 0;
    if (t < p->n && p->s[t] == '^') {
        neg = 1;
        t++;
    }
    cbuild c = {0};
    int first = 1;
    while (t >= p->n || p->s[t] != ']' || first) {
        first = 0;
        /* POSIX [:alpha:] */
        if (p->n - t > 2 && p->s[t] == '[' && p->s[t + 1] == ':') {
            const char *e = NULL;
            for (size_t k = t + 2; k + 1 < p->n; k++)
                if (p->s[k] == ':' && p->s[k + 1] == ']') {
                    e = p->s + k;
                    break;
                }
            if (e) {
                size_t end = (size_t)(e - p->s) + 2;
                base_str nm = {p->s + t + 2, end - t - 4};
                int gneg = 0;
                if (nm.n && nm.p[0] == '^') {
                    gneg = 1;
                    nm.p++;
                    nm.n--;
                }
                const group *g = NULL;
                for (size_t k = 0; k < sizeof posix / sizeof *posix; k++)
                    if (base_str_eqc(nm, posix[k].name)) g = &posix[k];
                if (!g) {
                    fail(p, E_CHARRANGE, t, end);
                    return NULL;
                }
                int nul = !strcmp(g->name, "ascii") || !strcmp(g->name, "cntrl");
                if (cadd_group(p, &c, g, nul, gneg) < 0) return NULL;
                t = end;
                continue;
            }
        }
        if (p->n - t >= 2 && p->s[t] == '\\' && (p->s[t + 1] == 'p' || p->s[t + 1] == 'P')) {
            p->i = t;
            if (parse_uclass(p, &c) < 0) return NULL;
            t = p->i;
            continue;
        }
        p->i = t;
        int pc = parse_perl_class(p, &c);
        if (pc < 0) return NULL;
        if (pc) {
            t = p->i;
            continue;
        }
        /* A single character or a range. */
        size_t rng = t;
        uint32_t lo, hi;
        for (int side = 0; side < 2; side++) {
            uint32_t ch;
            if (t >= p->n) {
                fail(p, E_BRACKET, whole, p->n);
                return NULL;
            }
            if (p->s[t] == '\\') {
                if (parse_escape(p, t, &ch, &t) < 0) return NULL;
            } else {
                size_t w;
                if (next_rune(p, t, &ch, &w) < 0) return NULL;
                t += w;
            }
            if (side == 0) {
                lo = hi = ch;
                if (p->n - t >= 2 && p->s[t] == '-' && p->s[t + 1] != ']') {
                    t++;
                    continue;
                }
                break;
            }
            hi = ch;
            if (hi < lo) {
                fail(p, E_CHARRANGE, rng, t);
                return NULL;
            }
        }
        if (cadd(p, &c, lo, hi) < 0) return NULL;
    }
    p->i = t + 1;
    return class_node(p, &c, neg);
}

/* ---- repetition ---------------------------------------------------- */

/* Go's parseInt: digits without leading zeros; -1 when >= 1e8. */
static int parse_int(parser *p, size_t *t, int *ret) {
    size_t i = *t;
    if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') return 0;
    if (p->n - i >= 2 && p->s[i] == '0' && p->s[i + 1] >= '0' && p->s[i + 1] <= '9') return 0;
    int v = 0;
    while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') {
        if (v >= 0) v = v >= 100000000 ? -1 : v * 10 + (p->s[i] - '0');
        i++;
    }
    if (v >= 100000000) v = -1;
    *ret = v;
    *t = i;
    return 1;
}

/* Go's parseRepeat at '{': 1 with min/max/after, or 0 (then '{' is a
 * literal). */
static int parse_repeat(parser *p, size_t i, int *rmin, int *rmax, size_t *after) {
    size_t t = i + 1;
    int min, max;
    if (!parse_int(p, &t, &min)) return 0;
    if (t >= p->n) return 0;
    if (p->s[t] != ',') {
        max = min;
    } else {
        t++;
        if (t >= p->n) return 0;
        if (p->s[t] == '}') {
            max = -1;
        } else {
            if (!parse_int(p, &t, &max)) return 0;
            if (max < 0) min = -1;
        }
    }
    if (t >= p->n || p->s[t] != '}') return 0;
    *rmin = min;
    *rmax = max;
    *after = t + 1;
    return 1;
}

static int repeat_valid(const labels__rx_node *n, int lim) {
    if (n->op == RX_REPEAT) {
        int m = n->max;
        if (m == 0) return 1;
        if (m < 0) m = n->min;
        if (m > lim) return 0;
        if (m > 0) lim /= m;
    }
    for (size_t k = 0; k < n->nsub; k++)
        if (!repeat_valid(n->sub[k], lim)) return 0;
    return 1;
}

/* ---- concatenation, alternation, groups ---------------------------- */

typedef struct items {
    labels__rx_node **v;
    size_t n, cap;
} items;

static int push(parser *p, items *it, labels__rx_node *n) {
    if (!n) return p->rc ? p->rc : nomem(p);
    labels__rx_node **v = grow(p, it->v, &it->cap, it->n + 1, sizeof *v);
    if (!v) return p->rc;
    it->v = v;
    it->v[it->n++] = n;
    return 0;
}

/* Appends rune r to the concatenation, extending the previous literal run
 * when it has the same case folding (Go's maybeConcat). */
static int push_lit(parser *p, items *it, uint32_t r) {
    uint8_t fold = (p->flags & F_FOLD) != 0;
    if (it->n && it->v[it->n - 1]->op == RX_LIT && it->v[it->n - 1]->fold == fold) {
        labels__rx_node *l = it->v[it->n - 1];
        l->open = 1;
        uint32_t *nr = grow(p, l->runes, &l->rcap, l->nrunes + 1, sizeof *nr);
        if (!nr) return p->rc;
        l->runes = nr;
        l->runes[l->nrunes++] = r;
        return 0;
    }
    labels__rx_node *n = node(p, RX_LIT);
    if (!n) return p->rc;
    n->fold = fold;
    n->open = 1;
    n->rune = r;
    n->runes = &n->rune;
    n->nrunes = 1;
    n->rcap = 1;
    return push(p, it, n);
}

/* Applies a repetition to the last item (splitting a literal run so the
 * operator takes only its last rune). */
static int apply_repeat(parser *p, items *it, uint8_t op, int min, int max, int nongreedy) {
    labels__rx_node *last = it->v[it->n - 1];
    if (last->op == RX_LIT && last->open && last->nrunes > 1) {
        last->nrunes--;
        labels__rx_node *n = node(p, RX_LIT);
        if (!n) return p->rc;
        n->fold = last->fold;
        n->rune = last->runes[last->nrunes];
        n->runes = &n->rune;
        n->nrunes = n->rcap = 1;
        if (push(p, it, n) < 0) return p->rc;
        last = n;
    }
    labels__rx_node *r = wrap1(p, op, last);
    if (!r) return p->rc;
    r->min = min;
    r->max = max;
    r->nongreedy = (uint8_t)nongreedy;
    it->v[it->n - 1] = r;
    return 0;
}

static labels__rx_node *parse_alt(parser *p);

static labels__rx_node *finish_seq(parser *p, items *it, uint8_t op) {
    if (it->n == 1) return it->v[0];
    labels__rx_node *n = node(p, it->n == 0 ? (op == RX_CAT ? RX_EMPTY : RX_NOMATCH) : op);
    if (!n) return NULL;
    n->sub = it->v;
    n->nsub = it->n;
    if (set_height(p, n) < 0) return NULL;
    return n;
}

/* A group body after its opening syntax: parses up to ')' with `flags`,
 * then restores the flags in force before the group. */
static labels__rx_node *parse_group(parser *p, unsigned flags, int cap, base_str name) {
    unsigned saved = p->flags;
    if (++p->depth > MAX_HEIGHT) {
        fail(p, E_DEPTH, 0, p->n);
        return NULL;
    }
    p->flags = flags;
    labels__rx_node *body = parse_alt(p);
    p->depth--;
    if (!body) return NULL;
    if (p->i >= p->n) {
        fail(p, E_PAREN, 0, p->n);
        return NULL;
    }
    p->i++; /* ')' */
    p->flags = saved;
    body->open = 0;
    if (!cap) return body;
    labels__rx_node *n = wrap1(p, RX_CAP, body);
    if (!n) return NULL;
    n->cap = cap;
    n->name = name;
    return n;
}

static int add_cap(parser *p, base_str name) {
    int cap = ++p->ncap;
    base_str *nm = grow(p, p->names, &p->names_cap, (size_t)cap, sizeof *nm);
    if (!nm) return p->rc;
    p->names = nm;
    p->names[cap - 1] = name;
    return cap;
}

/* Go's parsePerlFlags at "(?". Returns 1 and *ret = group node, 0 for a
 * flags-only group, <0 on error. */
static int parse_perl_flags(parser *p, labels__rx_node **ret) {
    size_t s = p->i;
    if (p->n - s > 4 && p->s[s + 2] == 'P' && p->s[s + 3] == '<') {
        const char *e = memchr(p->s + s, '>', p->n - s);
        if (!e) {
            if (check_utf8(p, s, p->n) < 0) return p->rc;
            return fail(p, E_NAMEDCAP, s, p->n);
        }
        size_t end = (size_t)(e - p->s);
        base_str name = {p->s + s + 4, end - (s + 4)};
        if (check_utf8(p, s + 4, end) < 0) return p->rc;
        int ok = name.n > 0;
        for (size_t k = 0; k < name.n && ok; k++) ok = name.p[k] == '_' || isalnum_((uint8_t)name.p[k]);
        if (!ok) return fail(p, E_NAMEDCAP, s, end + 1);
        int cap = add_cap(p, name);
        if (cap < 0) return cap;
        p->i = end + 1;
        *ret = parse_group(p, p->flags, cap, name);
        return *ret ? 1 : p->rc;
    }
    size_t t = s + 2;
    unsigned flags = p->flags;
    int sign = 1, saw = 0;
    while (t < p->n) {
        uint32_t c;
        size_t w;
        if (next_rune(p, t, &c, &w) < 0) return p->rc;
        t += w;
        switch (c) {
        case 'i':
            flags |= F_FOLD;
            saw = 1;
            continue;
        case 'm':
            flags &= ~(unsigned)F_ONELINE;
            saw = 1;
            continue;
        case 's':
            flags |= F_DOTNL;
            saw = 1;
            continue;
        case 'U':
            flags |= F_NONGREEDY;
            saw = 1;
            continue;
        case '-':
            if (sign < 0) break;
            sign = -1;
            flags = ~flags;
            saw = 0;
            continue;
        case ':':
        case ')':
            if (sign < 0) {
                if (!saw) break;
                flags = ~flags;
            }
            p->i = t;
            if (c == ':') {
                *ret = parse_group(p, flags, 0, (base_str){"", 0});
                return *ret ? 1 : p->rc;
            }
            p->flags = flags;
            return 0;
        default: break;
        }
        break;
    }
    return fail(p, E_PERLOP, s, t);
}

static labels__rx_node *parse_concat(parser *p) {
    items it = {0};
    size_t last_repeat = SIZE_MAX;
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        size_t repeat_here = SIZE_MAX;
        size_t i = p->i;
        char c = p->s[i];
        switch (c) {
        case '(':
            if (p->n - i >= 2 && p->s[i + 1] == '?') {
                labels__rx_node *g = NULL;
                int rc = parse_perl_flags(p, &g);
                if (rc < 0) return NULL;
                if (rc == 1 && push(p, &it, g) < 0) return NULL;
                break;
            }
            {
                int cap = add_cap(p, (base_str){"", 0});
                if (cap < 0) return NULL;
                p->i = i + 1;
                if (push(p, &it, parse_group(p, p->flags, cap, (base_str){"", 0})) < 0) return NULL;
            }
            break;
        case '^':
            if (push(p, &it, node(p, (p->flags & F_ONELINE) ? RX_BOT : RX_BOL)) < 0) return NULL;
            p->i++;
            break;
        case '$':
            if (push(p, &it, node(p, (p->flags & F_ONELINE) ? RX_EOT : RX_EOL)) < 0) return NULL;
            p->i++;
            break;
        case '.': {
            labels__rx_node *n = node(p, RX_ANY);
            if (n) n->dotnl = (p->flags & F_DOTNL) != 0;
            if (push(p, &it, n) < 0) return NULL;
            p->i++;
            break;
        }
        case '[':
            if (push(p, &it, parse_class(p)) < 0) return NULL;
            break;
        case '*':
        case '+':
        case '?':
        case '{': {
            uint8_t op = c == '*' ? RX_STAR : c == '+' ? RX_PLUS : c == '?' ? RX_QUEST : RX_REPEAT;
            int min = 0, max = 0;
            size_t after = i + 1;
            if (c == '{') {
                if (!parse_repeat(p, i, &min, &max, &after)) {
                    if (push_lit(p, &it, '{') < 0) return NULL;
                    p->i++;
                    break;
                }
                if (min < 0 || min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)) {
                    fail(p, E_REPEATSIZE, i, after);
                    return NULL;
                }
            }
            int nongreedy = (p->flags & F_NONGREEDY) != 0;
            if (after < p->n && p->s[after] == '?') {
                after++;
                nongreedy = !nongreedy;
            }
            if (last_repeat != SIZE_MAX) {
                fail(p, E_REPEATOP, last_repeat, after);
                return NULL;
            }
            if (it.n == 0) {
                fail(p, E_REPEATARG, i, after);
                return NULL;
            }
            if (apply_repeat(p, &it, op, min, max, nongreedy) < 0) return NULL;
            if (op == RX_REPEAT && (min >= 2 || max >= 2) && !repeat_valid(it.v[it.n - 1], MAX_REPEAT)) {
                fail(p, E_REPEATSIZE, i, after);
                return NULL;
            }
            repeat_here = i;
            p->i = after;
            break;
        }
        case '\\': {
            if (p->n - i >= 2) {
                uint8_t op = 0;
                switch (p->s[i + 1]) {
                case 'A': op = RX_BOT; break;
                case 'b': op = RX_WORDB; break;
                case 'B': op = RX_NWORDB; break;
                case 'z': op = RX_EOT; break;
                case 'C': fail(p, E_ESCAPE, i, i + 2); return NULL;
                case 'Q': {
                    size_t from = i + 2, to = p->n, next = p->n;
                    for (size_t k = from; k + 1 < p->n; k++)
                        if (p->s[k] == '\\' && p->s[k + 1] == 'E') {
                            to = k;
                            next = k + 2;
                            break;
                        }
                    for (size_t k = from; k < to;) {
                        uint32_t r;
                        size_t w = labels__utf8_decode((const uint8_t *)p->s + k, to - k, &r);
                        if (r == 0xFFFD && w == 1) {
                            fail(p, E_UTF8, k, to);
                            return NULL;
                        }
                        if (push_lit(p, &it, r) < 0) return NULL;
                        k += w;
                    }
                    p->i = next;
                    goto next_token;
                }
                default: break;
                }
                if (op) {
                    if (push(p, &it, node(p, op)) < 0) return NULL;
                    p->i = i + 2;
                    break;
                }
                if (p->s[i + 1] == 'p' || p->s[i + 1] == 'P') {
                    cbuild cb = {0};
                    if (parse_uclass(p, &cb) < 0) return NULL;
                    if (push(p, &it, class_node(p, &cb, 0)) < 0) return NULL;
                    break;
                }
                cbuild cb = {0};
                int pc = parse_perl_class(p, &cb);
                if (pc < 0) return NULL;
                if (pc) {
                    if (push(p, &it, class_node(p, &cb, 0)) < 0) return NULL;
                    break;
                }
            }
            uint32_t r;
            size_t next;
            if (parse_escape(p, i, &r, &next) < 0) return NULL;
            if (push_lit(p, &it, r) < 0) return NULL;
            p->i = next;
            break;
        }
        default: {
            uint32_t r;
            size_t w;
            if (next_rune(p, i, &r, &w) < 0) return NULL;
            if (push_lit(p, &it, r) < 0) return NULL;
            p->i = i + w;
            break;
        }
        }
    next_token:
        last_repeat = repeat_here;
    }
    return finish_seq(p, &it, RX_CAT);
}

static labels__rx_node *parse_alt(parser *p) {
    items it = {0};
    for (;;) {
        if (push(p, &it, parse_concat(p)) < 0) return NULL;
        if (p->i < p->n && p->s[p->i] == '|') {
            p->i++;
            continue;
        }
        break;
    }
    return finish_seq(p, &it, RX_ALT);
}

/* Go's calcSize, saturating. */
static int64_t calc_size(const labels__rx_node *n) {
    int64_t size = 0;
    switch (n->op) {
    case RX_LIT: size = (int64_t)n->nrunes; break;
    case RX_CAP:
    case RX_STAR: size = 2 + calc_size(n->sub[0]); break;
    case RX_PLUS:
    case RX_QUEST: size = 1 + calc_size(n->sub[0]); break;
    case RX_CAT:
    case RX_ALT:
        for (size_t k = 0; k < n->nsub; k++) {
            size += calc_size(n->sub[k]);
            if (size > MAX_SIZE) return MAX_SIZE + 1;
        }
        if (n->op == RX_ALT && n->nsub > 1) size += (int64_t)n->nsub - 1;
        break;
    case RX_REPEAT: {
        int64_t sub = calc_size(n->sub[0]);
        if (n->max == -1)
            size = n->min == 0 ? 2 + sub : 1 + (int64_t)n->min * sub;
        else
            size = (int64_t)n->max * sub + (n->max - n->min);
        break;
    }
    default: break;
    }
    if (size < 1) size = 1;
    return size > MAX_SIZE ? MAX_SIZE + 1 : size;
}

int labels__rx_parse(base_arena *a, base_str s, labels__rx_tree *ret, char *err, size_t errlen) {
    parser p = {0};
    p.a = a;
    p.s = s.p ? s.p : "";
    p.n = s.n;
    p.flags = F_ONELINE;
    p.err = err;
    p.errlen = errlen;
    labels__rx_node *root = parse_alt(&p);
    if (root && p.i < p.n) { /* stopped at a ')' with no group open */
        fail(&p, E_UNEXPAREN, 0, p.n);
        root = NULL;
    }
    if (root && calc_size(root) > MAX_SIZE) {
        fail(&p, E_LARGE, 0, p.n);
        root = NULL;
    }
    if (!root) return p.rc ? p.rc : BASE_E_NOMEM;
    ret->root = root;
    ret->ncap = p.ncap;
    ret->names = p.names;
    return 0;
}
