/* httpc.h -- prometheus.yml's HTTP client settings (cfg_http: redirects,
 * HTTP/2, proxy_url, tls_config, authorization, basic_auth) applied to a
 * libcurl easy handle, one way for every client that reads them (http_sd
 * here, the notifier's alertmanagers).
 *
 * As Prometheus's common/config HTTP client: no proxy unless proxy_url
 * (the environment's *_proxy variables are not used), TLS files and the
 * minimum version, insecure_skip_verify, an Authorization header
 * "<type, default Bearer> <credentials>" and basic auth. Credential and
 * password files are read at each call (Prometheus reads them per
 * request), their surrounding blanks trimmed, at most 64 KiB.
 */
#ifndef KELVIN_DISCOVERY_HTTPC_H
#define KELVIN_DISCOVERY_HTTPC_H

#include <curl/curl.h>
#include <stddef.h>

#include "config/config.h"

/* Applies h to e and appends the Authorization header, if any, to *hdrs
 * (the caller's list, which it sets as CURLOPT_HTTPHEADER and frees).
 * 0, or BASE_E_IO / BASE_E_LIMIT (a credentials file) / BASE_E_NOMEM with
 * a message in err. */
int disc_httpc_apply(CURL *e, const cfg_http *h, struct curl_slist **hdrs, char *err, size_t errlen);

#endif
