/* check.c -- `kelvin check config FILE...`, promtool 2.42's `check config`,
 * `kelvin check rules FILE...`, its `check rules`, and `kelvin check
 * web-config FILE...`, its `check web-config` (below).
 *
 * check config: for each file, as promtool's checkConfig does: print
 * "Checking FILE", load it with cfg_load_file (every syntax and semantic
 * check), then, unless --syntax-only, look at the files it names: each
 * rule file (or glob) must exist, a scrape job's credentials file must
 * exist, a client certificate needs its key and both must exist, a
 * file_sd file that does not exist is a WARNING, and every static target
 * group must yield targets (`instance 0 in group 0: no address` after
 * relabeling). Output lines and exit status are promtool's: " SUCCESS:
 * FILE is valid prometheus config file syntax" on stdout, "  FAILED: why"
 * on stderr, a blank line after each file; then every rule file found is
 * checked as `check rules` checks it (its errors indented by five
 * spaces, as promtool prints them there).
 *
 * check rules: for each file, "Checking FILE", then rules_file_load (2.42's
 * rulefmt.ParseFile: YAML, fields, every rule validated, expressions
 * parsed) and "  SUCCESS: N rules found" on stdout, or "  FAILED:" and
 * each error on its own line on stderr; a blank line after each file.
 * --lint=duplicate-rules (the default; "all" too, "none" turns it off)
 * reports rules with the same name and labels as promtool's "lint error
 * N duplicate rule(s) found." under "  FAILED:", which alone does not
 * fail the run unless --lint-fatal (exit 3).
 *
 * Exit status: 0 when all are valid (lint findings included), 1 when one
 * is not, 3 for lint findings with --lint-fatal, 2 for bad usage
 * (promtool's kingpin says 1 there, e.g. for a rule file argument that
 * does not exist).
 *
 * Known differences from promtool, on purpose or for now:
 *  - templates in alerting rules' labels and annotations are not parsed
 *    (rulefmt's testTemplateParsing): a broken template passes.
 *  - errors about a rule's labels come in file order; promtool walks a Go
 *    map, so its order varies from run to run.
 *  - file_sd files that exist are not parsed (promtool reads their target
 *    groups); the discovery module reads them at run time.
 *  - config error messages carry FILE:LINE instead of yaml.v2's "line N:".
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/str.h"
#include "config/config.h"
#include "http/webcfg.h"
#include "labels/labels.h"
#include "relabel/relabel.h"
#include "rules/rules.h"
#include "tools/tools.h"

/* Go's os.Stat error text: "stat PATH: no such file or directory". */
static int stat_err(const char *path, char *out, size_t outlen) {
    struct stat st;
    if (stat(path, &st) == 0) return 0;
    char e[128];
    snprintf(e, sizeof e, "%s", strerror(errno));
    if (e[0] >= 'A' && e[0] <= 'Z') e[0] = (char)(e[0] + 32);
    snprintf(out, outlen, "stat %s: %s", path, e);
    return -1;
}

/* model.Duration.String() of ms. */
static void fmt_dur(char *out, size_t n, int64_t ms) {
    static const struct {
        const char *u;
        int64_t ms;
    } U[] = {{"y", 31536000000LL}, {"w", 604800000LL}, {"d", 86400000LL}, {"h", 3600000},
             {"m", 60000},         {"s", 1000},        {"ms", 1}};
    if (ms == 0) {
        snprintf(out, n, "0s");
        return;
    }
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof U / sizeof U[0] && k < n; i++) {
        if (ms >= U[i].ms) {
            k += (size_t)snprintf(out + k, n - k, "%lld%s", (long long)(ms / U[i].ms), U[i].u);
            ms %= U[i].ms;
        }
    }
}

