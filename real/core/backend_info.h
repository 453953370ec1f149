#pragma once

#include <string>

namespace clustertwin::real {

/// What the libtorch this binary is linked against can do. Plain C++ so that
/// the command line can print it without including torch.
struct BackendInfo {
  std::string torch_version;  // "1.13.0"
  bool gloo = false;          // c10d's ProcessGroupGloo compiled in (CPU collectives)
  bool nccl = false;          // c10d's ProcessGroupNCCL compiled in (GPU collectives)
  bool cuda_built = false;    // libtorch built with CUDA
  int cuda_devices = 0;       // GPUs visible now
};

/// Queries the linked libtorch (cheap; no process group is created).
BackendInfo backend_info();

/// "libtorch 1.13.0, c10d gloo yes, nccl no, cuda no".
std::string describe(const BackendInfo& info);

}  // namespace clustertwin::real
