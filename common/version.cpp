#include "common/version.h"

namespace clustertwin {

std::string_view version() {
  return CT_VERSION_STRING;
}

}  // namespace clustertwin
