/* tsdb_cli.c -- the `kelvin tsdb` command line: subcommands, flags,
 * arguments, what goes to stdout and stderr, and exit statuses.
 *
 *   create-blocks-from openmetrics FILE [OUTPUT_DIR=data/]
 *       --max-block-duration=2h --human-readable/-r --quiet/-q
 *       --max-samples-in-memory=N
 *   dump [DB_PATH=data/]  --min-time --max-time --match
 *   dump-openmetrics [DB_PATH=data/]  the same flags (OpenMetrics text)
 *   analyze [DB_PATH=data/] [BLOCK_ID=newest]  --limit=20 --extended
 *   list [DB_PATH=data/]  --human-readable/-r
 *
 * Flags and arguments may come in any order (kingpin, which promtool
 * uses, allows that too); promtool's short -r and -q are accepted. Exit
 * status: 0 done; 1 failed, or done but some block was damaged (reported
 * on stderr, one line each); 2 bad usage. Errors go to stderr as one line,
 * in promtool's words where promtool has words for it.
 *
 * The work is in tsdb_backfill.c, tsdb_blocks.c, tsdb_dump.c and
 * tsdb_analyze.c; this file only wires it to argv and the streams.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/flag.h"
#include "promql/promql.h"
#include "tools/tools.h"
#include "tools/tools_int.h"

#define DEFAULT_DB "data/"
#define MAX_ARGS   64

/* Splits argv[1..] into flags (for base_flags_parse, with argv[0] kept)
 * and positional arguments. A long flag that takes a value may have it as
 * the next argument; "--" ends the flags; -r / -q stand for
 * --human-readable / --quiet where the table has them. */
typedef struct args {
    char *fv[MAX_ARGS + 1];
    int fc;
    char *pv[MAX_ARGS];
    int pc;
} args;

static const base_flag *find_flag(const base_flag *f, size_t n, const char *name, size_t nl) {
    for (size_t i = 0; i < n; i++)
        if (strlen(f[i].name) == nl && strncmp(f[i].name, name, nl) == 0) return &f[i];
    return NULL;
}

