/* fuzz/discovery_http_sd.c -- fuzz target for the http_sd body parser: the
 * body of fuzz/discovery_file_sd.c with DISC_FUZZ_HTTP (the whole input is
 * a JSON body; same invariants and JSON round trip). */
#define DISC_FUZZ_HTTP 1
#include "discovery_file_sd.c"
