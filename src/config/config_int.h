/* config_int.h -- the config module's insides: the helpers the decoder
 * (load.c) and the comparisons (util.c) share. The YAML tree they decode
 * is public (config/yaml.h: the rules module reads rule files with it).
 */
#ifndef KELVIN_CONFIG_CONFIG_INT_H
#define KELVIN_CONFIG_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "config/yaml.h"

#define CFG__MAX_FILE (64u << 20) /* bytes of prometheus.yml */

/* Parses a size with Prometheus's units (alecthomas/units
 * ParseBase2Bytes): 0 or BASE_E_PARSE with units' message in err. */
int cfg__parse_size(const char *s, int64_t *ret, char *err, size_t errlen);

#endif
