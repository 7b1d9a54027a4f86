/* dns.c -- one dns_sd lookup, as Prometheus 2.42's discovery/dns does it.
 *
 * res_nsearch (libresolv, a private resolver state per lookup, so
 * resolv.conf is re-read each time as Prometheus re-reads it) applies the
 * search list and falls back to TCP on truncation. The answer section is
 * walked with ns_parserr; each record becomes one target:
 *   SRV   __address__ "target:port" (target without its final dot),
 *         __meta_dns_srv_record_target "target." (as the record has it),
 *         __meta_dns_srv_record_port "port";
 *   MX    __address__ "exchange:<configured port>",
 *         __meta_dns_mx_record_target "exchange.";
 *   A     __address__ "1.2.3.4:<port>";  AAAA  "[::1]:<port>";
 *   CNAME skipped (they come along with A answers); others ignored.
 * Every target has __meta_dns_name = the configured name. Prometheus also
 * sets the labels that do not apply to "", which a label set cannot hold:
 * they are absent here, which is what the scraper sees either way.
 *
 * Outcomes (dns.go's lookupWithSearchPath): an answer, NXDOMAIN for every
 * candidate name, or NOERROR without records of the type give a group
 * (possibly without targets: that clears the name's targets); SERVFAIL,
 * REFUSED, timeouts and malformed answers are errors (the caller keeps the
 * previous targets).
 *
 * Bounds: 2 s per try, 2 tries per server (glibc's retrans/retry), answers
 * up to 64 KiB. The KELVIN_DNS_SERVER hook replaces the servers with one
 * IPv4 loopback address (tests run their own server).
 */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "discovery/discovery_int.h"

#define DNS_ANSWER_MAX 65536

static int parse_server(const char *s, struct sockaddr_in *ret, char *err, size_t errlen) {
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || colon - s >= 64)
        return base_errf(err, errlen, BASE_E_INVAL, "KELVIN_DNS_SERVER %s: want ip:port", s);
    char host[64];
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    uint64_t port;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || base_parse_u64(colon + 1, strlen(colon + 1), &port) ||
        port == 0 || port > 65535)
        return base_errf(err, errlen, BASE_E_INVAL, "KELVIN_DNS_SERVER %s: want ipv4:port", s);
    if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127)
        return base_errf(err, errlen, BASE_E_INVAL, "KELVIN_DNS_SERVER %s: only loopback addresses", s);
    sa.sin_port = htons((uint16_t)port);
    *ret = sa;
    return 0;
}

/* Adds one target to g: __address__ = addr, the dns labels. */
static int add_target(disc_group *g, const char *name, const char *addr, const char *srv_target,
                      const char *srv_port, const char *mx_target, char *err, size_t errlen) {
    labels_builder b;
    labels_builder_init(&b);
    int rc = labels_builder_add(&b, base_str_c("__address__"), base_str_c(addr));
    if (!rc) rc = labels_builder_add(&b, base_str_c("__meta_dns_name"), base_str_c(name));
    if (!rc) rc = labels_builder_add(&b, base_str_c("__meta_dns_srv_record_target"), base_str_c(srv_target));
    if (!rc) rc = labels_builder_add(&b, base_str_c("__meta_dns_srv_record_port"), base_str_c(srv_port));
    if (!rc) rc = labels_builder_add(&b, base_str_c("__meta_dns_mx_record_target"), base_str_c(mx_target));
    labels_set *t = NULL;
    if (!rc) rc = labels_builder_finish(&b, 0, &t, err, errlen);
    labels_builder_free(&b);
    if (rc) return rc;
    if (disc__group_add_target(g, t)) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    return 0;
}

/* Reads a (possibly compressed) domain name at p inside msg. */
static int read_name(const unsigned char *msg, const unsigned char *eom, const unsigned char *p, char *out,
                     size_t outlen) {
    int n = dn_expand(msg, eom, p, out, (int)outlen);
    return n < 0 ? -1 : 0;
}