/* b initialised with static group grp's labels and target t's address. */
static void target_labels(labels_builder *b, const cfg_static *grp, size_t t) {
    labels_builder_init(b);
    for (size_t i = 0; i < grp->labels.n; i++)
        labels_builder_set(b, base_str_c(grp->labels.v[i].name), base_str_c(grp->labels.v[i].value));
    labels_builder_set(b, base_str_c("__address__"), base_str_c(grp->targets[t]));
}

/* scrape.PopulateLabels, far enough to find targets without an address. */
static int check_groups(const cfg_scrape *s, const cfg_sd *sd, char *why, size_t whylen) {
    char si[64], st[64];
    fmt_dur(si, sizeof si, s->scrape_interval_ms);
    fmt_dur(st, sizeof st, s->scrape_timeout_ms);
    for (size_t g = 0; g < sd->nstatics; g++) {
        const cfg_static *grp = &sd->statics[g];
        for (size_t t = 0; t < grp->ntargets; t++) {
            labels_builder b;
            target_labels(&b, grp, t);
            static const char *const names[] = {"job", "__metrics_path__", "__scheme__",
                                                "__scrape_interval__", "__scrape_timeout__"};
            const char *vals[] = {s->job_name, s->metrics_path, s->scheme, si, st};
            for (size_t i = 0; i < 5; i++)
                if (labels_builder_get(&b, base_str_c(names[i])).n == 0)
                    labels_builder_set(&b, base_str_c(names[i]), base_str_c(vals[i]));
            char pname[512];
            for (size_t i = 0; i < s->nparams; i++) {
                snprintf(pname, sizeof pname, "__param_%s", s->params[i].name);
                if (s->params[i].nvalues && labels_builder_get(&b, base_str_c(pname)).n == 0)
                    labels_builder_set(&b, base_str_c(pname), base_str_c(s->params[i].values[0]));
            }
            int keep = relabel_process(s->relabel, s->nrelabel, &b);
            int bad = 0;
            if (keep < 0) {
                snprintf(why, whylen, "instance %zu in group %zu: %s", t, g, base_strerror(keep));
                bad = 1;
            } else if (keep == 1) {
                base_str addr = labels_builder_get(&b, base_str_c("__address__"));
                if (addr.n == 0) {
                    snprintf(why, whylen, "instance %zu in group %zu: no address", t, g);
                    bad = 1;
                } else if (memchr(addr.p, '/', addr.n)) {
                    snprintf(why, whylen, "instance %zu in group %zu: \"%.*s\" is not a valid hostname", t, g,
                             (int)addr.n, addr.p);
                    bad = 1;
                }
            }
            labels_builder_free(&b);
            if (bad) return -1;
        }
    }
    return 0;
}

/* notifier.AlertmanagerFromGroup: relabeled addresses must be hostnames. */
static int check_am_groups(const cfg_alertmanager *a, char *why, size_t whylen) {
    char path[4096];
    const char *pp = a->path_prefix ? a->path_prefix : "";
    while (*pp == '/') pp++;
    size_t pl = strlen(pp);
    while (pl && pp[pl - 1] == '/') pl--;
    snprintf(path, sizeof path, "%s%.*s/api/%s/alerts", pl ? "/" : "", (int)pl, pp, a->api_version);
    for (size_t g = 0; g < a->sd.nstatics; g++) {
        const cfg_static *grp = &a->sd.statics[g];
        for (size_t t = 0; t < grp->ntargets; t++) {
            labels_builder b;
            target_labels(&b, grp, t);
            if (labels_builder_get(&b, base_str_c("__scheme__")).n == 0)
                labels_builder_set(&b, base_str_c("__scheme__"), base_str_c(a->scheme));
            if (labels_builder_get(&b, base_str_c("__alerts_path__")).n == 0)
                labels_builder_set(&b, base_str_c("__alerts_path__"), base_str_c(path));
            int keep = relabel_process(a->relabel, a->nrelabel, &b), bad = 0;
            if (keep < 0) {
                snprintf(why, whylen, "%s", base_strerror(keep));
                bad = 1;
            } else if (keep == 1) {
                base_str addr = labels_builder_get(&b, base_str_c("__address__"));
                if (memchr(addr.p, '/', addr.n)) {
                    snprintf(why, whylen, "\"%.*s\" is not a valid hostname", (int)addr.n, addr.p);
                    bad = 1;
                }
            }
            labels_builder_free(&b);
            if (bad) return -1;
        }
    }
    return 0;
}

