/* head_int.h -- test hooks of the head (module-internal). */
#ifndef KELVIN_TSDB_HEAD_INT_H
#define KELVIN_TSDB_HEAD_INT_H

#include <stdint.h>

/* Series hashes are labels_hash(ls) & tsdb__head_hash_mask (default all
 * ones). Tests set it to a few bits to force collisions. Set it before
 * opening a head and restore it after closing. */
extern uint64_t tsdb__head_hash_mask;

#endif
