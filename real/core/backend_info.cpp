#include "real/core/backend_info.h"

#include <torch/torch.h>
#include <torch/version.h>

namespace clustertwin::real {

BackendInfo backend_info() {
  BackendInfo info;
  info.torch_version = TORCH_VERSION;
#ifdef USE_C10D_GLOO
  info.gloo = true;
#endif
#ifdef USE_C10D_NCCL
  info.nccl = true;
#endif
  info.cuda_built = at::hasCUDA();
  info.cuda_devices = info.cuda_built ? static_cast<int>(torch::cuda::device_count()) : 0;
  return info;
}

std::string describe(const BackendInfo& info) {
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  std::string text =
      "libtorch " + info.torch_version + ", c10d gloo " + yes_no(info.gloo) + ", nccl " + yes_no(info.nccl) + ", cuda ";
  text += info.cuda_built ? "yes (" + std::to_string(info.cuda_devices) + " device(s) visible)" : "no";
  return text;
}

}  // namespace clustertwin::real
