/* check.c -- `kelvin check config FILE...`, promtool 2.42's `check config`,
 * and `kelvin check web-config FILE...`, its `check web-config` (below).
 *
 * For each file, as promtool's checkConfig does: print "Checking FILE",
 * load it with cfg_load_file (every syntax and semantic check), then,
 * unless --syntax-only, look at the files it names: each rule file (or
 * glob) must exist, a scrape job's credentials file must exist, a client
 * certificate needs its key and both must exist, a file_sd file that does
 * not exist is a WARNING, and every static target group must yield
 * targets (`instance 0 in group 0: no address` after relabeling). Output
 * lines and exit status are promtool's: " SUCCESS: FILE is valid
 * prometheus config file syntax" on stdout, "  FAILED: why" on stderr, a
 * blank line after each file; exit 0 when all are valid, 1 when one is
 * not, 2 for bad usage (promtool's kingpin says 1 there).
 *
 * Known differences from promtool, on purpose or for now:
 *  - rule files are found and must be readable files, but their rules
 *    are not parsed: rule parsing (rulefmt) belongs to the rules
 *    milestone; each is listed as SKIPPED instead of promtool's
 *    "SUCCESS: N rules found", and a file with broken rules passes.
 *  - file_sd files that exist are not parsed (promtool reads their target
 *    groups); the discovery module reads them at run time.
 *  - error messages carry FILE:LINE instead of yaml.v2's "line N:".
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

/* Until rules are parsed, a rule file must at least be a readable file:
 * promtool's checkRules fails on a directory or an unreadable file. */
static int rule_file_readable(const char *path, char *why, size_t whylen) {
    struct stat st;
    if (stat(path, &st) != 0) {
        stat_err(path, why, whylen);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "%s: read %s: is a directory", path, path);
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        char e[128];
        snprintf(e, sizeof e, "%s", strerror(errno));
        if (e[0] >= 'A' && e[0] <= 'Z') e[0] = (char)(e[0] + 32);
        snprintf(why, whylen, "%s: open %s: %s", path, path, e);
        return -1;
    }
    fclose(f);
    return 0;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: kelvin check config [<flags>] <config-files>...\n\n"
            "Check if the config files are valid or not.\n\n"
            "Flags:\n"
            "      --syntax-only  Only check the config file syntax, ignoring file and content validation\n"
            "                     referenced in the config\n"
            "      --lint=...     Accepted for promtool compatibility (rule files are not checked yet)\n"
            "      --lint-fatal   Accepted for promtool compatibility\n");
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
            struct stat st;
            if (stat(a, &st) != 0) {
                fprintf(stderr, "kelvin check web-config: error: path '%s' does not exist, try --help\n", a);
                return 2;
            }
            if (S_ISDIR(st.st_mode)) {
                /* kingpin names the directory by its base name */
                size_t n = strlen(a);
                while (n > 1 && a[n - 1] == '/') n--;
                size_t b = n;
                while (b > 0 && a[b - 1] != '/') b--;
                fprintf(stderr, "kelvin check web-config: error: '%.*s' is a directory, try --help\n",
                        (int)(n - b), a + b);
                return 2;
            }
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
    if (argc < 2 || strcmp(argv[1], "config") != 0) {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            usage(stdout);
            usage_web(stdout);
            return 0;
        }
        fprintf(stderr,
                "kelvin check: unknown or missing subcommand (`config` or `web-config`), try --help\n");
        return 2;
    }
    int syntax_only = 0, nfiles = 0, dashdash = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || !a[1]) {
            nfiles++;
        } else if (strcmp(a, "--") == 0) {
            dashdash = 1;
        } else if (strcmp(a, "--syntax-only") == 0) {
            syntax_only = 1;
        } else if (strcmp(a, "--lint-fatal") == 0 || strncmp(a, "--lint=", 7) == 0) {
            /* rule linting: nothing to do until rule files are parsed */
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "kelvin check config: unknown flag %s, try --help\n", a);
            return 2;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "kelvin check config: required argument 'config-files' not provided, try --help\n");
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
        if (!dashdash && f[0] == '-' && f[1]) continue;
        printf("Checking %s\n", f);
        fflush(stdout);
        char why[4096] = "";
        size_t nrules = 0;
        char **rules = NULL;
        if (check_one(f, syntax_only, why, sizeof why, &nrules, &rules) != 0) {
            fflush(stdout);
            fprintf(stderr, "  FAILED: %s\n", why);
            failed = 1;
        } else {
            if (nrules > 0) printf("  SUCCESS: %zu rule files found\n", nrules);
            printf(" SUCCESS: %s is valid prometheus config file syntax\n", f);
        }
        printf("\n");
        /* Rule files are found, not parsed: parsing rules (rulefmt) is the
         * rules milestone's work. */
        for (size_t r = 0; r < nrules; r++) {
            printf("Checking %s\n", rules[r]);
            char rerr[4200];
            if (rule_file_readable(rules[r], rerr, sizeof rerr) != 0) {
                fflush(stdout);
                fprintf(stderr, "  FAILED:\n     %s\n", rerr);
                failed = 1;
            } else {
                printf("  SKIPPED: Kelvin does not check the rules in rule files yet\n");
            }
            printf("\n");
            free(rules[r]);
        }
        free(rules);
        fflush(stdout);
    }
    return failed ? 1 : 0;
}
