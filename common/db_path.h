#pragma once

#include <string>

namespace causeway {

// --db default: $CAUSEWAY_DB, else ${XDG_DATA_HOME:-$HOME/.local/share}/causeway/trace.db.
std::string default_db_path();

}  // namespace causeway
