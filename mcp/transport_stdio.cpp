#include "mcp/transport_stdio.h"

#include "common/untrusted_json.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace causeway::mcp {
namespace {

class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void write(const std::string& line) {
    std::lock_guard lock(mu_);
    std::string out = line + "\n";
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::write(fd_, out.data() + off, out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client went away; EOF on stdin will end the loop
      off += static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mu_;
};

// tools/call requests may run for seconds; everything else answers inline.
bool is_tool_call(const std::string& line) {
  if (line.find("tools/call") == std::string::npos) return false;
  json doc = parse_untrusted_json_or_null(line);
  return doc.is_object() && doc.contains("id") && doc.value("method", "") == "tools/call";
}

}  // namespace

int serve_stdio(Server& server, const std::function<bool()>& stop, const StdioOptions& options) {
  LineWriter out(options.out_fd);
  std::mutex mu;
  std::condition_variable slot_freed;
  size_t running = 0;

  auto answer = [&](const std::string& line) {
    Exchange ex;
    ex.scope = "stdio";
    ex.notify = [&out](const std::string& n) { out.write(n); };
    if (auto reply = server.handle(line, ex)) out.write(*reply);
  };

  auto process_line = [&](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) return;
    if (!is_tool_call(line)) {
      answer(line);
      return;
    }
    std::unique_lock lock(mu);
    slot_freed.wait(lock, [&] { return running < options.max_concurrent_calls; });
    ++running;
    // Detached: the loop below waits for running == 0 before anything they use goes away.
    std::thread([&, line = std::move(line)] {
      answer(line);
      std::lock_guard l(mu);
      --running;
      slot_freed.notify_all();
    }).detach();
  };

  std::string buffer;
  bool discarding = false;  // inside an over-long line: drop bytes until its newline
  char chunk[65536];
  while (!stop()) {
    pollfd p{options.in_fd, POLLIN, 0};
    int pr = poll(&p, 1, 200);  // wakes to notice stop() even when the client is idle
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    ssize_t n = read(options.in_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // EOF: the client closed stdin
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (chunk[i] != '\n') continue;
      if (discarding) {
        discarding = false;
      } else {
        buffer.append(chunk + start, i - start);
        process_line(std::move(buffer));
      }
      buffer.clear();
      start = i + 1;
    }
    if (!discarding) buffer.append(chunk + start, static_cast<size_t>(n) - start);
    if (buffer.size() > options.max_message_bytes) {
      buffer.clear();
      discarding = true;
      out.write(make_error_response(nullptr, RpcError{kInvalidRequest, "Invalid Request: message larger than " +
                                                                   std::to_string(options.max_message_bytes) + " bytes",
                                             nullptr}));
    }
  }
  if (!discarding && !buffer.empty() && !stop()) process_line(std::move(buffer));  // last line without newline
  // Shutdown: interrupt running queries so exit is prompt, then wait for the workers.
  server.cancel_all();
  std::unique_lock lock(mu);
  slot_freed.wait(lock, [&] { return running == 0; });
  return 0;
}

}  // namespace causeway::mcp
