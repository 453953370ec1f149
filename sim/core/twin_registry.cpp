// The twins of common/systems.def: each system's folder under sim/ gives
// `const Twin& sim::NAME::twin()` (sim/NAME/NAME_entry.cpp), and this table
// finds it by name. A program that runs jobs of any system links
// ct_sim_twins and names none.

#include "sim/core/twin.h"

namespace clustertwin::sim {

#define CT_SYSTEM(name, title) \
  namespace name {             \
  const Twin& twin();          \
  }
#include "common/systems.def"
#undef CT_SYSTEM

const Twin* find_twin(std::string_view system) {
#define CT_SYSTEM(name, title) \
  if (system == #name) return &name::twin();
#include "common/systems.def"
#undef CT_SYSTEM
  return nullptr;
}

std::string twin_list() {
  std::string out;
#define CT_SYSTEM(name, title) out += std::string(out.empty() ? "" : ", ") + #name;
#include "common/systems.def"
#undef CT_SYSTEM
  return out;
}

}  // namespace clustertwin::sim
