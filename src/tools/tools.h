/* tools.h -- `kelvin tsdb`: promtool's tsdb commands for Kelvin's blocks.
 *
 *   kelvin tsdb create-blocks-from openmetrics FILE [OUTPUT_DIR]
 *   kelvin tsdb dump [--min-time] [--max-time] [--match] [DB_PATH]
 *   kelvin tsdb analyze [--limit] [--extended] [DB_PATH] [BLOCK_ID]
 *   kelvin tsdb list [-r] [DB_PATH]
 *
 * tools_tsdb_main() is the command (flags, printing, exit status). The
 * work behind it is below as library calls that return 0 or a negative
 * BASE_E_* with a message in a caller's buffer, so tests and other
 * programs can drive it without a shell. They write their results to a
 * FILE the caller gives (this module is a program's, so it may print).
 *
 * Compatibility with Prometheus 2.42's promtool (cmd/promtool/tsdb.go,
 * backfill.go) is the rule; README-level notes on what differs and why
 * are in tsdb_backfill.c and tsdb_dump.c. Ownership is stated per call.
 */
#ifndef KELVIN_TOOLS_TOOLS_H
#define KELVIN_TOOLS_TOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/str.h"
#include "labels/labels.h"
#include "tsdb/block.h"
#include "tsdb/db.h"

/* The `kelvin tsdb` command: argv[0] is "tsdb". Returns the exit status. */
int tools_tsdb_main(int argc, char **argv);

/* `kelvin rules backtest ...` (backtest.c): argv[0] is "rules". */
int tools_rules_main(int argc, char **argv);

/* ---- create-blocks-from openmetrics -------------------------------------- */

/* promtool's block duration for --max-block-duration (ms): 2 h unless the
 * flag is larger, then the largest of 2 h * 3^i (i < 10) not above it. */
int64_t tools_backfill_block_duration(int64_t max_block_duration_ms);

typedef struct tools_backfill_opts {
    int64_t max_block_duration_ms; /* 0: 2 h (see above) */
    /* Samples held in memory per pass over the input (several block
     * ranges are gathered per pass while they fit; a single range larger
     * than this is still held whole). 0: TOOLS_BACKFILL_DEFAULT_BATCH. */
    uint64_t max_samples_in_memory;
    /* Called after each block is written (meta and its directory). */
    void (*on_block)(void *ctx, const tsdb_block_meta *m, const char *dir);
    void *ctx;
} tools_backfill_opts;

#define TOOLS_BACKFILL_DEFAULT_BATCH ((uint64_t)8 << 20)

typedef struct tools_backfill_result {
    uint64_t samples_read;     /* sample lines in the input */
    uint64_t samples_written;  /* samples in the blocks written */
    uint64_t dropped_ooo;      /* timestamp before the series' last kept one */
    uint64_t dropped_dup;      /* same timestamp, same value bits */
    uint64_t dropped_dup_diff; /* same timestamp, different value */
    uint64_t blocks;
    uint64_t passes; /* parses of the input, the first included */
} tools_backfill_result;

/* Backfills the OpenMetrics text buf[0..len) into blocks under out_dir
 * (created if missing), as promtool does: every sample needs a timestamp;
 * blocks partition time into aligned ranges of the block duration, one
 * block per range that has samples, its range [first sample, last + 1).
 * Per series and range, a sample whose timestamp is not after the last
 * one kept is dropped (promtool's appender does the same) and counted.
 * Input errors are found by a first pass, before anything is written; on
 * any error every block this call wrote is removed again, as is out_dir
 * if this call created it and it is empty. buf is borrowed. ret (may be
 * NULL) is written on success. Errors: BASE_E_PARSE (input; err names
 * the line), BASE_E_RANGE (a timestamp of INT64_MAX ms), BASE_E_IO,
 * BASE_E_NOMEM, BASE_E_LIMIT. */
int tools_backfill_openmetrics(const char *buf, size_t len, const char *out_dir, const tools_backfill_opts *o,
                               tools_backfill_result *ret, char *err, size_t errlen);

