/* cw_static_http: a statically linked HTTP/1.1 server (no libc for the libc hook to probe,
 * like a static Go binary) for request tracing's bpf tests: request tracing must fall back to
 * the syscall tracepoints for it (collector/sock_hook.h, tests/bpf/test_requests_hook_bpf.cpp).
 * One connection at a time, keep-alive; each request (head, then Content-Length bytes of body)
 * is answered "200 ok". Writes --ready-file once listening; runs until killed.
 *
 *   cw_static_http --port 18080 --ready-file R */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";

/* Serves one connection until the peer closes it. */
static void serve(int c) {
  char buf[8192];
  size_t have = 0;
  for (;;) {
    char* end = have ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
    if (!end) {
      if (have == sizeof buf) return; /* a head this large: not for this test */
      ssize_t n = read(c, buf + have, sizeof buf - have);
      if (n <= 0) return;
      have += (size_t)n;
      continue;
    }
    size_t head = (size_t)(end - buf) + 4, body = 0;
    for (char* p = buf; p < end; p++)
      if ((p == buf || p[-1] == '\n') && strncasecmp(p, "content-length:", 15) == 0) body = strtoul(p + 15, NULL, 10);
    while (have < head + body && have < sizeof buf) {
      ssize_t n = read(c, buf + have, sizeof buf - have);
      if (n <= 0) return;
      have += (size_t)n;
    }
    if (head + body > have) return;
    if (write(c, kAnswer, sizeof kAnswer - 1) != (ssize_t)(sizeof kAnswer - 1)) return;
    memmove(buf, buf + head + body, have - head - body);
    have -= head + body;
  }
}

int main(int argc, char** argv) {
  int port = 0;
  const char* ready = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--ready-file") == 0) ready = argv[i + 1];
  }
  if (port <= 0 || !ready) {
    fprintf(stderr, "usage: cw_static_http --port PORT --ready-file FILE\n");
    return 2;
  }
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || bind(s, (struct sockaddr*)&a, sizeof a) != 0 || listen(s, 16) != 0) {
    perror("cw_static_http: listen");
    return 1;
  }
  FILE* f = fopen(ready, "w");
  if (!f) {
    perror("cw_static_http: ready file");
    return 1;
  }
  fputs("ready\n", f);
  fclose(f);
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    serve(c);
    close(c);
  }
}
