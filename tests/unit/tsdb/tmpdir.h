/* tmpdir.h -- scratch directories for the tsdb unit tests (header-only,
 * included after <cmocka.h>): kelvin_tmpdir() makes one under /tmp and
 * returns it (caller frees), kelvin_rm_rf() removes a tree. */
#ifndef KELVIN_TESTS_TSDB_TMPDIR_H
#define KELVIN_TESTS_TSDB_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int kelvin__rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static inline void kelvin_rm_rf(const char *p) {
    nftw(p, kelvin__rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* prefix: "block", "head", "wal" -- shows in the directory name. */
static inline char *kelvin_tmpdir(const char *prefix) {
    char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "/tmp/kelvin-%s-XXXXXX", prefix);
    char *d = strdup(tmpl);
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

#endif