static int check_tls(const cfg_tls *t, int syntax_only, char *why, size_t whylen) {
    int cert = t->cert_file && *t->cert_file, key = t->key_file && *t->key_file;
    char e[4200];
    if (cert && !key) {
        snprintf(why, whylen, "client cert file \"%s\" specified without client key file", t->cert_file);
        return -1;
    }
    if (key && !cert) {
        snprintf(why, whylen, "client key file \"%s\" specified without client cert file", t->key_file);
        return -1;
    }
    if (syntax_only) return 0;
    if (cert && stat_err(t->cert_file, e, sizeof e)) {
        snprintf(why, whylen, "error checking client cert file \"%.1024s\": %.2048s", t->cert_file, e);
        return -1;
    }
    if (key && stat_err(t->key_file, e, sizeof e)) {
        snprintf(why, whylen, "error checking client key file \"%.1024s\": %.2048s", t->key_file, e);
        return -1;
    }
    return 0;
}

/* promtool's checkConfig: 0 and the number of rule files, or -1 with why. */
static int check_one(const char *file, int syntax_only, char *why, size_t whylen, size_t *ret_rules,
                     char ***ret_rule_paths) {
    cfg_config *c;
    if (cfg_load_file(file, &c, why, whylen) != 0) return -1;
    int rc = 0;
    size_t nrules = 0;
    char **paths = NULL;
    char e[4200];
    for (size_t i = 0; rc == 0 && !syntax_only && i < c->nrule_files; i++) {
        const char *rf = c->rule_files[i];
        glob_t g;
        int gr = glob(rf, 0, NULL, &g);
        size_t n = gr == 0 ? g.gl_pathc : 0;
        if (!strchr(rf, '*')) {
            if (n == 0) {
                snprintf(why, whylen, "\"%s\" does not point to an existing file", rf);
                rc = -1;
            } else if (stat_err(g.gl_pathv[0], e, sizeof e)) {
                snprintf(why, whylen, "error checking rule file \"%.1024s\": %.2048s", g.gl_pathv[0], e);
                rc = -1;
            }
        }
        for (size_t j = 0; rc == 0 && j < n; j++) {
            char **np = realloc(paths, (nrules + 1) * sizeof *np);
            if (!np || !(np[nrules] = strdup(g.gl_pathv[j]))) {
                if (np) paths = np;
                snprintf(why, whylen, "out of memory");
                rc = -1;
                break;
            }
            paths = np;
            nrules++;
        }
        if (gr == 0) globfree(&g);
    }
    for (size_t i = 0; rc == 0 && i < c->nscrapes; i++) {
        const cfg_scrape *s = &c->scrapes[i];
        if (!syntax_only && s->http.has_authorization && s->http.auth_credentials_file &&
            *s->http.auth_credentials_file && stat_err(s->http.auth_credentials_file, e, sizeof e)) {
            snprintf(why, whylen,
                     "error checking authorization credentials or bearer token file \"%.1024s\": %.2048s",
                     s->http.auth_credentials_file, e);
            rc = -1;
            break;
        }
        if ((rc = check_tls(&s->http.tls, syntax_only, why, whylen))) break;
        for (size_t j = 0; !syntax_only && j < s->sd.nfiles; j++)
            for (size_t k = 0; k < s->sd.files[j].nfiles; k++) {
                /* Existing files are parsed by the discovery module at run
                 * time; promtool parses them here (a known difference). */
                glob_t g;
                int gr = glob(s->sd.files[j].files[k], 0, NULL, &g);
                if (gr == 0)
                    globfree(&g);
                else
                    printf("  WARNING: file \"%s\" for file_sd in scrape job \"%s\" does not exist\n",
                           s->sd.files[j].files[k], s->job_name);
            }
        rc = check_groups(s, &s->sd, why, whylen);
    }
    for (size_t i = 0; rc == 0 && i < c->alerting.nams; i++) {
        const cfg_alertmanager *a = &c->alerting.ams[i];
        for (size_t j = 0; !syntax_only && j < a->sd.nfiles; j++)
            for (size_t k = 0; k < a->sd.files[j].nfiles; k++) {
                glob_t g;
                if (glob(a->sd.files[j].files[k], 0, NULL, &g) == 0)
                    globfree(&g);
                else
                    printf("  WARNING: file \"%s\" for file_sd in alertmanager config does not exist\n",
                           a->sd.files[j].files[k]);
            }
        rc = check_am_groups(a, why, whylen);
    }
    cfg_free(c);
    if (rc) {
        for (size_t i = 0; i < nrules; i++) free(paths[i]);
        free(paths);
        return -1;
    }
    *ret_rules = nrules;
    *ret_rule_paths = paths;
    return 0;
}

