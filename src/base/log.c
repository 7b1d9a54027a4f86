/* log.c -- logfmt / JSON lines on stderr; see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"

static base_log_level g_level = BASE_LOG_INFO;
static int g_json;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int base_log_set_level(const char *name) {
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0) {
            g_level = (base_log_level)i;
            return 0;
        }
    return BASE_E_INVAL;
}

int base_log_set_format(const char *name) {
    if (strcmp(name, "logfmt") == 0)
        g_json = 0;
    else if (strcmp(name, "json") == 0)
        g_json = 1;
    else
        return BASE_E_INVAL;
    return 0;
}

int base_log_enabled(base_log_level lvl) {
    return lvl >= g_level;
}

static void put_value(base_buf *b, const char *v) {
    int quote = g_json || *v == '\0' || strpbrk(v, " \"=\\\n\t") != NULL;
    if (!quote) {
        base_buf_puts(b, v);
        return;
    }
    base_buf_putc(b, '"');
    for (const char *p = v; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            base_buf_putc(b, '\\');
            base_buf_putc(b, (char)c);
        } else if (c == '\n') {
            base_buf_puts(b, "\\n");
        } else if (c < 0x20) {
            base_buf_printf(b, "\\u%04x", c);
        } else {
            base_buf_putc(b, (char)c);
        }
    }
    base_buf_putc(b, '"');
}

static void put_kv(base_buf *b, const char *k, const char *v, int first) {
    if (g_json) {
        if (!first) base_buf_putc(b, ',');
        put_value(b, k);
        base_buf_putc(b, ':');
    } else {
        if (!first) base_buf_putc(b, ' ');
        base_buf_puts(b, k);
        base_buf_putc(b, '=');
    }
    put_value(b, v);
}

static void emit(base_log_level lvl, const char *msg, va_list *kv) {
    char ts[40];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof ts - n, ".%03ldZ", now.tv_nsec / 1000000);

    base_buf b;
    base_buf_init(&b, 1 << 16);
    if (g_json) base_buf_putc(&b, '{');
    put_kv(&b, "ts", ts, 1);
    put_kv(&b, "level", level_names[lvl], 0);
    put_kv(&b, "msg", msg, 0);
    if (kv) {
        for (;;) {
            const char *k = va_arg(*kv, const char *);
            if (!k) break;
            const char *v = va_arg(*kv, const char *);
            put_kv(&b, k, v ? v : "", 0);
        }
    }
    if (g_json) base_buf_putc(&b, '}');
    base_buf_putc(&b, '\n');
    if (!b.err) {
        ssize_t w = write(STDERR_FILENO, b.data, b.len);
        (void)w;
    }
    base_buf_free(&b);
}

void base_log(base_log_level lvl, const char *msg, ...) {
    if (lvl < g_level) return;
    va_list ap;
    va_start(ap, msg);
    emit(lvl, msg, &ap);
    va_end(ap);
}

void base_logf(base_log_level lvl, const char *fmt, ...) {
    if (lvl < g_level) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(lvl, msg, NULL);
}
