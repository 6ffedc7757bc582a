// A lossy network for bpf tests (no tc netem in this kernel): a fresh network namespace with
// loopback up and nftables dropping a share of the TCP packets to one port at the input hook.
#pragma once

#include <string>

namespace causeway::test {

// The nft binary; "" when nftables is not installed (scripts/install-deps.sh --tests does).
std::string nft_path();

// In a child process, before exec: unshare the network namespace, bring lo up and load the
// drop rules. Exits the child (3: unshare/lo, 4: nft) when that fails.
void enter_lossy_netns(const std::string& nft, const std::string& rules_file, int port, int drop_percent);

}  // namespace causeway::test