/* ---- rule files ---------------------------------------------------------- */

/* promtool's lintConfig. */
typedef struct lint {
    int duplicates;
    int fatal;
} lint;

/* newLintConfig: comma-separated options; an unknown one is a warning. */
static void lint_parse(const char *val, int fatal, lint *ret) {
    ret->duplicates = 0;
    ret->fatal = fatal;
    const char *p = val;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if ((n == 3 && memcmp(p, "all", 3) == 0) || (n == 15 && memcmp(p, "duplicate-rules", 15) == 0))
            ret->duplicates = 1;
        else if (!(n == 4 && memcmp(p, "none", 4) == 0))
            printf("WARNING: unknown lint option %.*s\n", (int)n, p);
        if (!e) break;
        p = e + 1;
    }
}

/* A rule as checkDuplicates compares it: its name and sorted labels. */
typedef struct dup_rule {
    const char *metric;
    const rules_kv **labels;
    size_t n;
} dup_rule;

static int kv_by_name(const void *a, const void *b) {
    return strcmp((*(const rules_kv *const *)a)->name, (*(const rules_kv *const *)b)->name);
}

/* strings.Compare on the name, then labels.Compare. */
static int dup_cmp(const dup_rule *a, const dup_rule *b) {
    int c = strcmp(a->metric, b->metric);
    if (c) return c;
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) {
        if ((c = strcmp(a->labels[i]->name, b->labels[i]->name))) return c;
        if ((c = strcmp(a->labels[i]->value, b->labels[i]->value))) return c;
    }
    return a->n < b->n ? -1 : a->n > b->n;
}

static int dup_qsort(const void *a, const void *b) {
    return dup_cmp(a, b);
}

/* promtool's checkDuplicates: appends "lint error N duplicate rule(s)
 * found. ..." to out when rules share a name and labels; returns N (or -1
 * when out of memory). */
