#include "tests/bpf/netns_support.h"

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "tests/bpf/collector_harness.h"

namespace causeway::test {
namespace {

// Drops at the input hook, on the receiving side of loopback: a drop at output is reported
// back to TCP as a local send error, which it retries without counting a retransmit.
std::string drop_rules(int port, int percent) {
  return "table inet cw_drop {\n"
         "  chain input {\n"
         "    type filter hook input priority 0; policy accept;\n"
         "    tcp dport " + std::to_string(port) + " numgen random mod 100 < " + std::to_string(percent) + " drop\n"
         "  }\n"
         "}\n";
}

bool lo_up() {
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  ok = ok && ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  ::close(s);
  return ok;
}

}  // namespace

std::string nft_path() {
  for (const char* p : {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

void enter_lossy_netns(const std::string& nft, const std::string& rules_file, int port, int drop_percent) {
  { std::ofstream(rules_file) << drop_rules(port, drop_percent); }
  if (::unshare(CLONE_NEWNET) != 0 || !lo_up()) ::_exit(3);
  pid_t n = ::fork();
  if (n == 0) {
    ::execl(nft.c_str(), nft.c_str(), "-f", rules_file.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (wait_exit(n) != 0) ::_exit(4);
}

}  // namespace causeway::test
