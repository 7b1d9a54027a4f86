/* fuzz/agent_kmsg.c -- fuzzes the kernel log XID parser
 * (agent_xid_parse_kmsg) and the bus id normaliser, and checks the round
 * trip: a parsed (bus id, code) written back in the driver's format parses
 * to the same pair, the bus id is already normal, and the store counts it
 * once per GPU and code even when both sources report it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    char norm[32];
    if (agent_xid_bdf_normalize(s, size, norm) == 0) {
        char again[32];
        if (agent_xid_bdf_normalize(norm, strlen(norm), again) != 0 || strcmp(norm, again) != 0) abort();
    }

    char bdf[32];
    unsigned xid;
    if (agent_xid_parse_kmsg(s, size, bdf, &xid) != 0) return 0;
    size_t bl = strnlen(bdf, sizeof bdf);
    if (bl == 0 || bl >= sizeof bdf) abort();
    char again[32];
    if (agent_xid_bdf_normalize(bdf, bl, again) != 0 || strcmp(bdf, again) != 0) abort();

    char line[128];
    int n = snprintf(line, sizeof line, "6,1,2,-;NVRM: Xid (PCI:%s): %u, pid=1, name=x, msg", bdf, xid);
    char bdf2[32];
    unsigned xid2;
    if (n <= 0 || agent_xid_parse_kmsg(line, (size_t)n, bdf2, &xid2) != 0) abort();
    if (strcmp(bdf, bdf2) != 0 || xid != xid2) abort();
    (void)agent_xid_message(xid);

    agent_xid *x;
    if (agent_xid_new(&x) != 0) return 0;
    agent_xid_record(x, bdf, xid, AGENT_XID_SRC_KMSG, 1000);
    agent_xid_record(x, bdf, xid, AGENT_XID_SRC_NVML, 2000);
    agent_xid_count c[2];
    unsigned last;
    if (agent_xid_counts(x, bdf, c, 2) != 1 || c[0].xid != xid || c[0].count != 1) abort();
    if (agent_xid_last(x, bdf, &last) != 0 || last != xid) abort();
    agent_xid_free(x);
    return 0;
}