static long lint_duplicates(const rules_file *f, base_buf *out) {
    size_t n = rules_file_count(f), k = 0;
    if (n < 2) return 0;
    dup_rule *rs = calloc(n, sizeof *rs);
    if (!rs) return -1;
    long ndup = 0;
    for (size_t g = 0; g < f->ngroups; g++)
        for (size_t r = 0; r < f->groups[g].nrules; r++) {
            const rules_rule *rr = &f->groups[g].rules[r];
            dup_rule *d = &rs[k++];
            d->metric = rr->name;
            d->n = rr->nlabels;
            d->labels = calloc(rr->nlabels ? rr->nlabels : 1, sizeof *d->labels);
            if (!d->labels) {
                ndup = -1;
                goto done;
            }
            for (size_t i = 0; i < rr->nlabels; i++) d->labels[i] = &rr->labels[i];
            qsort(d->labels, d->n, sizeof *d->labels, kv_by_name);
        }
    qsort(rs, n, sizeof *rs, dup_qsort);
    const dup_rule *last = &rs[0], *prev_dup = NULL;
    base_buf list = BASE_BUF_INIT;
    for (size_t i = 1; i < n; i++) {
        if (dup_cmp(last, &rs[i]) == 0 && (!prev_dup || dup_cmp(last, prev_dup) != 0)) {
            prev_dup = &rs[i];
            ndup++;
            base_buf_printf(&list, "Metric: %s\nLabel(s):\n", rs[i].metric);
            for (size_t j = 0; j < rs[i].n; j++)
                base_buf_printf(&list, "\t%s: %s\n", rs[i].labels[j]->name, rs[i].labels[j]->value);
        }
        last = &rs[i];
    }
    if (ndup > 0) {
        base_buf_printf(out, "lint error %ld duplicate rule(s) found.\n", ndup);
        base_buf_append(out, list.data, list.len);
        base_buf_puts(out, "Might cause inconsistency while recording expressions");
    }
    if (base_buf_err(&list) || base_buf_err(out)) ndup = -1;
    base_buf_free(&list);
done:
    for (size_t i = 0; i < k; i++) free(rs[i].labels);
    free(rs);
    return ndup;
}

/* promtool's checkRules and the lines its callers print: 0 valid, 1 lint
 * findings only, 2 errors. Each error line starts with prefix ("" for
 * check rules, five spaces under check config). */
static int check_rule_file(const char *path, const lint *l, const char *prefix) {
    printf("Checking %s\n", path);
    rules_file *f = NULL;
    rules_errors errs;
    int rc = rules_file_load(path, &f, &errs), ret = 0;
    if (rc != 0) {
        fflush(stdout);
        fprintf(stderr, "  FAILED:\n");
        for (size_t i = 0; i < errs.n; i++) fprintf(stderr, "%s%s\n", prefix, errs.e[i].msg);
        if (errs.n == 0) fprintf(stderr, "%s%s: %s\n", prefix, path, base_strerror(rc));
        ret = 2;
    } else {
        base_buf msg = BASE_BUF_INIT;
        long nd = l->duplicates ? lint_duplicates(f, &msg) : 0;
        if (nd < 0) {
            fflush(stdout);
            fprintf(stderr, "  FAILED:\n%s%s: out of memory\n", prefix, path);
            ret = 2;
        } else if (nd > 0) {
            fflush(stdout);
            fprintf(stderr, "  FAILED:\n%s%.*s\n", prefix, (int)msg.len, msg.data);
            ret = 1;
        } else {
            printf("  SUCCESS: %zu rules found\n", rules_file_count(f));
        }
        base_buf_free(&msg);
    }
    printf("\n");
    fflush(stdout);
    rules_errors_free(&errs);
    rules_file_free(f);
    return ret;
}

/* CheckRules / CheckConfig's ending: 1 with errors, 3 with lint findings
 * and --lint-fatal, else 0. */
static int exit_status(int errors, int lint_found, const lint *l) {
    if (errors) return 1;
    if (lint_found && l->fatal) return 3;
    return 0;
}

/* kingpin's ExistingFiles check of one argument: 0, or 2 after the error. */
static int existing_file(const char *cmd, const char *a) {
    struct stat st;
    if (stat(a, &st) != 0) {
        fprintf(stderr, "kelvin check %s: error: path '%s' does not exist, try --help\n", cmd, a);
        return 2;
    }
    if (S_ISDIR(st.st_mode)) {
        /* kingpin names the directory by its base name */
        size_t n = strlen(a);
        while (n > 1 && a[n - 1] == '/') n--;
        size_t b = n;
        while (b > 0 && a[b - 1] != '/') b--;
        fprintf(stderr, "kelvin check %s: error: '%.*s' is a directory, try --help\n", cmd, (int)(n - b),
                a + b);
        return 2;
    }
    return 0;
}

