#include "models/torch/init.h"

#include <ATen/CPUGeneratorImpl.h>

#include <memory>

namespace clustertwin::models::nets {

void init_gpt2(torch::nn::Module& model, uint64_t seed, const std::string& model_name) {
  torch::NoGradGuard no_grad;
  at::Generator generator = at::detail::createCPUGenerator(seed);
  int64_t initialised = 0;
  for (const std::shared_ptr<torch::nn::Module>& module : model.modules()) {
    const bool is_norm = dynamic_cast<torch::nn::LayerNormImpl*>(module.get()) != nullptr;
    for (const auto& item : module->named_parameters(/*recurse=*/false)) {
      torch::Tensor p = item.value();
      if (is_norm) {
        p.fill_(item.key() == "weight" ? 1.0 : 0.0);
      } else if (item.key() == "bias") {
        p.zero_();
      } else {
        p.normal_(0.0, 0.02, generator);
      }
      initialised += p.numel();
    }
  }
  int64_t total = 0;
  for (const torch::Tensor& p : model.parameters())
    total += p.numel();
  TORCH_CHECK(initialised == total, model_name, ": ", total - initialised, " parameters have no seeded init");
}

}  // namespace clustertwin::models::nets
