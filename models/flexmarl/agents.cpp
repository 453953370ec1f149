#include "models/flexmarl/agents.h"

#include <charconv>

#include "common/text.h"

namespace clustertwin::models::flexmarl {

StatusOr<std::vector<spec::LlmSpec>> parse_agents(const std::string& text) {
  auto bad = [&](const std::string& why) { return Status::invalid_argument(quote_for_message(text) + ": " + why); };
  std::vector<spec::LlmSpec> agents;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find('+', begin), text.size());
    const std::string term = text.substr(begin, end - begin);
    int count = 1;
    std::string size = term;
    if (const size_t x = term.find('x'); x != std::string::npos) {
      const auto [stop, error] = std::from_chars(term.data(), term.data() + x, count);
      if (x == 0 || error != std::errc() || stop != term.data() + x)
        return bad("'" + term + "' is not COUNTxSIZE (for example 3x14B)");
      size = term.substr(x + 1);
    }
    if (term.empty()) return bad("an empty term (terms are joined by '+', for example 3x32B+7x14B)");
    if (count < 1) return bad("'" + term + "' has " + std::to_string(count) + " agents (needs >= 1)");
    auto spec = spec::llm_spec(size);
    if (!spec.is_ok()) return bad(spec.status().message());
    if (static_cast<int>(agents.size()) + count > kMaxAgents)
      return bad("more than " + std::to_string(kMaxAgents) + " agents");
    agents.insert(agents.end(), static_cast<size_t>(count), *spec);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return agents;
}

StatusOr<Workload> workload_from_agents(const std::string& agents) {
  if (agents.empty()) return ma_workload();
  auto specs = parse_agents(agents);
  if (!specs.is_ok()) return specs.status();
  Workload w = workload_for(*specs);
  w.name = agents;
  return w;
}

}  // namespace clustertwin::models::flexmarl