static void usage(FILE *out) {
    fprintf(
        out,
        "usage: kelvin check config [<flags>] <config-files>...\n\n"
        "Check if the config files are valid or not.\n\n"
        "Flags:\n"
        "      --syntax-only  Only check the config file syntax, ignoring file and content validation\n"
        "                     referenced in the config\n"
        "      --lint=\"duplicate-rules\"\n"
        "                     Linting checks to apply to the rules specified in the config. Available\n"
        "                     options are: all, duplicate-rules, none. Use --lint=none to disable linting\n"
        "      --lint-fatal   Make lint errors exit with exit code 3.\n");
}

static void usage_rules(FILE *out) {
    fprintf(out,
            "usage: kelvin check rules [<flags>] <rule-files>...\n\n"
            "Check if the rule files are valid or not.\n\n"
            "Flags:\n"
            "      --lint=\"duplicate-rules\"\n"
            "                     Linting checks to apply. Available options are: all, duplicate-rules,\n"
            "                     none. Use --lint=none to disable linting\n"
            "      --lint-fatal   Make lint errors exit with exit code 3.\n\n"
            "Args:\n"
            "  <rule-files>  The rule files to check.\n");
}

/* Whether argv[*i] is a --lint flag (taking its value, from the next
 * argument for `--lint X`); -1 when the value is missing. */
static int lint_flag(int argc, char **argv, int *i, const char **val, int *fatal) {
    const char *a = argv[*i];
    if (strcmp(a, "--lint-fatal") == 0) {
        *fatal = 1;
        return 1;
    }
    if (strncmp(a, "--lint=", 7) == 0) {
        *val = a + 7;
        return 1;
    }
    if (strcmp(a, "--lint") == 0) {
        if (*i + 1 >= argc) return -1;
        *val = argv[++*i];
        return 1;
    }
    return 0;
}

/* `kelvin check rules FILE...`: promtool's CheckRules. */
static int check_rules(int argc, char **argv) {
    const char *lintval = "duplicate-rules";
    int fatal = 0, nfiles = 0, dashdash = 0;
    const char **files = calloc((size_t)argc, sizeof *files); /* the file arguments, in order */
    if (!files) return 2;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int lf;
        if (dashdash || a[0] != '-' || !a[1]) {
            int rc = existing_file("rules", a);
            if (rc) {
                free(files);
                return rc;
            }
            files[nfiles++] = a;
        } else if (strcmp(a, "--") == 0) {
            dashdash = 1;
        } else if ((lf = lint_flag(argc, argv, &i, &lintval, &fatal)) != 0) {
            if (lf < 0) {
                fprintf(stderr,
                        "kelvin check rules: error: expected argument for flag '--lint', try --help\n");
                free(files);
                return 2;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage_rules(stdout);
            free(files);
            return 0;
        } else {
            fprintf(stderr, "kelvin check rules: error: unknown long flag '%s', try --help\n", a);
            free(files);
            return 2;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr,
                "kelvin check rules: error: required argument 'rule-files' not provided, try --help\n");
        free(files);
        return 2;
    }
    lint l;
    lint_parse(lintval, fatal, &l);
    int errors = 0, lint_found = 0;
    for (int i = 0; i < nfiles; i++) {
        int r = check_rule_file(files[i], &l, "");
        errors |= r == 2;
        lint_found |= r == 1;
    }
    free(files);
    return exit_status(errors, lint_found, &l);
}

static void usage_web(FILE *out) {
    fprintf(out, "usage: kelvin check web-config <web-config-files>...\n\n"
                 "Check if the web config files are valid or not.\n\n"
                 "Args:\n"
                 "  <web-config-files>  The config files to check.\n");
}

/* `kelvin check web-config FILE...`: promtool's checkWebConfig. Every
 * argument must name an existing file (kingpin's ExistingFiles, checked
 * before anything runs); then each file is validated as exporter-toolkit's
 * web.Validate does and "FILE SUCCESS" or "FILE FAILED: why" goes to
 * stderr. Exit 0 when all are valid, 1 when one is not, 2 for bad usage
 * (a missing, unknown or directory argument: promtool's kingpin says 1). */