/* ---- the blocks of a data directory ------------------------------------- */

typedef struct tools_blocks {
    tsdb_block **b; /* sorted by minTime, then ULID */
    size_t n;
    size_t nbad; /* block directories that failed to open */
} tools_blocks;

/* Called once per block directory that fails to open (dir, message). */
typedef void (*tools_bad_fn)(void *ctx, const char *dir, const char *msg);

/* Opens every block directory (a name that is a ULID) under path.
 * Damaged blocks are reported through bad (may be NULL), counted and
 * skipped. Errors: BASE_E_NOTFOUND / BASE_E_IO (path unreadable),
 * BASE_E_NOMEM. Free with tools_blocks_free. */
int tools_blocks_open(const char *path, tools_bad_fn bad, void *ctx, tools_blocks *ret, char *err,
                      size_t errlen);
void tools_blocks_free(tools_blocks *bs);

/* Bytes of the block's files (chunk segments, index, meta.json). */
uint64_t tools_block_size(const tsdb_block *b);

/* promtool's `tsdb list` table (-r: human readable times and sizes).
 * promtool aligns each call to printBlocks on its own: header says
 * whether this call prints the header line. */
void tools_tsdb_print_blocks(FILE *out, const tsdb_block_meta *const *metas, const uint64_t *sizes, size_t n,
                             int header, int human);

/* ---- dump ------------------------------------------------------------------ */

/* The selector of --match: promql_parse_selector (promql.h), as promtool's
 * ParseMetricSelector. */

typedef struct tools_dump_result {
    uint64_t series, samples;
    uint64_t bad_series; /* series cut short by a damaged chunk */
} tools_dump_result;

/* Writes every sample of the series matching ms with mint <= t <= maxt in
 * db (blocks and head; open it read-only to look at a live directory), as
 * promtool's dump does: series sorted by labels, one line per sample:
 * `{__name__="x", a="b"} <value as Go's %g> <timestamp ms>`. n == 0
 * selects nothing (as promtool's `{}`). A damaged chunk ends that series'
 * samples from that block, is reported through bad (dir "") and counted;
 * the rest is still written. Errors: BASE_E_IO (writing out),
 * BASE_E_NOMEM. */
int tools_tsdb_dump(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, FILE *out,
                    tools_bad_fn bad, void *ctx, tools_dump_result *ret, char *err, size_t errlen);
/* The same samples as OpenMetrics text (`dump-openmetrics`, tsdb_dump.c):
 * what create-blocks-from openmetrics reads back; stale markers left out. */
int tools_tsdb_dump_openmetrics(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                                FILE *out, tools_bad_fn bad, void *ctx, tools_dump_result *ret, char *err,
                                size_t errlen);

/* ---- analyze --------------------------------------------------------------- */

/* promtool's `tsdb analyze` report of block b (and, with extended, the
 * chunk fullness histogram), plus Kelvin's figures: samples, chunk and
 * index bytes, bytes per sample, chunk encodings. Lists have at most
 * limit entries, ties broken by key. Errors: BASE_E_PARSE (a damaged
 * chunk), BASE_E_NOMEM, BASE_E_IO. */
int tools_tsdb_analyze(tsdb_block *b, size_t limit, int extended, FILE *out, char *err, size_t errlen);

/* ---- check ----------------------------------------------------------------- */

/* `kelvin check config|rules|web-config FILE...` (promtool's arguments,
 * output and exit codes: 0 all valid, 1 a file is invalid, 2 usage; rules
 * also 3 for a lint finding under --lint-fatal). argv[0] is "check". */
int tools_check_main(int argc, char **argv);

/* `kelvin query [range] EXPR`: PromQL against a server's HTTP API, printed
 * as a table or as the API's JSON, with promtool query's errors and exit
 * codes (query.c). */
int tools_query_main(int argc, char **argv);

/* `kelvin test rules FILE...`: promtool's rule unit tests, with its
 * output and exit codes (test_rules.c). argv[0] is "test". */
int tools_test_main(int argc, char **argv);

#endif
