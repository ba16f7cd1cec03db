/* curl_dl.h: libcurl, opened only when observability.otlp_endpoint is set.
 *
 * libcurl brings its TLS, SSH, LDAP, Kerberos, IDN and HTTP/2-3 libraries with
 * it, resident in every gateway that would link it, and only the trace exporter
 * needs it (docs/adr/0012-optional-libraries.md). So the gateway does not link
 * it: gw_curl_load opens libcurl.so.4 with dlopen when tracing starts, and
 * trace.c calls libcurl through the table it filled (gw_curl.easy_init, ...),
 * never by the curl_* names. The types and constants still come from
 * <curl/curl.h> (libcurl4-openssl-dev), so a mismatch of signatures is a
 * compile error.
 *
 * Only trace.c includes it, and only after gw_curl_load has returned 0 may it
 * call through the table. */
#ifndef IR_GATEWAY_CURL_DL_H
#define IR_GATEWAY_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

typedef struct gw_curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *h);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *h);
    const char *(*easy_strerror)(CURLcode c);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} gw_curl_api;

/* Opens libcurl once and runs curl_global_init (thread-safe; later calls return
 * the first answer). 0, or -1 with the reason in err. */
int gw_curl_load(char *err, size_t errlen);
/* The table; valid only after gw_curl_load returned 0. */
extern gw_curl_api gw_curl;

#endif
