/* flag.h -- command-line flags in the style of Prometheus programs.
 *
 * `--name=value` or `--name value`; booleans as `--name` / `--no-name`;
 * durations in Prometheus syntax ("15s", "1m"). A flag table is an array of
 * base_flag; each entry points at the variable it sets (which holds the
 * default beforehand). Unknown flags and bad values are errors naming the
 * flag. --help is recognised and reported as 1 so the caller prints usage.
 */
#ifndef KELVIN_BASE_FLAG_H
#define KELVIN_BASE_FLAG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    BASE_FLAG_STRING,   /* const char ** */
    BASE_FLAG_BOOL,     /* int * */
    BASE_FLAG_DURATION, /* int64_t * (milliseconds) */
    BASE_FLAG_INT,      /* int64_t * */
    BASE_FLAG_SIZE,     /* int64_t * (bytes; B, KB/KiB, MB/MiB, GB/GiB, TB/TiB, PB/PiB,
                         all powers of 1024 as in Prometheus's flags) */
} base_flag_kind;

typedef struct base_flag {
    const char *name; /* without the dashes */
    base_flag_kind kind;
    void *target;
    const char *help;
} base_flag;

/* Returns 0 on success, 1 if --help was given, or BASE_E_INVAL with a
 * message in err. argv[0] is the command name and is skipped. Values
 * point into argv (not copied). */
int base_flags_parse(const base_flag *flags, size_t n, int argc, char **argv, char *err, size_t errlen);
/* Writes usage with each flag, its help, and its current (default) value. */
void base_flags_usage(FILE *out, const char *usage_line, const char *summary, const base_flag *flags,
                      size_t n);

#endif
