/* fuzz/config_load.c -- fuzz target for the prometheus.yml loader.
 *
 * For every input: cfg_load_buf must return 0 or a negative BASE_E_* with
 * a non-empty message that starts with the file name; never crash, leak
 * or run away (alias bombs and deep nesting hit the loader's limits).
 * When the input loads, the config's invariants are checked (every job
 * has a name, 0 < timeout <= interval, metrics_path and scheme set, job
 * names unique, paths absolute) and loading the config's own copy of the
 * text again must give equal scrape configs (cfg_scrape_equal) -- the
 * loader is deterministic and the equality functions are reflexive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    cfg_config *c = NULL;
    int rc = cfg_load_buf((const char *)data, size, "f.yml", "/cfg", &c, err, sizeof err);
    if (rc != 0) {
        CHECK(rc < 0);
        CHECK(strncmp(err, "f.yml", 5) == 0);
        return 0;
    }
    CHECK(c->text_len == size && memcmp(c->text, data, size) == 0);
    CHECK(c->global.scrape_timeout_ms <= c->global.scrape_interval_ms && c->global.scrape_interval_ms > 0);
    /* paths are absolute, or empty (config.JoinDir leaves "" alone) */
    for (size_t i = 0; i < c->nrule_files; i++) CHECK(c->rule_files[i][0] == 0 || c->rule_files[i][0] == '/');
    for (size_t i = 0; i < c->nscrapes; i++) {
        const cfg_scrape *s = &c->scrapes[i];
        CHECK(s->job_name && s->job_name[0]);
        CHECK(s->scrape_interval_ms > 0 && s->scrape_timeout_ms <= s->scrape_interval_ms);
        CHECK(s->metrics_path && s->scheme);
        CHECK(cfg_find_scrape(c, s->job_name) == s);
        CHECK(cfg_scrape_equal(s, s));
        CHECK(cfg_sd_equal(&s->sd, &s->sd));
        for (size_t j = 0; j < s->sd.nfiles; j++)
            for (size_t k = 0; k < s->sd.files[j].nfiles; k++) CHECK(s->sd.files[j].files[k][0] == '/');
    }
    cfg_config *again = NULL;
    CHECK(cfg_load_buf(c->text, c->text_len, "f.yml", "/cfg", &again, err, sizeof err) == 0);
    CHECK(again->nscrapes == c->nscrapes);
    for (size_t i = 0; i < c->nscrapes; i++) CHECK(cfg_scrape_equal(&c->scrapes[i], &again->scrapes[i]));
    cfg_free(again);
    cfg_free(c);
    return 0;
}
