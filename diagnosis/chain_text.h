// Words for a chain document's parts that every renderer shows the same way (`causeway
// explain`'s text, the HTML report): the culprit line. Plain text, untrusted strings sanitized;
// an HTML caller escapes it on top.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace causeway {

// "tar (pid 991), 81% of the stolen CPU time; cgroup /system.slice/backup.service" from a
// chain's `culprit` object ("" when it is not an object). A request-level culprit's `share`
// is of the time its cause claimed (diagnosis/culprit.h ShareKind::claimed), not of slow calls.
std::string culprit_line(const nlohmann::json& culprit, bool request_level = false);

// Whether a chain document is request-level (`"level": "request"`, docs/INFERENCE.md "Request chains").
bool is_request_chain(const nlohmann::json& chain);

// One of prefill_interference's long requests: "docs-1 (9000 prompt tokens, tenant docs)",
// bytes when the server gave no token count ("" when it has no id).
std::string long_request_text(const nlohmann::json& long_request);

// "81%" from 0.81.
std::string percent_text(double share);

}  // namespace causeway
