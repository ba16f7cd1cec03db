/* file.c: opening a file that must be a regular one. */
#include "core/ir_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *ir_fopen_regular(const char *path, char *why, size_t whylen) {
    /* O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise (forever,
     * on the control loop, in a reload). Reads of a regular file never block. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s",
                 S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(why, whylen, "%s", strerror(errno));
        close(fd);
    }
    return f;
}
