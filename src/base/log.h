/* log.h -- leveled logging for the programs (agent, server, tools).
 *
 * Library modules never log (STYLE.md habit 6); they return codes and fill
 * error buffers, and the program that called them logs once. Output goes to
 * stderr in go-kit's logfmt, as Prometheus and its exporters print it
 * (`ts=... level=info msg="..." key=value`), or JSON with --log.format=json.
 * Thread-safe: one line is one write(2).
 */
#ifndef KELVIN_BASE_LOG_H
#define KELVIN_BASE_LOG_H

typedef enum { BASE_LOG_DEBUG, BASE_LOG_INFO, BASE_LOG_WARN, BASE_LOG_ERROR } base_log_level;

/* Parses "debug"/"info"/"warn"/"error" and "logfmt"/"json";
 * returns 0 or BASE_E_INVAL and leaves the settings unchanged. */
int base_log_set_level(const char *name);
int base_log_set_format(const char *name);
int base_log_enabled(base_log_level lvl);
/* Logs msg followed by key/value string pairs, terminated by NULL:
 * base_log(BASE_LOG_INFO, "listening", "address", ":9400", NULL); */
void base_log(base_log_level lvl, const char *msg, ...) __attribute__((sentinel));
/* Logs a printf-formatted message with no extra keys. */
void base_logf(base_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
