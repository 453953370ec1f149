#include "real/stub/stub_command.h"

#include <cstdio>

namespace clustertwin::real::stub {

Status run_stub() {
  std::printf("stub: no real executor\n");
  return Status::ok();
}

}  // namespace clustertwin::real::stub
