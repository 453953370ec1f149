#include "real/flexmarl/rollout.h"

#include <algorithm>
#include <map>

#include "common/hash.h"
#include "real/flexmarl/host_device.h"

namespace clustertwin::real::flexmarl {
namespace {

Status check(const models::nets::ByteLm& model, const std::vector<RolloutRequest>& requests,
             const RolloutOptions& options) {
  const int64_t vocab = model->options().vocab, context = model->options().context;
  if (options.topk < 1 || options.topk > vocab) {
    return Status::invalid_argument("rollout: top-K " + std::to_string(options.topk) + " must be in [1, vocab " +
                                    std::to_string(vocab) + "]");
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const RolloutRequest& r = requests[i];
    const std::string name = "rollout request " + std::to_string(i) + " (key " + std::to_string(r.key) + ")";
    if (r.prompt.empty()) return Status::invalid_argument(name + ": empty prompt");
    for (int64_t t : r.prompt) {
      if (t < 0 || t >= vocab) {
        return Status::invalid_argument(name + ": token " + std::to_string(t) + " outside the vocabulary of " +
                                        std::to_string(vocab));
      }
    }
    if (r.budget < 1) return Status::invalid_argument(name + ": budget " + std::to_string(r.budget) + " < 1");
    if (static_cast<int64_t>(r.prompt.size()) + r.budget - 1 > context) {
      return Status::invalid_argument(name + ": prompt of " + std::to_string(r.prompt.size()) + " + budget " +
                                      std::to_string(r.budget) + " exceeds the context " + std::to_string(context) +
                                      " + 1");
    }
  }
  return Status::ok();
}

// One next token from a row of probabilities by inversion of its CDF.
int64_t draw(const at::Tensor& probs, at::Generator& generator) {
  const double u = at::rand({1}, generator, at::TensorOptions().dtype(at::kDouble)).item<double>();
  const at::Tensor cdf = probs.to(at::kDouble).cumsum(0);
  const double* c = cdf.data_ptr<double>();
  const int64_t n = cdf.size(0);
  const double target = u * c[n - 1];
  for (int64_t k = 0; k < n; ++k) {
    if (target < c[k]) return k;
  }
  return n - 1;
}

// Requests of one prompt length, decoded together.
void generate_batch(models::nets::ByteLm& model, const std::vector<RolloutRequest>& requests,
                    const std::vector<size_t>& rows, const RolloutOptions& options, std::vector<RolloutResult>& out) {
  const int64_t b = static_cast<int64_t>(rows.size());
  const int64_t p = static_cast<int64_t>(requests[rows[0]].prompt.size());
  std::vector<std::vector<int64_t>> sequences(rows.size());
  std::vector<at::Generator> generators;
  std::vector<bool> done(rows.size(), false);
  at::Tensor prompt = at::empty({b, p}, at::kLong);
  for (int64_t i = 0; i < b; ++i) {
    const RolloutRequest& r = requests[rows[static_cast<size_t>(i)]];
    sequences[static_cast<size_t>(i)] = r.prompt;
    for (int64_t t = 0; t < p; ++t)
      prompt[i][t] = r.prompt[static_cast<size_t>(t)];
    generators.push_back(at::detail::createCPUGenerator(mix64(options.seed ^ mix64(r.key + 0x51ed27a3ull))));
  }
  const at::Device device = model->parameters().front().device();
  models::nets::ByteLmImpl::DecodeState state;  // the KV cache, on the device
  std::vector<at::Tensor> logsoftmax;           // [B, n, V] chunks, one per decode call, on the device
  at::Tensor input = to_device(prompt, device);
  for (;;) {
    const at::Tensor ls = at::log_softmax(model->decode(input, state), -1);
    logsoftmax.push_back(ls);
    // Drawn on the host from the requests' CPU generators (rollout.h): one
    // [B, V] copy per position on a GPU, where the host must see the tokens
    // anyway to stop the rows.
    const at::Tensor probs = to_host(ls.select(1, ls.size(1) - 1).exp());
    at::Tensor next = at::full({b, 1}, options.end_token, at::kLong);
    bool any = false;
    for (int64_t i = 0; i < b; ++i) {
      const size_t row = static_cast<size_t>(i);
      if (done[row]) continue;
      const RolloutRequest& r = requests[rows[row]];
      const int64_t token = draw(probs[i], generators[row]);
      sequences[row].push_back(token);
      const int64_t produced = static_cast<int64_t>(sequences[row].size()) - p;
      done[row] = produced >= r.budget || (r.stops_at_end && token == options.end_token);
      next[i][0] = token;
      any = any || !done[row];
    }
    if (!any) break;
    input = to_device(next, device);
  }
  const at::Tensor all = to_host(at::cat(logsoftmax, 1));  // [B, positions decoded, V]
  for (int64_t i = 0; i < b; ++i) {
    const size_t row = static_cast<size_t>(i);
    const std::vector<int64_t>& seq = sequences[row];
    const int64_t positions = static_cast<int64_t>(seq.size()) - 1;
    const at::Tensor ls = all[i].slice(0, 0, positions);
    const at::Tensor targets = at::tensor(std::vector<int64_t>(seq.begin() + 1, seq.end()), at::kLong);
    RolloutResult& result = out[rows[row]];
    result.response.assign(seq.begin() + p, seq.end());
    result.logp = ls.gather(-1, targets.unsqueeze(-1)).squeeze(-1).clone();
    auto top = ls.topk(options.topk, -1);
    result.topk_logp = std::get<0>(top).clone();
    result.topk_ids = std::get<1>(top).clone();
  }
}

}  // namespace

StatusOr<std::vector<RolloutResult>> generate(models::nets::ByteLm& model, const std::vector<RolloutRequest>& requests,
                                              const RolloutOptions& options) {
  CT_RETURN_IF_ERROR(check(model, requests, options));
  at::NoGradGuard no_grad;
  std::map<size_t, std::vector<size_t>> by_length;  // prompt length -> requests, in request order
  for (size_t i = 0; i < requests.size(); ++i)
    by_length[requests[i].prompt.size()].push_back(i);
  std::vector<RolloutResult> out(requests.size());
  for (const auto& [length, rows] : by_length)
    generate_batch(model, requests, rows, options, out);
  return out;
}

}  // namespace clustertwin::real::flexmarl