static int check_web_config(int argc, char **argv) {
    int nfiles = 0, dashdash = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && strcmp(a, "--") == 0) {
            dashdash = 1;
        } else if (!dashdash && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            usage_web(stdout);
            return 0;
        } else if (!dashdash && a[0] == '-' && a[1]) {
            fprintf(stderr, "kelvin check web-config: error: unknown long flag '%s', try --help\n", a);
            return 2;
        } else {
            int rc = existing_file("web-config", a);
            if (rc) return rc;
            nfiles++;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "kelvin check web-config: error: required argument 'web-config-files' not provided, "
                        "try --help\n");
        return 2;
    }
    int failed = 0;
    dashdash = 0;
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i];
        if (!dashdash && strcmp(f, "--") == 0) {
            dashdash = 1;
            continue;
        }
        char why[4096];
        http_webcfg *c = NULL;
        if (http_webcfg_load(f, &c, why, sizeof why) != 0) {
            fprintf(stderr, "%s FAILED: %s\n", f, why);
            failed = 1;
        } else {
            fprintf(stderr, "%s SUCCESS\n", f);
        }
        http_webcfg_free(c);
    }
    return failed ? 1 : 0;
}

int tools_check_main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "web-config") == 0) return check_web_config(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "rules") == 0) return check_rules(argc, argv);
    if (argc < 2 || strcmp(argv[1], "config") != 0) {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            usage(stdout);
            usage_rules(stdout);
            usage_web(stdout);
            return 0;
        }
        fprintf(stderr, "kelvin check: unknown or missing subcommand (`config`, `rules` or `web-config`), "
                        "try --help\n");
        return 2;
    }
    const char *lintval = "duplicate-rules";
    int syntax_only = 0, nfiles = 0, dashdash = 0, fatal = 0;
    const char **files = calloc((size_t)argc, sizeof *files); /* the file arguments, in order */
    if (!files) return 2;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int lf;
        if (dashdash || a[0] != '-' || !a[1]) {
            files[nfiles++] = a;
        } else if (strcmp(a, "--") == 0) {
            dashdash = 1;
        } else if (strcmp(a, "--syntax-only") == 0) {
            syntax_only = 1;
        } else if ((lf = lint_flag(argc, argv, &i, &lintval, &fatal)) != 0) {
            if (lf < 0) {
                fprintf(stderr, "kelvin check config: expected argument for flag '--lint', try --help\n");
                free(files);
                return 2;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            free(files);
            return 0;
        } else {
            fprintf(stderr, "kelvin check config: unknown flag %s, try --help\n", a);
            free(files);
            return 2;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "kelvin check config: required argument 'config-files' not provided, try --help\n");
        free(files);
        return 2;
    }
    lint l;
    lint_parse(lintval, fatal, &l);
    int errors = 0, lint_found = 0;
    for (int fi = 0; fi < nfiles; fi++) {
        const char *f = files[fi];
        printf("Checking %s\n", f);
        fflush(stdout);
        char why[4096] = "";
        size_t nrules = 0;
        char **rules = NULL;
        if (check_one(f, syntax_only, why, sizeof why, &nrules, &rules) != 0) {
            fflush(stdout);
            fprintf(stderr, "  FAILED: %s\n", why);
            errors = 1;
        } else {
            if (nrules > 0) printf("  SUCCESS: %zu rule files found\n", nrules);
            printf(" SUCCESS: %s is valid prometheus config file syntax\n", f);
        }
        printf("\n");
        for (size_t r = 0; r < nrules; r++) {
            int rc = check_rule_file(rules[r], &l, "     ");
            errors |= rc == 2;
            lint_found |= rc == 1;
            free(rules[r]);
        }
        free(rules);
        fflush(stdout);
    }
    free(files);
    return exit_status(errors, lint_found, &l);
}
