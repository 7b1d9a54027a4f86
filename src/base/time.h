/* time.h -- clocks. Monotonic for intervals and deadlines, real time for
 * sample timestamps (milliseconds since the Unix epoch, as Prometheus). */
#ifndef KELVIN_BASE_TIME_H
#define KELVIN_BASE_TIME_H

#include <stddef.h>
#include <stdint.h>

int64_t base_mono_ns(void);
int64_t base_unix_ms(void);
/* CPU time of the whole process / of the calling thread, in ns. */
int64_t base_process_cpu_ns(void);
int64_t base_thread_cpu_ns(void);
/* Sleeps until the monotonic clock reaches deadline_ns (restarts on EINTR). */
void base_sleep_until(int64_t deadline_ns);
/* Parses a Prometheus duration ("15s", "1m30s", "500ms", "2h", "0") into
 * ms, as model.ParseDuration: units y w d h m s ms, each at most once and
 * in that order; the total must fit int64 nanoseconds. Returns 0,
 * BASE_E_PARSE or BASE_E_RANGE. */
int base_parse_duration_ms(const char *s, int64_t *ret_ms);
/* The longest base_fmt_duration output, NUL included. */
#define BASE_FMT_DURATION_MAX 48
/* Writes ms as model.Duration.String() ("1h30m", "2w", "0s"; y and w only
 * when exact; "" for a negative duration) into out (n bytes, NUL-terminated
 * when n > 0; cut short when too small). Returns the length written. */
size_t base_fmt_duration(char *out, size_t n, int64_t ms);

#endif
