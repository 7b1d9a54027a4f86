/* xid.h -- a thread-safe store of NVIDIA XID errors per GPU, fed by the
 * NVML event set and by a tail of the kernel log (/dev/kmsg).
 *
 * Why two sources: NVML's XidCriticalError events need a working driver
 * and library; the kernel log also carries XIDs that NVML cannot deliver
 * once the GPU is gone (79 "fallen off the bus", 119/120 GSP errors). The
 * same XID usually arrives through both, so the store deduplicates:
 *
 *   An event from one source matches at most one earlier, still unmatched
 *   event with the same GPU and code from the OTHER source recorded within
 *   AGENT_XID_DEDUP_WINDOW_NS (either side); a matched event is not
 *   counted again. Events from the same source never match each other, so
 *   two genuine consecutive XIDs with the same code both count, and so do
 *   NVML(13) NVML(13) kmsg(13) kmsg(13) -> 2.
 *
 * Counters only grow (dcgm-exporter's sticky "last XID" gauge is what users
 * complain about; a per-code counter never needs a reset). Memory is
 * bounded: at most AGENT_XID_MAX_GPUS GPUs and AGENT_XID_MAX_CODES distinct
 * codes per GPU; an event past a cap is dropped and counted in
 * agent_xid_stats.dropped.
 *
 * PCI bus ids are normalised to (domain, bus, device), so NVML's
 * "00000000:3B:00.0", the legacy "0000:3b:00.0" and the kernel's
 * "PCI:0000:3b:00" name the same GPU (the function number is ignored: a
 * GPU is function 0, and the kernel does not print it).
 *
 * Thread safety: every function may be called from any thread, except
 * agent_xid_kmsg_start() (call it once, from the store's owner) and
 * agent_xid_free(), which must not race with other calls on the same store.
 */
#ifndef KELVIN_AGENT_XID_H
#define KELVIN_AGENT_XID_H

#include <stddef.h>
#include <stdint.h>

typedef struct agent_xid agent_xid;

typedef struct agent_xid_count {
    unsigned xid;
    uint64_t count;
} agent_xid_count;

enum { AGENT_XID_SRC_NVML = 1, AGENT_XID_SRC_KMSG = 2 };

#define AGENT_XID_MAX_GPUS        64
#define AGENT_XID_MAX_CODES       64
/* Unmatched events kept per GPU for deduplication (oldest replaced first). */
#define AGENT_XID_PENDING         32
#define AGENT_XID_DEDUP_WINDOW_NS ((int64_t)5000000000)

typedef struct agent_xid_stats {
    uint64_t counted[3];   /* events counted, by source (index 1 NVML, 2 KMSG) */
    uint64_t deduplicated; /* events matched to one from the other source */
    uint64_t dropped;      /* events lost to AGENT_XID_MAX_GPUS / _MAX_CODES */
    uint64_t rejected;     /* events with an unreadable bus id or bad source */
    uint64_t kmsg_records; /* records (lines) read from the kernel log */
    uint64_t kmsg_xids;    /* of those, XID lines parsed */
    uint64_t kmsg_lost;    /* EPIPE: records overwritten before we read them */
    int kmsg_running;      /* 1 while the tail thread runs */
} agent_xid_stats;

/* Creates an empty store; 0 or BASE_E_NOMEM. Free with agent_xid_free(). */
int agent_xid_new(agent_xid **ret);
/* Stops the kmsg tail thread (if started), waits for it, frees the store.
 * NULL is a no-op. */
void agent_xid_free(agent_xid *x);

/* Records one XID seen by `source` (AGENT_XID_SRC_*) on the GPU at
 * pci_bus_id, at monotonic time mono_ns (base_mono_ns()). */
void agent_xid_record(agent_xid *x, const char *pci_bus_id, unsigned xid, int source, int64_t mono_ns);

/* Starts a thread that tails the kernel log at `path` (normally /dev/kmsg;
 * a regular file or a FIFO works too, for tests) from its current END, so
 * XIDs logged before the agent started are not counted again, and records
 * every XID line with source AGENT_XID_SRC_KMSG. Returns 0,
 * BASE_E_IO (cannot open: message in err), BASE_E_EXISTS (already started),
 * BASE_E_NOMEM. The thread stops in agent_xid_free(). */
int agent_xid_kmsg_start(agent_xid *x, const char *path, char *err, size_t errlen);

/* Copies up to max per-code counters of the GPU, sorted by XID, into out;
 * returns how many were written (0 for an unknown GPU). At most
 * AGENT_XID_MAX_CODES entries exist per GPU. */
size_t agent_xid_counts(agent_xid *x, const char *pci_bus_id, agent_xid_count *out, size_t max);
/* The code of the last XID counted on the GPU: 0 or BASE_E_NOTFOUND. */
int agent_xid_last(agent_xid *x, const char *pci_bus_id, unsigned *ret_xid);
void agent_xid_stats_get(agent_xid *x, agent_xid_stats *ret);

/* NVIDIA's short description of an XID (the table dcgm-exporter uses for
 * its err_msg label), "" if unknown. Static storage. */
const char *agent_xid_message(unsigned xid);

/* Parses one kernel log line or /dev/kmsg record ("pri,seq,ts,flags;msg",
 * the header optional) of the form
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus.
 *   NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:00): 94, pid=7194, Contained: ...
 * Writes the normalised bus id ("0000:3b:00") and the code; 0 or
 * BASE_E_PARSE. */
int agent_xid_parse_kmsg(const char *line, size_t n, char ret_bdf[32], unsigned *ret_xid);

/* Normalises a PCI bus id in any of the forms above ("PCI:" prefix
 * optional, domain optional, ".function" optional) to
 * "dddd:bb:dd" (lowercase, domain at least 4 digits): 0 or BASE_E_PARSE. */
int agent_xid_bdf_normalize(const char *s, size_t n, char ret[32]);

#endif
