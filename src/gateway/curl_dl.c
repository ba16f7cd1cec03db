/* curl_dl.c: opens libcurl on first use (see curl_dl.h). */
#include "gateway/curl_dl.h"

#include "gateway/gateway.h"
#include <pthread.h>
#include <stdio.h>

gw_curl_api gw_curl;

/* The shared object's name in Debian's libcurl4 (the soname, so no -dev needed). */
#define CURL_SONAME "libcurl.so.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_err[256];
static int load_rc;

static void load(void) {
    const gw_dl_sym syms[] = {
        {"curl_global_init", (void **)&gw_curl.global_init},
        {"curl_easy_init", (void **)&gw_curl.easy_init},
        {"curl_easy_setopt", (void **)&gw_curl.easy_setopt},
        {"curl_easy_perform", (void **)&gw_curl.easy_perform},
        {"curl_easy_getinfo", (void **)&gw_curl.easy_getinfo},
        {"curl_easy_cleanup", (void **)&gw_curl.easy_cleanup},
        {"curl_easy_strerror", (void **)&gw_curl.easy_strerror},
        {"curl_slist_append", (void **)&gw_curl.slist_append},
        {"curl_slist_free_all", (void **)&gw_curl.slist_free_all},
    };
    load_rc =
        gw_dl_open(CURL_SONAME, "libcurl4", syms, IR_ARRAY_LEN(syms), load_err, sizeof load_err);
    if (load_rc) return;
    CURLcode rc = gw_curl.global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(load_err, sizeof load_err, "curl_global_init: %s", gw_curl.easy_strerror(rc));
        load_rc = -1;
    }
}

int gw_curl_load(char *err, size_t errlen) {
    pthread_once(&once, load);
    if (load_rc) snprintf(err, errlen, "%s", load_err);
    return load_rc;
}
