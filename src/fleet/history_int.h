/* history_int.h -- `kelvin sim history`, shared inside the fleet module
 * (fleet.c dispatches to it; not a public header).
 *
 * The command writes a scenario's simulated telemetry straight into
 * storage blocks (history.c explains how). The two pure helpers below are
 * exposed for the command's own use and for tests.
 */
#ifndef KELVIN_FLEET_HISTORY_INT_H
#define KELVIN_FLEET_HISTORY_INT_H

#include <stddef.h>
#include <stdint.h>

/* `kelvin sim history [flags]`: argv[0] is "history". Returns the exit
 * status (0 ok, 1 failure, 2 usage). */
int fleet__history_main(int argc, char **argv);

/* The block duration for a history: the largest of 2 h x 3^i (i <= 4,
 * as promtool's backfill aligns blocks) or 2 h / 2^j (j <= 8) that is at
 * most max_ms and whose values (series x scrapes x 8 bytes) fit budget
 * bytes; never below 2 h / 2^8 (about 28 s) or the scrape interval. */
int64_t fleet__history_block_ms(uint64_t series, int64_t interval_ms, int64_t max_ms, uint64_t budget);

#endif
