/* slowclient.c: clients that misbehave on purpose, for the gateway's memory
 * benchmarks. Prints one JSON line.
 *
 *   ir-slowclient stall --port P --clients N --tokens T --pid PID [--hold-ms MS]
 *       N streaming requests of T output tokens each; every client reads
 *       64 KiB, then stops reading for MS ms while PID's resident memory is
 *       sampled; then all read to the end. Reports bytes, peak RSS, errors.
 *   ir-slowclient body --port P --bytes B --pid PID
 *       One request whose B-byte body arrives as 1-byte chunks of chunked
 *       transfer encoding; reports the peak RSS of PID while it arrives. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <stdbool.h>
#include <unistd.h>

static long rss_kib(int pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) sscanf(line + 6, "%ld", &v);
    fclose(f);
    return v;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* A small receive buffer, so a client that stops reading pushes back soon. */
    int rcv = 64 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int stall(int port, int clients, long tokens, int pid, int hold_ms) {
    int *fd = calloc((size_t)clients, sizeof *fd);
    long long *got = calloc((size_t)clients, sizeof *got);
    char body[256], req[512];
    snprintf(body, sizeof body,
             "{\"prompt\":\"x\",\"max_tokens\":%ld,\"stream\":true,"
             "\"stream_options\":{\"include_usage\":true}}",
             tokens);
    snprintf(req, sizeof req,
             "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    long base = rss_kib(pid), peak = base;
    int errors = 0;
    for (int i = 0; i < clients; i++) {
        fd[i] = dial(port);
        if (fd[i] < 0 || write_all(fd[i], req, strlen(req))) errors++;
    }
    char buf[65536];
    /* Read the first 64 KiB of each, then stop. */
    for (int i = 0; i < clients; i++) {
        while (fd[i] >= 0 && got[i] < 65536) {
            ssize_t r = read(fd[i], buf, sizeof buf);
            if (r <= 0) break;
            got[i] += r;
        }
    }
    double t_end = now_s() + hold_ms / 1000.0;
    while (now_s() < t_end) {
        long r = rss_kib(pid);
        if (r > peak) peak = r;
        usleep(20000);
    }
    long held = rss_kib(pid);
    /* Now read everything. */
    long long total = 0;
    int done = 0;
    for (int i = 0; i < clients; i++) {
        if (fd[i] < 0) continue;
        ssize_t r;
        char tail[16] = {0};
        while ((r = read(fd[i], buf, sizeof buf)) > 0) {
            got[i] += r;
            size_t k = (size_t)r < 15 ? (size_t)r : 15;
            memcpy(tail, buf + r - (ssize_t)k, k);
            tail[k] = 0;
            long rr = rss_kib(pid);
            if (rr > peak) peak = rr;
        }
        if (strstr(tail, "[DONE]") || strstr(tail, "0\r\n\r\n")) done++;
        total += got[i];
        close(fd[i]);
    }
    printf("{\"bench\":\"stall\",\"clients\":%d,\"tokens\":%ld,\"bytes\":%lld,\"mib\":%.1f,"
           "\"completed\":%d,\"errors\":%d,\"rss_base_kib\":%ld,\"rss_held_kib\":%ld,"
           "\"rss_peak_kib\":%ld,\"peak_mb\":%.1f}\n",
           clients, tokens, total, (double)total / 1048576.0, done, errors + clients - done, base,
           held, peak, (double)peak / 1024.0);
    free(fd);
    free(got);
    return done == clients ? 0 : 1;
}

static int slow_body(int port, long bytes, int pid) {
    int fd = dial(port);
    if (fd < 0) return 1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const char *head =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    long base = rss_kib(pid), peak = base;
    write_all(fd, head, strlen(head));
    /* {"prompt":"aaaa...","max_tokens":1} as 1-byte chunks, written in batches. */
    const char *pre = "{\"prompt\":\"", *post = "\",\"max_tokens\":1}";
    long fill = bytes - (long)strlen(pre) - (long)strlen(post);
    char batch[6 * 8192];
    size_t bn = 0;
    long sent = 0;
    double t0 = now_s();
    for (long i = 0; i < bytes; i++) {
        char c;
        if (i < (long)strlen(pre))
            c = pre[i];
        else if (i < (long)strlen(pre) + fill)
            c = 'a';
        else
            c = post[i - (long)strlen(pre) - fill];
        batch[bn++] = '1', batch[bn++] = '\r', batch[bn++] = '\n', batch[bn++] = c;
        batch[bn++] = '\r', batch[bn++] = '\n';
        if (bn == sizeof batch || i + 1 == bytes) {
            if (write_all(fd, batch, bn)) break;
            sent += (long)(bn / 6);
            bn = 0;
            if ((sent & 0xFFFF) < 8192) {
                long r = rss_kib(pid);
                if (r > peak) peak = r;
            }
        }
    }
    long arriving = peak; /* the peak while the body was still arriving */
    write_all(fd, "0\r\n\r\n", 5);
    char buf[4096];
    ssize_t r = read(fd, buf, sizeof buf - 1);
    int status = 0;
    if (r > 12) sscanf(buf, "HTTP/1.1 %d", &status);
    long after = rss_kib(pid);
    if (after > peak) peak = after;
    close(fd);
    printf("{\"bench\":\"slow_body\",\"bytes\":%ld,\"chunks\":%ld,\"seconds\":%.2f,\"status\":%d,"
           "\"rss_base_kib\":%ld,\"rss_arriving_peak_kib\":%ld,\"arriving_peak_mb\":%.1f,"
           "\"rss_peak_kib\":%ld,\"peak_mb\":%.1f}\n",
           bytes, sent, now_s() - t0, status, base, arriving, (double)arriving / 1024.0, peak,
           (double)peak / 1024.0);
    return status == 200 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) goto usage;
    int port = 0, clients = 20, pid = 0, hold = 3000;
    long tokens = 160000, bytes = 8l << 20;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port"))
            port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients"))
            clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens"))
            tokens = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--pid"))
            pid = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--hold-ms"))
            hold = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--bytes"))
            bytes = atol(argv[i + 1]);
        else
            goto usage;
    }
    if (!port || !pid) goto usage;
    if (!strcmp(argv[1], "stall")) return stall(port, clients, tokens, pid, hold);
    if (!strcmp(argv[1], "body")) return slow_body(port, bytes, pid);
usage:
    fprintf(stderr, "usage: ir-slowclient stall|body --port P --pid PID [--clients N --tokens T "
                    "--hold-ms MS | --bytes B]\n");
    return 2;
}
