/* discovery_int.h -- what the files of src/discovery share.
 *
 * parse.c   target group documents (file_sd JSON/YAML, http_sd JSON),
 *           group construction, comparison and freeing;
 * dns.c     one DNS lookup (libresolv) turned into one target group;
 * manager.c the manager thread, the sets and the four kinds of providers.
 *
 * Limits that bound what one input can grow (every parser enforces them):
 * a document's bytes, its groups, its targets and its label pairs.
 */
#ifndef KELVIN_DISCOVERY_DISCOVERY_INT_H
#define KELVIN_DISCOVERY_DISCOVERY_INT_H

#include <stddef.h>

#include "discovery/discovery.h"

#define DISC_MAX_DOC_BYTES ((size_t)64 << 20) /* a file_sd file or an http_sd body */
#define DISC_MAX_GROUPS    100000             /* groups in one document */
#define DISC_MAX_ITEMS     4000000            /* targets + label pairs in one document */
#define DISC_MAX_FILES     4096               /* files one file_sd provider reads */

/* The mechanisms; also the indexes of disc_stats.refreshes/failures. */
enum {
    DISC_KIND_FILE = DISC_STATS_FILE,
    DISC_KIND_DNS = DISC_STATS_DNS,
    DISC_KIND_HTTP = DISC_STATS_HTTP,
    DISC_KIND_STATIC = DISC_STATS_STATIC
};

/* A new group that owns copies of `source`; labels and targets start empty
 * (labels = labels_empty()). NULL when out of memory. */
disc_group *disc__group_new(const char *source);
void disc__group_free(disc_group *g);
/* Appends a target (takes ownership of t, also on failure). 0 or
 * BASE_E_NOMEM. */
int disc__group_add_target(disc_group *g, labels_set *t);
/* Same source, labels and targets (in order). */
int disc__group_equal(const disc_group *a, const disc_group *b);
int disc__groups_equal(disc_group *const *a, size_t na, disc_group *const *b, size_t nb);

/* One DNS lookup of `name` (res_nsearch): a group with source = name and a
 * target per usable answer record. An answer saying the name does not
 * exist, or has no records of the type, gives a group without targets; a
 * failure (server error, timeout, bad answer) is BASE_E_IO / BASE_E_PARSE
 * with the reason in err. `server` is "ip:port" of a loopback server to
 * ask instead of resolv.conf's (the KELVIN_DNS_SERVER hook) or NULL. */
int disc__dns_lookup(const char *name, cfg_dns_type type, unsigned port, const char *server, disc_group **ret,
                     char *err, size_t errlen);

#endif
