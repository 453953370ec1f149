// Pass 1 of the Kineto import: what each file holds (its header, streams,
// thread names, earliest time, launches, c10d operators and gradients), the
// launch and operator a GPU event of it links to, the files' ranks, and our
// streams.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "traces/kineto_import_internal.h"
#include "traces/kineto_names.h"

namespace clustertwin::traces::detail {

std::optional<Category> imported_category(const KinetoEvent& e, const KinetoImportOptions& options) {
  if (e.ph != "X" || !e.pid || !e.tid) return std::nullopt;
  return kineto::category_for(e.cat, e.name, e.has_collective, options.keep_runtime_calls);
}

StreamKey stream_key(const KinetoEvent& e) {
  return {kineto::is_gpu_category(e.cat) ? 0 : 1, *e.pid, *e.tid};
}

const Launch* Input::launch_of(const KinetoEvent& e) const {
  if (!e.correlation || !kineto::is_gpu_category(e.cat)) return nullptr;
  auto it = launches.find(*e.correlation);
  return it == launches.end() ? nullptr : &it->second;
}

const CommOperator* Input::operator_around(const Launch& launch) const {
  auto ops = comm_operators.find(launch.tid);
  if (ops == comm_operators.end()) return nullptr;
  const CommOperator* best = nullptr;
  for (const CommOperator& op : ops->second) {
    if (launch.ts < op.ts) break;
    if (micros_between(op.ts, launch.ts) > op.dur) continue;      // ended before the launch
    if (best == nullptr || !best->bytes || op.bytes) best = &op;  // later starts are nested deeper
  }
  return best;
}

Status scan(Input* in, const KinetoImportOptions& options, KinetoImportStats* stats) {
  return kineto::read_kineto_file(in->path, &in->header, [&](const KinetoEvent& e) {
    ++stats->events_read;
    if (e.ph == "M") {
      if (e.name == "thread_name" && e.pid && e.tid && !kineto::trim(e.name_arg).empty()) {
        in->thread_names[{*e.pid, *e.tid}] = std::string(kineto::trim(e.name_arg));
      }
      return Status::ok();
    }
    if (e.ph == "X" && e.tid && e.correlation && (e.cat == "cuda_runtime" || e.cat == "cuda_driver")) {
      in->launches[*e.correlation] = Launch{*e.tid, e.ts, e.dur};
    }
    if (e.tid) {
      if (auto op = comm_operator(e)) in->comm_operators[*e.tid].push_back(std::move(*op));
      if (e.ph == "X" && e.name == "torch::autograd::AccumulateGrad") {
        if (auto bytes = first_input_bytes(e)) in->accumulate_grads[*e.tid].emplace_back(e.ts, *bytes);
      }
    }
    if (!imported_category(e, options)) {
      ++stats->dropped;  // flows, instants, counters, runtime calls, profiler spans
      return Status::ok();
    }
    in->streams.insert(stream_key(e));
    if (!in->first_ts || e.ts < *in->first_ts) in->first_ts = e.ts;
    return Status::ok();
  });
}

void credit_gradients(Input* in) {
  std::map<int64_t, std::vector<std::pair<Micros, int64_t>>> by_thread;  // tid -> (launch start, correlation)
  for (const auto& [correlation, launch] : in->launches)
    by_thread[launch.tid].emplace_back(launch.ts, correlation);
  for (auto& [tid, list] : by_thread) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  for (const auto& [tid, grads] : in->accumulate_grads) {
    auto launched = by_thread.find(tid);
    if (launched == by_thread.end()) continue;
    const auto& list = launched->second;
    for (const auto& [ts, bytes] : grads) {
      auto after = std::upper_bound(list.begin(), list.end(), ts,
                                    [](const Micros& t, const std::pair<Micros, int64_t>& l) { return t < l.first; });
      if (after == list.begin()) continue;  // nothing launched before it on its thread
      in->grad_bytes[std::prev(after)->second] += bytes;
    }
  }
}

Status assign_ranks(std::vector<Input>* inputs, const KinetoImportOptions& options, int* world_size) {
  std::map<int64_t, const Input*> owner;
  int64_t size = 1;
  for (Input& in : *inputs) {
    in.rank = options.rank ? *options.rank : in.header.rank ? *in.header.rank : static_cast<int64_t>(in.position);
    if (in.rank >= (1 << 24)) {
      return Status::invalid_argument(in.path + ": rank " + std::to_string(in.rank) +
                                      " is out of range (0 to 16777215)");
    }
    auto [it, inserted] = owner.emplace(in.rank, &in);
    if (!inserted) {
      return Status::invalid_argument(in.path + ": rank " + std::to_string(in.rank) + " is also claimed by " +
                                      it->second->path +
                                      " (a rank comes from --rank, else distributedInfo.rank, else the input's "
                                      "position); give one file per rank");
    }
    if (in.header.world_size.value_or(1) > (1 << 24)) {
      return Status::invalid_argument(in.path + ": top level: field 'distributedInfo.world_size': " +
                                      std::to_string(*in.header.world_size) + " is out of range (1 to 16777216)");
    }
    if (!options.rank && in.header.world_size && in.rank >= *in.header.world_size) {
      return Status::invalid_argument(
          in.path + ": top level: field 'distributedInfo.world_size': " + std::to_string(*in.header.world_size) +
          " has no rank " + std::to_string(in.rank) + " (ranks 0 to " + std::to_string(*in.header.world_size - 1) +
          ")");
    }
    const Input* first = inputs->front().header.world_size ? &inputs->front() : nullptr;
    if (first != nullptr && in.header.world_size && *in.header.world_size != *first->header.world_size) {
      return Status::invalid_argument(
          in.path + ": top level: field 'distributedInfo.world_size': " + std::to_string(*in.header.world_size) +
          ", but " + first->path + " says " + std::to_string(*first->header.world_size));
    }
    size = std::max({size, in.rank + 1, in.header.world_size.value_or(1)});
  }
  *world_size = static_cast<int>(size);
  return Status::ok();
}

std::vector<std::string> assign_streams(std::vector<Input>* inputs) {
  std::vector<std::tuple<StreamKey, size_t, std::string>> all;  // key, index in *inputs, name
  for (size_t i = 0; i < inputs->size(); ++i) {
    Input& in = (*inputs)[i];
    std::set<std::string> used;  // two threads of one rank never share a stream
    for (const StreamKey& key : in.streams) {
      const std::string generated =
          key.kind == 0 ? kineto::gpu_stream_name(key.pid, key.tid) : kineto::cpu_thread_name(key.tid);
      auto named = in.thread_names.find({key.pid, key.tid});
      std::string name = named != in.thread_names.end() ? named->second : generated;
      if (used.count(name) > 0) name = generated;
      for (int n = 2; used.count(name) > 0; ++n) {
        name = generated + " #" + std::to_string(n);
      }
      used.insert(name);
      all.emplace_back(key, i, name);
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<std::string> names;
  std::map<std::string, int64_t> ids;
  for (const auto& [key, i, name] : all) {
    auto [it, inserted] = ids.emplace(name, static_cast<int64_t>(names.size()));
    if (inserted) names.push_back(name);
    (*inputs)[i].stream_ids[key] = it->second;
  }
  return names;
}

}  // namespace clustertwin::traces::detail
