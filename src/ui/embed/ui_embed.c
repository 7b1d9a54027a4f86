/* ui_embed.c -- build-time generator of the web UI's asset table.
 *
 * Usage: ui_embed OUT.c INDEX.html NAME=FILE...
 * Reads index.html and every NAME=FILE (web/src's files, uPlot's dist
 * files from the build directory's node_modules), and writes OUT.c: one
 * ui_asset per file (ui/ui.h) with its bytes, a gzip variant (libdeflate
 * level 12, kept only when smaller), its content type (by extension) and a
 * strong ETag (xxh3-64 of the bytes). A build hash (xxh3-64 over every
 * name and content) names the prefix /ui/<hash>/ every NAME is served
 * under; "%BASE%" in index.html becomes "ui/<hash>/" (relative, so the UI
 * also works behind a path prefix) and index.html is served at "/".
 * The table is sorted by path (strcmp) for bisection. Says on stdout what
 * it wrote.
 *
 * Limits: 512 files, 16 MiB each, names of 200 bytes of [A-Za-z0-9._/-].
 * Ownership: a build tool; every buffer is freed before exit (it runs
 * under the sanitizers in sanitized builds).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <xxhash.h>

#define MAX_FILES      512
#define MAX_FILE_BYTES (16u << 20)
#define MAX_NAME       200

typedef struct entry {
    char path[MAX_NAME + 64];
    unsigned char *data;
    size_t len;
    unsigned char *gz;
    size_t gz_len;
    const char *type;
    uint64_t hash;
    int immutable;
} entry;

static int read_file(const char *fn, unsigned char **ret, size_t *ret_len) {
    FILE *fp = fopen(fn, "rb");
    if (!fp) {
        fprintf(stderr, "ui_embed: cannot open %s\n", fn);
        return -1;
    }
    size_t cap = 65536, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            if (cap >= MAX_FILE_BYTES) {
                fprintf(stderr, "ui_embed: %s is larger than %u bytes\n", fn, MAX_FILE_BYTES);
                free(buf);
                fclose(fp);
                return -1;
            }
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, fp);
        len += n;
        if (n == 0) break;
    }
    int bad = !buf || ferror(fp);
    fclose(fp);
    if (bad) {
        fprintf(stderr, "ui_embed: cannot read %s\n", fn);
        free(buf);
        return -1;
    }
    *ret = buf;
    *ret_len = len;
    return 0;
}

static const char *content_type(const char *name) {
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".json", "application/json"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
    };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t e = strlen(types[i].ext);
        if (n > e && strcmp(name + n - e, types[i].ext) == 0) return types[i].type;
    }
    return "application/octet-stream";
}

static int valid_name(const char *s, size_t n) {
    if (n == 0 || n > MAX_NAME || s[0] == '/' || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-' || c == '/';
        if (!ok) return 0;
        if (c == '.' && i > 0 && s[i - 1] == '.') return 0;
    }
    return 1;
}

/* index.html with every %BASE% replaced by base. */
static unsigned char *substitute(const unsigned char *in, size_t len, const char *base, size_t *ret_len) {
    static const char key[] = "%BASE%";
    size_t klen = sizeof key - 1, blen = strlen(base), count = 0;
    for (size_t i = 0; i + klen <= len; i++)
        if (memcmp(in + i, key, klen) == 0) count++, i += klen - 1;
    size_t outlen = len + count * blen;
    unsigned char *out = malloc(outlen + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (i + klen <= len && memcmp(in + i, key, klen) == 0) {
            memcpy(out + o, base, blen);
            o += blen;
            i += klen;
        } else {
            out[o++] = in[i++];
        }
    }
    *ret_len = o;
    return out;
}

static int by_path(const void *a, const void *b) {
    return strcmp(((const entry *)a)->path, ((const entry *)b)->path);
}

/* The bytes as a C array, followed by a NUL that len does not count (text
 * assets can then be read as C strings). */
