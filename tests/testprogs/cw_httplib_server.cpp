// A cpp-httplib server (Debian's libcpp-httplib-dev) for the live request tests
// (tests/bpf/test_requests_go_cpp_bpf.cpp): a thread pool, blocking accept() and reads.
// GET /hello answers "hello"; GET /metrics one Prometheus sample; GET /spin?ms=N burns N ms of
// CPU time on the serving thread, then answers "spun" (a hog on its CPU slows it). Writes its pid to the ready
// file once listening; SIGTERM stops it.
// Usage: cw_httplib_server PORT READY_FILE
// cpp-httplib listens with a backlog of 5 unless told otherwise; llama.cpp's server and most
// deployments raise it. With 5, a burst of 50 connections on a loaded 2-core host has SYNs
// dropped and retried for seconds (the go_cpp test's --pid case ran past its client's limit).
#define CPPHTTPLIB_LISTEN_BACKLOG 512
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {
httplib::Server* g_server = nullptr;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cw_httplib_server PORT READY_FILE\n");
    return 2;
  }
  httplib::Server svr;
  g_server = &svr;
  svr.Get("/hello", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
  svr.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("demo_requests_total 1\n", "text/plain");
  });
  svr.Get("/spin", [](const httplib::Request& req, httplib::Response& res) {
    const double ms = req.has_param("ms") ? std::stod(req.get_param_value("ms")) : 2.0;
    // CPU time, not wall time: preempted meanwhile, it takes longer, as real work would.
    auto cpu_ns = [] {
      timespec ts{};
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    };
    const int64_t until = cpu_ns() + static_cast<int64_t>(ms * 1e6);
    while (cpu_ns() < until) {
    }
    res.set_content("spun", "text/plain");
  });
  // Connections opened before a trace starts stay idle until the test says go.
  svr.set_keep_alive_timeout(60);
  svr.set_read_timeout(60, 0);
  if (!svr.bind_to_port("127.0.0.1", std::atoi(argv[1]))) {
    std::perror("bind");
    return 1;
  }
  ::signal(SIGTERM, [](int) { g_server->stop(); });
  if (FILE* f = std::fopen(argv[2], "w")) {
    std::fprintf(f, "%d", static_cast<int>(::getpid()));
    std::fclose(f);
  }
  return svr.listen_after_bind() ? 0 : 1;
}
