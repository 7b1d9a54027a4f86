/* fuzz/rules_file.c -- fuzz target for the rule file loader.
 *
 * For every input: rules_file_load_buf must return 0 or a negative
 * BASE_E_* with at least one message, every message starting with the
 * file name; never crash, leak or run away (alias bombs, deep nesting,
 * merge chains and huge key sets hit the loader's limits). When the input
 * loads, the file's invariants are checked (each rule is a recording or an
 * alerting rule with a name, an expression and its parsed tree; a
 * recording rule's name is a metric name and it has no `for` or
 * annotations; label and annotation names are valid) and loading the
 * same bytes again must give the same groups and rules -- the loader is
 * deterministic. A failed input must fail again with the same messages.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "labels/labels.h"
#include "rules/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

static void check_file(const rules_file *f) {
    CHECK(strcmp(f->path, "f.yml") == 0);
    size_t n = 0;
    for (size_t g = 0; g < f->ngroups; g++) {
        const rules_group *grp = &f->groups[g];
        CHECK(grp->name && grp->name[0]);
        for (size_t j = 0; j < g; j++) CHECK(strcmp(f->groups[j].name, grp->name) != 0);
        CHECK(grp->interval_ms >= 0);
        for (size_t i = 0; i < grp->nrules; i++, n++) {
            const rules_rule *r = &grp->rules[i];
            CHECK(r->kind == RULES_RECORD || r->kind == RULES_ALERT);
            CHECK(r->name && r->name[0] && r->expr && r->expr[0] && r->parsed);
            CHECK(r->line >= 1);
            if (r->kind == RULES_RECORD) {
                CHECK(labels_valid_metric_name(base_str_c(r->name)));
                CHECK(r->for_ms == 0 && r->keep_firing_for_ms == 0 && r->nannotations == 0);
            }
            for (size_t k = 0; k < r->nlabels; k++) {
                CHECK(labels_valid_label_name(base_str_c(r->labels[k].name)));
                CHECK(strcmp(r->labels[k].name, "__name__") != 0);
            }
            for (size_t k = 0; k < r->nannotations; k++)
                CHECK(labels_valid_label_name(base_str_c(r->annotations[k].name)));
        }
    }
    CHECK(rules_file_count(f) == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rules_file *f = NULL;
    rules_errors e;
    int rc = rules_file_load_buf((const char *)data, size, "f.yml", &f, &e);
    rules_file *again = NULL;
    rules_errors e2;
    int rc2 = rules_file_load_buf((const char *)data, size, "f.yml", &again, &e2);
    CHECK(rc == rc2);
    if (rc != 0) {
        CHECK(rc < 0 && !f && !again);
        CHECK(e.n >= 1 && e.n == e2.n);
        for (size_t i = 0; i < e.n; i++) {
            CHECK(strncmp(e.e[i].msg, "f.yml: ", 7) == 0 || strncmp(e.e[i].msg, "f.yml:", 6) == 0);
            CHECK(strcmp(e.e[i].msg, e2.e[i].msg) == 0 && e.e[i].line == e2.e[i].line);
        }
    } else {
        CHECK(e.n == 0 && f && again);
        check_file(f);
        CHECK(again->ngroups == f->ngroups);
        for (size_t g = 0; g < f->ngroups; g++) {
            CHECK(strcmp(again->groups[g].name, f->groups[g].name) == 0);
            CHECK(again->groups[g].nrules == f->groups[g].nrules);
            for (size_t i = 0; i < f->groups[g].nrules; i++) {
                CHECK(strcmp(again->groups[g].rules[i].name, f->groups[g].rules[i].name) == 0);
                CHECK(strcmp(again->groups[g].rules[i].expr, f->groups[g].rules[i].expr) == 0);
                CHECK(again->groups[g].rules[i].nlabels == f->groups[g].rules[i].nlabels);
            }
        }
    }
    rules_errors_free(&e);
    rules_errors_free(&e2);
    rules_file_free(f);
    rules_file_free(again);
    return 0;
}
