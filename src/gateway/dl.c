/* dl.c: opens an optional shared library and fills a table of its functions
 * (ADR 0012; zmq_dl.c and curl_dl.c are its users). */
#include "gateway/gateway.h"

#include <dlfcn.h>
#include <stdio.h>

int gw_dl_open(const char *soname, const char *package, const gw_dl_sym *syms, size_t n, char *err,
               size_t errlen) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot open %s (Debian package %s): %s", soname, package, dlerror());
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(err, errlen, "%s lacks %s", soname, syms[i].name);
            return -1; /* h stays open: harmless, and the answer is final */
        }
    }
    return 0;
}
