// The device check's libtorch probe: what the linked libtorch can do, as
// clustertwin sees it (real/core/backend_info), and one CUDA tensor operation
// from C++ when CT_CUDA is on. Exit 0 when everything it tried worked.

#include <torch/torch.h>

#include <exception>
#include <iostream>

#include "real/core/backend_info.h"

int main() {
  const clustertwin::real::BackendInfo info = clustertwin::real::backend_info();
  std::cout << clustertwin::real::describe(info) << "\n";
#if defined(CT_HAVE_CUDA_TORCH)
  std::cout << "CT_HAVE_CUDA_TORCH=1 (CT_CUDA on)\n";
  if (info.cuda_devices == 0) {
    std::cerr << "backend_probe: CT_CUDA is on but libtorch sees no CUDA device\n";
    return 1;
  }
  try {
    // 1 + 2 + ... + 1024 = 1024 * 1025 / 2 = 524800, computed on the GPU.
    const torch::Tensor sum = torch::arange(1, 1025, torch::TensorOptions().device(torch::kCUDA)).sum();
    const int64_t value = sum.item<int64_t>();
    std::cout << "sum of 1..1024 on " << sum.device() << ": " << value << "\n";
    if (value != 524800) {
      std::cerr << "backend_probe: expected 524800\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "backend_probe: CUDA tensor operation failed: " << e.what() << "\n";
    return 1;
  }
#else
  std::cout << "CT_HAVE_CUDA_TORCH not defined (CT_CUDA off)\n";
#endif
  return 0;
}