static void write_bytes(FILE *fp, const char *name, const unsigned char *p, size_t n) {
    fprintf(fp, "static const unsigned char %s[%zu] = {", name, n + 1);
    for (size_t i = 0; i < n; i++) fprintf(fp, "%s%u,", i % 24 == 0 ? "\n    " : "", p[i]);
    fputs("0\n};\n", fp);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc - 3 > MAX_FILES) {
        fprintf(stderr, "usage: ui_embed OUT.c INDEX.html NAME=FILE... (at most %d files)\n", MAX_FILES);
        return 2;
    }
    size_t n = (size_t)argc - 2;
    entry *es = calloc(n, sizeof *es);
    struct libdeflate_compressor *gz = libdeflate_alloc_compressor(12);
    int rc = 1;
    if (!es || !gz) {
        fprintf(stderr, "ui_embed: out of memory\n");
        goto out;
    }
    /* es[0] is index.html; its bytes are rewritten once the hash is known */
    if (read_file(argv[2], &es[0].data, &es[0].len) != 0) goto out;
    snprintf(es[0].path, sizeof es[0].path, "/");
    es[0].type = content_type("index.html");
    XXH3_state_t *st = XXH3_createState();
    if (!st) goto out;
    XXH3_64bits_reset(st);
    for (size_t i = 1; i < n; i++) {
        const char *arg = argv[i + 2], *eq = strchr(arg, '=');
        if (!eq || !valid_name(arg, (size_t)(eq - arg))) {
            fprintf(stderr, "ui_embed: bad argument %s (want NAME=FILE, NAME of [A-Za-z0-9._/-])\n", arg);
            XXH3_freeState(st);
            goto out;
        }
        if (read_file(eq + 1, &es[i].data, &es[i].len) != 0) {
            XXH3_freeState(st);
            goto out;
        }
        snprintf(es[i].path, sizeof es[i].path, "%.*s", (int)(eq - arg), arg);
        es[i].type = content_type(es[i].path);
        es[i].immutable = 1;
        XXH3_64bits_update(st, es[i].path, strlen(es[i].path) + 1);
        XXH3_64bits_update(st, es[i].data, es[i].len);
    }
    XXH3_64bits_update(st, es[0].data, es[0].len);
    uint64_t build = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    char base[64], rel[64];
    snprintf(base, sizeof base, "/ui/%012llx/", (unsigned long long)(build >> 16));
    snprintf(rel, sizeof rel, "%s", base + 1);
    for (size_t i = 1; i < n; i++) {
        char name[MAX_NAME + 1];
        snprintf(name, sizeof name, "%.*s", MAX_NAME, es[i].path);
        snprintf(es[i].path, sizeof es[i].path, "%.32s%.*s", base, MAX_NAME, name);
    }
    size_t ilen;
    unsigned char *idx = substitute(es[0].data, es[0].len, rel, &ilen);
    if (!idx) goto out;
    free(es[0].data);
    es[0].data = idx;
    es[0].len = ilen;
    size_t total = 0, total_gz = 0;
    for (size_t i = 0; i < n; i++) {
        es[i].hash = XXH3_64bits(es[i].data, es[i].len);
        size_t cap = libdeflate_gzip_compress_bound(gz, es[i].len);
        es[i].gz = malloc(cap);
        if (!es[i].gz) goto out;
        es[i].gz_len = libdeflate_gzip_compress(gz, es[i].data, es[i].len, es[i].gz, cap);
        if (es[i].gz_len == 0 || es[i].gz_len >= es[i].len) es[i].gz_len = 0;
        total += es[i].len;
        total_gz += es[i].gz_len ? es[i].gz_len : es[i].len;
    }
    qsort(es, n, sizeof *es, by_path);
    for (size_t i = 1; i < n; i++)
        if (strcmp(es[i - 1].path, es[i].path) == 0) {
            fprintf(stderr, "ui_embed: %s given twice\n", es[i].path);
            goto out;
        }
    FILE *fp = fopen(argv[1], "w");
    if (!fp) {
        fprintf(stderr, "ui_embed: cannot write %s\n", argv[1]);
        goto out;
    }
    fprintf(fp,
            "/* Generated by src/ui/embed/ui_embed.c: the web UI's files (web/src, uPlot). Do not edit. */\n"
            "#include \"ui/ui_int.h\"\n\n");
    for (size_t i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "d%zu", i);
        write_bytes(fp, nm, es[i].data, es[i].len);
        if (es[i].gz_len) {
            snprintf(nm, sizeof nm, "g%zu", i);
            write_bytes(fp, nm, es[i].gz, es[i].gz_len);
        }
    }
    fprintf(fp, "\nconst char ui__base[] = \"%s\";\nconst size_t ui__n_assets = %zu;\n", base, n);
    fprintf(fp, "const ui_asset ui__assets[%zu] = {\n", n);
    for (size_t i = 0; i < n; i++) {
        char g[32] = "0";
        if (es[i].gz_len) snprintf(g, sizeof g, "g%zu", i);
        fprintf(fp, "    {\"%s\", d%zu, %zu, %s, %zu, \"%s\", \"\\\"%016llx\\\"\", %d},\n", es[i].path, i,
                es[i].len, g, es[i].gz_len, es[i].type, (unsigned long long)es[i].hash, es[i].immutable);
    }
    fputs("};\n", fp);
    if (fclose(fp) != 0) {
        fprintf(stderr, "ui_embed: cannot write %s\n", argv[1]);
        goto out;
    }
    printf("ui_embed: %zu files, %zu bytes (%zu with gzip) under %s -> %s\n", n, total, total_gz, base,
           argv[1]);
    rc = 0;
out:
    if (es)
        for (size_t i = 0; i < n; i++) free(es[i].data), free(es[i].gz);
    free(es);
    if (gz) libdeflate_free_compressor(gz);
    return rc;
}
