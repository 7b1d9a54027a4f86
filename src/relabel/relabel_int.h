/* relabel_int.h -- shared inside src/relabel only (and its unit tests).
 *
 * md5.c: RFC 1321 MD5, used by the hashmod action (Prometheus takes
 * md5(value) and reads its last 8 bytes as a big-endian uint64). No
 * Debian library already linked into Kelvin exports MD5, so it lives here;
 * tests/unit/relabel/relabel.c checks it against the RFC's test suite.
 */
#ifndef KELVIN_RELABEL_RELABEL_INT_H
#define KELVIN_RELABEL_RELABEL_INT_H

#include <stddef.h>
#include <stdint.h>

/* relabel_rule.eff_flags */
#define RELABEL__F_VALID        1u /* set by a successful validate */
#define RELABEL__F_TARGET_VAR   2u /* eff_target contains '$' */
#define RELABEL__F_REPL_VAR     4u /* eff_replacement contains '$' */
#define RELABEL__F_REPL_DOLLAR1 8u /* eff_replacement is "$1" or "${1}" */

/* MD5 of p[0..n) into out. */
void relabel__md5(const void *p, size_t n, uint8_t out[16]);
/* Prometheus's hashmod: the last 8 bytes of md5(p[0..n)), big-endian,
 * modulo mod (mod > 0). */
uint64_t relabel__hashmod(const void *p, size_t n, uint64_t mod);
/* 1 if s matches Prometheus's relabelTarget,
 * ^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$ (a label name in which
 * $name / ${name} references may appear, the first token not a digit). */
int relabel__valid_target(const char *s, size_t n);

#endif
