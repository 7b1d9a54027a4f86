/* fuzz/remote_pos.c -- arbitrary bytes as a remote-write position file
 * (src/remote/pos.c, <data_dir>/remote-write/<id>): the parser must refuse
 * or accept without reading outside the input or leaking, and what it
 * accepts must render and parse back to the same acknowledgement vectors
 * (so a restart resumes exactly where the file says). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "remote/remote_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    remote_filter f[REMOTE_MAX_FILTERS + 1], g[REMOTE_MAX_FILTERS + 1];
    size_t n = 0, m = 0;
    if (remote__pos_parse((const char *)data, size, f, REMOTE_MAX_FILTERS + 1, &n) != 0) return 0;
    base_buf out;
    base_buf_init(&out, 0);
    remote__pos_render(&out, "http://127.0.0.1/", f, n);
    if (base_buf_err(&out) == 0) {
        if (remote__pos_parse(out.data, out.len, g, REMOTE_MAX_FILTERS + 1, &m) != 0 || m != n) abort();
        for (size_t i = 0; i < n; i++) {
            if (g[i].n != f[i].n) abort();
            for (unsigned k = 0; k < f[i].n; k++)
                if (remote_ack_cmp(f[i].a[k], g[i].a[k]) != 0) abort();
            remote__filter_free(&g[i]);
        }
    }
    base_buf_free(&out);
    for (size_t i = 0; i < n; i++) remote__filter_free(&f[i]);
    return 0;
}
