// Words for a chain document's parts that every renderer shows the same way (`causeway
// explain`'s text, the HTML report): the culprit line. Plain text, untrusted strings sanitized;
// an HTML caller escapes it on top.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace causeway {

// "tar (pid 991), 81% of the stolen CPU time; cgroup /system.slice/backup.service" from a
// chain's `culprit` object ("" when it is not an object).
std::string culprit_line(const nlohmann::json& culprit);

// "81%" from 0.81.
std::string percent_text(double share);

}  // namespace causeway