static int split_args(const base_flag *f, size_t nf, int argc, char **argv, args *a, const char *cmd) {
    static char hr[] = "--human-readable", qt[] = "--quiet";
    a->fc = 0;
    a->pc = 0;
    a->fv[a->fc++] = argv[0];
    int only_pos = 0;
    for (int i = 1; i < argc; i++) {
        char *s = argv[i];
        if (a->fc >= MAX_ARGS || a->pc >= MAX_ARGS) {
            fprintf(stderr, "kelvin tsdb %s: too many arguments\n", cmd);
            return -1;
        }
        if (only_pos || s[0] != '-' || s[1] == '\0') {
            a->pv[a->pc++] = s;
            continue;
        }
        if (strcmp(s, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(s, "-r") == 0 && find_flag(f, nf, "human-readable", 14)) {
            a->fv[a->fc++] = hr;
            continue;
        }
        if (strcmp(s, "-q") == 0 && find_flag(f, nf, "quiet", 5)) {
            a->fv[a->fc++] = qt;
            continue;
        }
        a->fv[a->fc++] = s;
        if (s[1] == '-' && !strchr(s, '=')) {
            const base_flag *fl = find_flag(f, nf, s + 2, strlen(s + 2));
            if (fl && fl->kind != BASE_FLAG_BOOL && i + 1 < argc && a->fc < MAX_ARGS)
                a->fv[a->fc++] = argv[++i];
        }
    }
    a->fv[a->fc] = NULL;
    return 0;
}

/* Parses the flags; 1: help was printed (exit 0), -1: usage error
 * printed (exit 2), 0: go on. */
static int parse(const base_flag *f, size_t nf, int argc, char **argv, args *a, const char *cmd,
                 const char *usage_line, const char *summary, const char *args_help, int min_pos,
                 int max_pos) {
    if (split_args(f, nf, argc, argv, a, cmd)) return -1;
    char err[256];
    int r = base_flags_parse(f, nf, a->fc, a->fv, err, sizeof err);
    if (r == 1) {
        base_flags_usage(stdout, usage_line, summary, f, nf);
        fprintf(stdout, "\nArgs:\n%s", args_help);
        return 1;
    }
    if (r) {
        fprintf(stderr, "kelvin tsdb %s: %s\n", cmd, err);
        return -1;
    }
    if (a->pc < min_pos || a->pc > max_pos) {
        fprintf(stderr, "kelvin tsdb %s: %s\nusage: %s\n", cmd,
                a->pc < min_pos ? "missing arguments" : "too many arguments", usage_line);
        return -1;
    }
    return 0;
}

static void report_bad(void *ctx, const char *dir, const char *msg) {
    (void)ctx;
    fprintf(stderr, "skipping damaged block %s: %s\n", dir, msg);
}

static void report_chunk(void *ctx, const char *dir, const char *msg) {
    (void)ctx;
    (void)dir;
    fprintf(stderr, "%s\n", msg);
}

/* ---- create-blocks-from openmetrics ------------------------------------- */

typedef struct bf_print {
    int human, quiet, wrote_header;
    uint64_t blocks;
} bf_print;

static void on_block(void *ctx, const tsdb_block_meta *m, const char *dir) {
    bf_print *p = ctx;
    p->blocks++;
    if (p->quiet) return;
    char path[4200];
    struct stat st;
    uint64_t size = m->chunk_bytes + m->index_bytes;
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (stat(path, &st) == 0) size += (uint64_t)st.st_size;
    const tsdb_block_meta *ms[1] = {m};
    tools_tsdb_print_blocks(stdout, ms, &size, 1, !p->wrote_header, p->human);
    p->wrote_header = 1;
    fflush(stdout);
}

static int cmd_backfill(int argc, char **argv) {
    int64_t maxdur = 2 * 3600 * 1000, maxmem = (int64_t)TOOLS_BACKFILL_DEFAULT_BATCH;
    int human = 0, quiet = 0;
    const base_flag flags[] = {
        {"max-block-duration", BASE_FLAG_DURATION, &maxdur,
         "Maximum duration created blocks may span: 2h unless this is larger, then the largest of "
         "2h times a power of 3 (6h, 18h, 54h, ...) not above it, as promtool."},
        {"human-readable", BASE_FLAG_BOOL, &human, "Print human readable values (-r)."},
        {"quiet", BASE_FLAG_BOOL, &quiet, "Do not print created blocks (-q)."},
        {"max-samples-in-memory", BASE_FLAG_INT, &maxmem,
         "Samples held in memory per pass over the input; lower means more passes."},
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *usage =
        "kelvin tsdb create-blocks-from [<flags>] openmetrics <input file> [<output directory>]";
    args a;
    int r = parse(flags, nf, argc, argv, &a, "create-blocks-from", usage,
                  "Import samples from OpenMetrics input and produce TSDB blocks (as promtool 2.42 does:\n"
                  "every sample needs a timestamp; one block per aligned block-duration range with samples).",
                  "  <input file>          OpenMetrics file to read samples from (must end with # EOF).\n"
                  "  [<output directory>]  Output directory for generated blocks (default is data/).\n",
                  2, 3);
    if (r) return r > 0 ? 0 : 2;
    if (strcmp(a.pv[0], "openmetrics") != 0) {
        fprintf(stderr, "kelvin tsdb create-blocks-from: unknown input format %s (only openmetrics)\n",
                a.pv[0]);
        return 2;
    }
    if (maxmem <= 0) {
        fprintf(stderr, "kelvin tsdb create-blocks-from: --max-samples-in-memory must be positive\n");
        return 2;
    }
    const char *path = a.pv[1], *out = a.pc > 2 ? a.pv[2] : DEFAULT_DB;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "open %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "open %s: not a regular file\n", path);
        close(fd);
        return 1;
    }
    size_t len = (size_t)st.st_size;
    void *map = NULL;
    if (len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            fprintf(stderr, "mmap %s: %s\n", path, strerror(errno));
            close(fd);
            return 1;
        }
        madvise(map, len, MADV_SEQUENTIAL);
    }
    close(fd);
    bf_print pr = {human, quiet, 0, 0};
    tools_backfill_opts o = {.max_block_duration_ms = maxdur,
                             .max_samples_in_memory = (uint64_t)maxmem,
                             .on_block = on_block,
                             .ctx = &pr};
    tools_backfill_result res;
    char err[1024];
    int e = tools_backfill_openmetrics(map ? map : "", len, out, &o, &res, err, sizeof err);
    if (map) munmap(map, len);
    if (e) {
        fprintf(stderr, "%s\n", err);
        if (pr.blocks)
            fprintf(stderr, "the %llu blocks written before the error were removed again\n",
                    (unsigned long long)pr.blocks);
        return 1;
    }
    uint64_t dropped = res.dropped_ooo + res.dropped_dup + res.dropped_dup_diff;
    if (dropped)
        fprintf(
            stderr,
            "dropped %llu of %llu samples whose timestamp was not after the one before it in their series "
            "and "
            "block (%llu out of order, %llu duplicates, %llu duplicate timestamps with another value), as "
            "promtool does\n",
            (unsigned long long)dropped, (unsigned long long)res.samples_read,
            (unsigned long long)res.dropped_ooo, (unsigned long long)res.dropped_dup,
            (unsigned long long)res.dropped_dup_diff);
    return 0;
}

