/* storage.c -- the evaluator's view of the TSDB: promql_storage adapters
 * over a database (head and blocks, db.h) and over a bare head (head.h,
 * tests and tools).
 *
 * Both hand the evaluator the series set of a select, sorted by labels,
 * and read a series' samples in batches (the `samples` op: the TSDB's batch
 * readers, which decode chunks straight into the caller's arrays); stale markers pass through unchanged (the
 * evaluator decides what they mean). The set objects are the TSDB's own:
 * no copy, no extra allocation per query.
 */
#include <limits.h>

#include "base/err.h"
#include "promql/promql.h"
#include "tsdb/db.h"
#include "tsdb/head.h"

/* ---- database ---------------------------------------------------------------- */

static int db_select(void *ctx, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                     void **ret_set) {
    tsdb_db_set *s = NULL;
    int rc = tsdb_db_select(ctx, ms, n, mint, maxt, &s);
    if (rc < 0) return rc;
    *ret_set = s;
    return 0;
}

static int db_next(void *set) {
    return tsdb_db_set_next(set);
}

static const labels_set *db_labels(void *set) {
    return tsdb_db_set_labels(set);
}

static int db_samples(void *set, int64_t *t, double *v, size_t cap) {
    return tsdb_db_set_samples(set, t, v, cap > INT_MAX ? INT_MAX : cap);
}

static void db_free(void *set) {
    tsdb_db_set_free(set);
}

static const promql_storage_ops db_ops = {db_select, db_next, db_labels, db_samples, db_free};

promql_storage promql_storage_db(tsdb_db *db) {
    return (promql_storage){&db_ops, db};
}

/* ---- head ----------------------------------------------------------------------- */

static int head_select(void *ctx, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                       void **ret_set) {
    tsdb_series_set *s = NULL;
    int rc = tsdb_head_select(ctx, ms, n, mint, maxt, &s);
    if (rc < 0) return rc;
    *ret_set = s;
    return 0;
}

static int head_next(void *set) {
    return tsdb_series_set_next(set);
}

static const labels_set *head_labels(void *set) {
    return tsdb_series_set_labels(set);
}

static int head_samples(void *set, int64_t *t, double *v, size_t cap) {
    return tsdb_series_set_samples(set, t, v, cap > INT_MAX ? INT_MAX : cap);
}

static void head_free(void *set) {
    tsdb_series_set_free(set);
}

static const promql_storage_ops head_ops = {head_select, head_next, head_labels, head_samples, head_free};

promql_storage promql_storage_head(tsdb_head *h) {
    return (promql_storage){&head_ops, h};
}