static int walk_answer(const unsigned char *ans, int len, const char *name, unsigned port, disc_group *g,
                       char *err, size_t errlen) {
    ns_msg msg;
    if (ns_initparse(ans, len, &msg) < 0)
        return base_errf(err, errlen, BASE_E_PARSE, "malformed DNS answer for %s", name);
    int count = ns_msg_count(msg, ns_s_an);
    const unsigned char *eom = ans + len;
    for (int i = 0; i < count; i++) {
        ns_rr rr;
        if (ns_parserr(&msg, ns_s_an, i, &rr) < 0)
            return base_errf(err, errlen, BASE_E_PARSE, "malformed DNS answer for %s", name);
        const unsigned char *rd = ns_rr_rdata(rr);
        unsigned rdlen = ns_rr_rdlen(rr);
        char host[NS_MAXDNAME + 2], addr[NS_MAXDNAME + 16], lbl[NS_MAXDNAME + 4], portbuf[8];
        int rc = 0;
        switch (ns_rr_type(rr)) {
        case ns_t_srv: {
            if (rdlen < 7 || read_name(ans, eom, rd + 6, host, sizeof host - 1))
                return base_errf(err, errlen, BASE_E_PARSE, "malformed SRV record for %s", name);
            unsigned p = ((unsigned)rd[4] << 8) | rd[5];
            snprintf(lbl, sizeof lbl, "%s.", host);
            snprintf(portbuf, sizeof portbuf, "%u", p);
            snprintf(addr, sizeof addr, "%s:%u", host, p);
            rc = add_target(g, name, addr, lbl, portbuf, "", err, errlen);
            break;
        }
        case ns_t_mx: {
            if (rdlen < 3 || read_name(ans, eom, rd + 2, host, sizeof host - 1))
                return base_errf(err, errlen, BASE_E_PARSE, "malformed MX record for %s", name);
            snprintf(lbl, sizeof lbl, "%s.", host);
            snprintf(addr, sizeof addr, "%s:%u", host, port);
            rc = add_target(g, name, addr, "", "", lbl, err, errlen);
            break;
        }
        case ns_t_a: {
            if (rdlen != 4) return base_errf(err, errlen, BASE_E_PARSE, "malformed A record for %s", name);
            inet_ntop(AF_INET, rd, host, sizeof host);
            snprintf(addr, sizeof addr, "%s:%u", host, port);
            rc = add_target(g, name, addr, "", "", "", err, errlen);
            break;
        }
        case ns_t_aaaa: {
            if (rdlen != 16)
                return base_errf(err, errlen, BASE_E_PARSE, "malformed AAAA record for %s", name);
            inet_ntop(AF_INET6, rd, host, sizeof host);
            snprintf(addr, sizeof addr, "[%s]:%u", host, port);
            rc = add_target(g, name, addr, "", "", "", err, errlen);
            break;
        }
        default: break; /* CNAME and anything else */
        }
        if (rc) return rc;
    }
    return 0;
}

int disc__dns_lookup(const char *name, cfg_dns_type type, unsigned port, const char *server, disc_group **ret,
                     char *err, size_t errlen) {
    struct sockaddr_in sa;
    if (server && parse_server(server, &sa, err, errlen)) return BASE_E_INVAL;
    int qtype = type == CFG_DNS_A      ? ns_t_a
                : type == CFG_DNS_AAAA ? ns_t_aaaa
                : type == CFG_DNS_MX   ? ns_t_mx
                                       : ns_t_srv;
    struct __res_state st;
    memset(&st, 0, sizeof st);
    if (res_ninit(&st) != 0) {
        res_nclose(&st);
        return base_errf(err, errlen, BASE_E_IO, "could not resolve %s: resolver initialization failed",
                         name);
    }
    st.retrans = 2;
    st.retry = 2;
    if (server) {
        st.nscount = 1;
        st.nsaddr_list[0] = sa;
    }
    unsigned char *ans = malloc(DNS_ANSWER_MAX);
    if (!ans) {
        res_nclose(&st);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    int len = res_nsearch(&st, name, ns_c_in, qtype, ans, DNS_ANSWER_MAX);
    int herr = st.res_h_errno;
    res_nclose(&st);
    disc_group *g = disc__group_new(name);
    if (!g) {
        free(ans);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    int rc = 0;
    if (len < 0) {
        if (herr != HOST_NOT_FOUND && herr != NO_DATA)
            rc = base_errf(err, errlen, BASE_E_IO, "could not resolve %s: %s", name, hstrerror(herr));
    } else {
        if (len > DNS_ANSWER_MAX) len = DNS_ANSWER_MAX;
        rc = walk_answer(ans, len, name, port, g, err, errlen);
    }
    free(ans);
    if (rc) {
        disc__group_free(g);
        return rc;
    }
    *ret = g;
    return 0;
}
