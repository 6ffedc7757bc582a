#include "collector/tracer_conns.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"

namespace causeway::collector {

bool share_tracer_conns(bpf_map* map, std::string& why_not) {
  why_not.clear();
  // Map ids grow as maps are made: the first match is the oldest tracer's, the one every
  // later tracer picks too.
  uint32_t id = 0;
  bool refused = false;
  while (!refused) {
    if (bpf_map_get_next_id(id, &id) != 0) {
      refused = errno == EPERM;
      break;
    }
    const UniqueFd fd{bpf_map_get_fd_by_id(id)};
    refused = !fd && errno == EPERM;
    if (!fd) continue;  // freed meanwhile, or refused
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0 || std::strcmp(info.name, bpf_map__name(map)) != 0)
      continue;
    // Another build's map of that name, shaped otherwise, is not read as ours.
    if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
        info.value_size != bpf_map__value_size(map) || info.max_entries != bpf_map__max_entries(map))
      continue;
    if (int err = bpf_map__reuse_fd(map, fd.get()); err != 0) {  // it keeps a duplicate
      why_not = std::string("cannot reuse another tracer's map: ") + std::strerror(-err);
      return false;
    }
    return true;
  }
  // Listing and opening the host's maps by id needs CAP_SYS_ADMIN (CAP_BPF alone loads).
  if (refused) why_not = "opening other tracers' maps needs CAP_SYS_ADMIN";
  return false;  // else the first tracer: the next ones find this one's
}

}  // namespace causeway::collector