/* ---- dump ---------------------------------------------------------------- */

static int dump_cmd(int argc, char **argv, int om) {
    int64_t mint = INT64_MIN, maxt = INT64_MAX;
    const char *match = "{__name__=~'(?s:.*)'}";
    const base_flag flags[] = {
        {"min-time", BASE_FLAG_INT, &mint, "Minimum timestamp to dump (ms)."},
        {"max-time", BASE_FLAG_INT, &maxt, "Maximum timestamp to dump (ms)."},
        {"match", BASE_FLAG_STRING, &match, "Series selector."},
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *usage =
        om ? "kelvin tsdb dump-openmetrics [<flags>] [<db path>]" : "kelvin tsdb dump [<flags>] [<db path>]";
    args a;
    int r = parse(
        flags, nf, argc, argv, &a, om ? "dump-openmetrics" : "dump", usage,
        om ? "Dump samples from a TSDB as OpenMetrics text (no stale markers), which create-blocks-from "
             "openmetrics reads back."
           : "Dump samples from a TSDB: `{labels} value timestamp`, one line per sample (as promtool).",
        "  [<db path>]  Database path (default is data/).\n", 0, 1);
    if (r) return r > 0 ? 0 : 2;
    const char *db = a.pc ? a.pv[0] : DEFAULT_DB;
    char err[1024];
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = db;
    o.read_only = 1;
    o.on_bad_block = report_bad;
    tsdb_db *tdb;
    tsdb_db_report rep;
    if (tsdb_db_open(&o, &tdb, &rep, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* promtool parses --match with 2.42's parser.ParseMetricSelector,
     * after opening the database (a bad directory is reported first). */
    labels_matcher **ms = NULL;
    size_t nms = 0;
    base_buf msg;
    base_buf_init(&msg, 0);
    if (promql_parse_selector_msg(match, strlen(match), &ms, &nms, &msg)) {
        if (base_buf_err(&msg)) {
            base_buf_reset(&msg);
            base_buf_puts(&msg, "out of memory");
        }
        fwrite(msg.data ? msg.data : "", 1, msg.len, stderr);
        fputc('\n', stderr);
        base_buf_free(&msg);
        tsdb_db_close(tdb);
        return 1;
    }
    base_buf_free(&msg);
    if (rep.wal.corruptions) fprintf(stderr, "WAL: %s (the damaged part is skipped)\n", rep.wal.first_error);
    tools_dump_result res;
    int e = (om ? tools_tsdb_dump_openmetrics : tools_tsdb_dump)(tdb, ms, nms, mint, maxt, stdout,
                                                                 report_chunk, NULL, &res, err, sizeof err);
    int rc = 0;
    if (e) {
        fprintf(stderr, "%s\n", err);
        rc = 1;
    } else if (rep.blocks_bad || res.bad_series) {
        fprintf(stderr, "%zu damaged blocks skipped, %llu series cut short by damaged chunks\n",
                rep.blocks_bad, (unsigned long long)res.bad_series);
        rc = 1;
    }
    tsdb_db_close(tdb);
    labels_matchers_free(ms, nms);
    return rc;
}

static int cmd_dump(int argc, char **argv) {
    return dump_cmd(argc, argv, 0);
}
static int cmd_dump_om(int argc, char **argv) {
    return dump_cmd(argc, argv, 1);
}

/* ---- analyze ------------------------------------------------------------- */

static int cmd_analyze(int argc, char **argv) {
    int64_t limit = 20;
    int extended = 0;
    const base_flag flags[] = {
        {"limit", BASE_FLAG_INT, &limit, "How many items to show in each list."},
        {"extended", BASE_FLAG_BOOL, &extended, "Run extended analysis (chunk fullness)."},
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *usage = "kelvin tsdb analyze [<flags>] [<db path>] [<block id>]";
    args a;
    int r = parse(flags, nf, argc, argv, &a, "analyze", usage,
                  "Analyze churn, label pair cardinality, compaction efficiency and bytes per sample.",
                  "  [<db path>]   Database path (default is data/).\n"
                  "  [<block id>]  Block to analyze (default is the last block).\n",
                  0, 2);
    if (r) return r > 0 ? 0 : 2;
    if (limit < 0) {
        fprintf(stderr, "kelvin tsdb analyze: --limit must not be negative\n");
        return 2;
    }
    const char *db = a.pc ? a.pv[0] : DEFAULT_DB;
    char err[1024];
    tsdb_block *b = NULL;
    tools_blocks bs = {0};
    int rc = 0;
    if (a.pc > 1) {
        tsdb_ulid u;
        char dir[4200];
        if (tsdb_ulid_parse(base_str_c(a.pv[1]), &u)) {
            fprintf(stderr, "block %s not found\n", a.pv[1]);
            return 1;
        }
        snprintf(dir, sizeof dir, "%s/%s", db, a.pv[1]);
        int e = tsdb_block_open(dir, &b, err, sizeof err);
        if (e == BASE_E_NOTFOUND) {
            struct stat st;
            if (stat(dir, &st) != 0) snprintf(err, sizeof err, "block %s not found", a.pv[1]);
        }
        if (e) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    } else {
        if (tools_blocks_open(db, report_bad, NULL, &bs, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        if (!bs.n) {
            fprintf(stderr, "block  not found (no blocks in %s)\n", db);
            tools_blocks_free(&bs);
            return 1;
        }
        if (bs.nbad) rc = 1;
        b = bs.b[bs.n - 1];
    }
    if (tools_tsdb_analyze(b, (size_t)limit, extended, stdout, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        rc = 1;
    }
    if (bs.b)
        tools_blocks_free(&bs);
    else
        tsdb_block_close(b);
    return rc;
}

/* ---- list ------------------------------------------------------------------ */

static int cmd_list(int argc, char **argv) {
    int human = 0;
    const base_flag flags[] = {
        {"human-readable", BASE_FLAG_BOOL, &human, "Print human readable values (-r)."},
    };
    const char *usage = "kelvin tsdb list [<flags>] [<db path>]";
    args a;
    int r = parse(flags, 1, argc, argv, &a, "list", usage, "List tsdb blocks.",
                  "  [<db path>]  Database path (default is data/).\n", 0, 1);
    if (r) return r > 0 ? 0 : 2;
    const char *db = a.pc ? a.pv[0] : DEFAULT_DB;
    char err[1024];
    tools_blocks bs;
    if (tools_blocks_open(db, report_bad, NULL, &bs, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const tsdb_block_meta **metas = calloc(bs.n ? bs.n : 1, sizeof *metas);
    uint64_t *sizes = calloc(bs.n ? bs.n : 1, sizeof *sizes);
    if (!metas || !sizes) {
        free(metas);
        free(sizes);
        tools_blocks_free(&bs);
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < bs.n; i++) {
        metas[i] = tsdb_block_get_meta(bs.b[i]);
        sizes[i] = tools_block_size(bs.b[i]);
    }
    tools_tsdb_print_blocks(stdout, metas, sizes, bs.n, 1, human);
    int rc = bs.nbad ? 1 : 0;
    free(metas);
    free(sizes);
    tools_blocks_free(&bs);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------- */

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *usage, *summary;
} subs[] = {
    {"create-blocks-from", cmd_backfill, "create-blocks-from openmetrics <input file> [<output directory>]",
     "Import samples from OpenMetrics input and produce TSDB blocks."},
    {"dump", cmd_dump, "dump [<flags>] [<db path>]", "Dump samples from a TSDB."},
    {"dump-openmetrics", cmd_dump_om, "dump-openmetrics [<flags>] [<db path>]",
     "Dump samples from a TSDB into OpenMetrics text (for create-blocks-from openmetrics)."},
    {"analyze", cmd_analyze, "analyze [<flags>] [<db path>] [<block id>]",
     "Analyze churn, label pair cardinality, compaction efficiency and bytes per sample."},
    {"list", cmd_list, "list [<flags>] [<db path>]", "List tsdb blocks."},
};

static void usage(FILE *out) {
    fprintf(out, "usage: kelvin tsdb <command> [<args> ...]\n\nRun tsdb commands (promtool's, for Kelvin's "
                 "blocks).\n\nCommands:\n");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        fprintf(out, "  kelvin tsdb %s\n      %s\n", subs[i].usage, subs[i].summary);
    fprintf(out, "\n'kelvin tsdb <command> --help' shows a command's flags.\n");
}

int tools_tsdb_main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(argv[1], subs[i].name) == 0) return subs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "kelvin tsdb: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return 2;
}
