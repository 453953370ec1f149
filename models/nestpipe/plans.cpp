#include "models/nestpipe/plans.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/check.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models::nestpipe {
namespace {

using models::CollectiveOp;
using models::Task;
using models::TaskKind;

constexpr struct {
  Variant variant;
  const char* name;
} kVariants[] = {{Variant::kTorchRec, "torchrec"}, {Variant::kSemiSync, "semisync"}, {Variant::kDbp, "dbp"},
                 {Variant::kFwp, "fwp"},           {Variant::kNestPipe, "nestpipe"}, {Variant::k2dSp, "2dsp"}};

enum Stream { kCompute, kComm, kCopy, kLookup, kUpdate };

// Adds tasks by name; dependencies are given by name and resolved at the end.
class Builder {
 public:
  explicit Builder(Variant variant) {
    plan_.system = "nestpipe";
    plan_.variant = std::string(variant_name(variant));
    plan_.streams = {"compute", "comm", "copy", "lookup", "update"};
  }

  Task& add(const std::string& name, TaskKind kind, Stream stream, const std::string& cost_key,
            std::vector<std::string> deps = {}, std::vector<std::string> prev_deps = {}) {
    Task t;
    t.id = static_cast<int>(plan_.tasks.size());
    t.name = name;
    t.kind = kind;
    t.stream = stream;
    t.cost_key = cost_key;
    plan_.tasks.push_back(t);
    deps_.push_back(std::move(deps));
    prev_deps_.push_back(std::move(prev_deps));
    return plan_.tasks.back();
  }

  Task& collective(const std::string& name, CollectiveOp op, int64_t bytes, int group, const std::string& cost_key,
                   std::vector<std::string> deps = {}, std::vector<std::string> prev_deps = {}) {
    Task& t = add(name, TaskKind::kCollective, kComm, cost_key, std::move(deps), std::move(prev_deps));
    t.bytes = bytes;
    t.collective = models::Collective{};
    t.collective->op = op;
    if (group > 0) {
      t.collective->group.kind = models::GroupSpec::Kind::kBlock;
      t.collective->group.size = group;
    }
    return t;
  }

  Task& task(const std::string& name) {
    for (Task& t : plan_.tasks) {
      if (t.name == name) return t;
    }
    CT_CHECK(false) << "nestpipe plan builder: no task " << name;
    return plan_.tasks.front();
  }

  StatusOr<models::Plan> finish() {
    std::map<std::string, int> id;
    for (const Task& t : plan_.tasks)
      id[t.name] = t.id;
    for (size_t i = 0; i < plan_.tasks.size(); ++i) {
      for (const std::string& d : deps_[i])
        plan_.tasks[i].deps.push_back(id.at(d));
      for (const std::string& d : prev_deps_[i])
        plan_.tasks[i].prev_step_deps.push_back(id.at(d));
    }
    CT_RETURN_IF_ERROR(models::validate_plan(plan_, "nestpipe/" + plan_.variant));
    return plan_;
  }

 private:
  models::Plan plan_;
  std::vector<std::vector<std::string>> deps_, prev_deps_;
};

// The per-owner skew of an All2All of t->bytes (StepSizes::a2a_share): split_bytes in proportion to `share`
// (exact), or every peer the busiest owner's share (the reduction).
void skew(Task* t, const std::vector<double>& share, bool exact) {
  if (share.empty()) return;
  double sum = 0, most = 0;
  for (double v : share) {
    sum += v;
    most = std::max(most, v);
  }
  if (sum <= 0) return;
  const double bytes = static_cast<double>(t->bytes);
  if (!exact) {
    t->bytes = std::llround(bytes * most * static_cast<double>(share.size()) / sum);
    return;
  }
  int64_t total = 0;
  for (double v : share) {
    t->collective->split_bytes.push_back(std::llround(bytes * v / sum));
    total += t->collective->split_bytes.back();
  }
  t->bytes = total;
}

std::string mb(const char* name, int m) {
  return std::string(name) + "[" + std::to_string(m) + "]";
}

// The All2All skew of a variant's embedding All2Alls (StepSizes::a2a_share).
const std::vector<double>& a2a_share_of(Variant variant, const StepSizes& s) {
  return variant == Variant::kNestPipe ? s.clustered_micro_a2a_share
         : variant == Variant::kFwp    ? s.micro_a2a_share
                                       : s.a2a_share;
}

// The sizes a plan can be built from: none negative, rows with bytes, a sharding group for 2dsp. `where`
// starts each message.
Status check_step_sizes(Variant variant, const StepSizes& s, int micro_batches, const std::string& where) {
  if (micro_batches < 1) {
    return Status::invalid_argument(where + "micro-batches " + std::to_string(micro_batches) + ": must be at least 1");
  }
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"input_bytes", s.input_bytes},
                                    {"key_bytes", s.key_bytes},
                                    {"owner_rows_dedup", s.owner_rows_dedup},
                                    {"owner_rows_per_requester", s.owner_rows_per_requester},
                                    {"emb_a2a_bytes", s.emb_a2a_bytes},
                                    {"micro_emb_a2a_bytes", s.micro_emb_a2a_bytes},
                                    {"clustered_micro_emb_a2a_bytes", s.clustered_micro_emb_a2a_bytes},
                                    {"patch_rows", s.patch_rows},
                                    {"lookup_requests", s.lookup_requests},
                                    {"replica_sync_rows", s.replica_sync_rows},
                                    {"replica_sync_bytes", s.replica_sync_bytes},
                                    {"dense_param_bytes", s.dense_param_bytes}}) {
    if (value < 0) return Status::invalid_argument(where + name + " " + std::to_string(value) + ": must be >= 0");
  }
  if (s.row_bytes <= 0)
    return Status::invalid_argument(where + "row_bytes " + std::to_string(s.row_bytes) + ": must be > 0");
  if (s.dense_forward_flops < 0) return Status::invalid_argument(where + "dense_forward_flops: must be >= 0");
  if (variant == Variant::k2dSp && s.sharding_group < 1) {
    return Status::invalid_argument(where + "sharding group " + std::to_string(s.sharding_group) +
                                    ": must be at least 1");
  }
  for (double v : a2a_share_of(variant, s)) {
    if (!(v >= 0) || !std::isfinite(v)) return Status::invalid_argument(where + "an All2All share is not >= 0");
  }
  return Status::ok();
}

// What a variant changes in the step's plan.
struct VariantShape {
  Variant variant = Variant::kTorchRec;
  bool dbp = false;           // rows prefetched into a double buffer and patched
  bool ahead = false;         // batch i+1's rows gathered during batch i (dbp, semisync)
  bool replica_sync = false;  // 2dsp's replicas average the rows they changed
  int group = 0;              // the All2Alls' sharding group (0: the world)
  int n = 1;                  // micro-batches
  int64_t rows = 0;           // rows an owner gathers
  int64_t emb = 0;            // the embedding All2All's bytes
};

VariantShape shape_of(Variant variant, const StepSizes& s, int micro_batches) {
  VariantShape v;
  v.variant = variant;
  v.dbp = variant == Variant::kDbp || variant == Variant::kNestPipe;
  const bool fwp = variant == Variant::kFwp || variant == Variant::kNestPipe;
  v.group = variant == Variant::k2dSp ? s.sharding_group : 0;
  v.n = fwp ? micro_batches : 1;
  v.rows = v.dbp ? s.owner_rows_dedup : s.owner_rows_per_requester;
  v.emb = variant == Variant::kNestPipe ? s.clustered_micro_emb_a2a_bytes
          : variant == Variant::kFwp    ? s.micro_emb_a2a_bytes
                                        : s.emb_a2a_bytes;
  v.ahead = v.dbp || variant == Variant::kSemiSync;
  v.replica_sync = variant == Variant::k2dSp && s.replica_sync_rows > 0;
  return v;
}

// The input, the keys, and the rows: gathered from host memory by their owner, then copied to the device.
//   synchronous: batch i's rows, after batch i-1's update
//   dbp:         batch i+1's rows into the Prefetch buffer during batch i, after batch i-1's update; rows
//                batch i then updates are patched (device to device) before batch i+1 reads them
//   semisync:    as dbp without the patch, and batch i's update waits until batch i+1's rows are read
//                (write after read): rows batch i updates are one step stale for batch i+1
//   2dsp:        as synchronous, after the replicas' sync of batch i-1's rows
void add_input_and_rows(const VariantShape& v, const StepSizes& s, Builder* b) {
  // The input of batch i+2 and the keys of batch i+1 move during batch i (TorchRec's pipeline, kept by all).
  b->add("h2d", TaskKind::kCopy, kCopy, "h2d").bytes = s.input_bytes;
  b->task("h2d").batch_offset = 2;
  b->collective("key_a2a", CollectiveOp::kAllToAll, s.key_bytes, v.group, "key_a2a", {}, {"h2d"}).batch_offset = 1;
  const std::string updated = v.replica_sync ? "replica_write" : "emb_update";
  if (v.ahead) {
    b->add("lookup_gather", TaskKind::kLookup, kLookup, "lookup_gather", {"key_a2a"}, {"emb_update"}).bytes =
        v.rows * s.row_bytes;
  } else {
    b->add("lookup_gather", TaskKind::kLookup, kLookup, "lookup_gather", {}, {"key_a2a", updated}).bytes =
        v.rows * s.row_bytes;
  }
  b->task("lookup_gather").batch_offset = v.ahead ? 1 : 0;
  b->task("lookup_gather").requests = v.dbp ? 1 : s.lookup_requests;
  b->add("lookup_copy", TaskKind::kCopy, kCopy, "lookup_copy", {"lookup_gather"}).bytes = v.rows * s.row_bytes;
  b->task("lookup_copy").batch_offset = v.ahead ? 1 : 0;
}

// Embedding All2All, dense forward and backward, gradient All2All: per micro-batch under fwp. Returns the
// gradient All2Alls, which the update waits for.
std::vector<std::string> add_micro_batches(const VariantShape& v, const StepSizes& s, Builder* b) {
  const int n = v.n;
  const std::vector<double>& share = a2a_share_of(v.variant, s);
  std::vector<std::string> a2a_fwd_deps =
      v.ahead ? std::vector<std::string>{} : std::vector<std::string>{"lookup_copy"};
  std::vector<std::string> a2a_fwd_prev = v.dbp     ? std::vector<std::string>{"dbp_patch"}
                                          : v.ahead ? std::vector<std::string>{"lookup_copy"}
                                                    : std::vector<std::string>{};
  for (int m = 0; m < n; ++m) {
    Task& t = b->collective(n > 1 ? mb("emb_a2a_fwd", m) : "emb_a2a_fwd", CollectiveOp::kAllToAll, v.emb / n, v.group,
                            "emb_a2a_fwd", a2a_fwd_deps, a2a_fwd_prev);
    skew(&t, share, s.exact_skew);
    if (n > 1) t.micro_batch = m;
  }
  for (int m = 0; m < n; ++m) {
    const std::string suffix = n > 1 ? "[" + std::to_string(m) + "]" : "";
    std::vector<std::string> fwd_prev =
        m == 0 ? std::vector<std::string>{"dense_allreduce"} : std::vector<std::string>{};
    Task& fwd =
        b->add("dense_fwd" + suffix, TaskKind::kCompute, kCompute, "dense_fwd", {"emb_a2a_fwd" + suffix}, fwd_prev);
    fwd.flops = s.dense_forward_flops / n;
    Task& bwd = b->add("dense_bwd" + suffix, TaskKind::kCompute, kCompute, "dense_bwd", {"dense_fwd" + suffix});
    bwd.flops = 2 * s.dense_forward_flops / n;
    if (n > 1) fwd.micro_batch = bwd.micro_batch = m;
  }
  std::vector<std::string> all_grads;
  for (int m = 0; m < n; ++m) {
    const std::string suffix = n > 1 ? "[" + std::to_string(m) + "]" : "";
    Task& t = b->collective("emb_a2a_bwd" + suffix, CollectiveOp::kAllToAll, v.emb / n, v.group, "emb_a2a_bwd",
                            {"dense_bwd" + suffix});
    skew(&t, share, s.exact_skew);
    if (n > 1) t.micro_batch = m;
    all_grads.push_back("emb_a2a_bwd" + suffix);
  }
  return all_grads;
}

// 2dsp: the shard's replicas (one per group, G workers apart) average the rows they changed, as TorchRec's
// DMPCollection.sync all-reduces its shards' weights across the replica groups; the rows come from and go
// back to host memory, where the tables live.
// Reading the changed rows from host memory is the lookup's row gather (one list: the worker's own), and
// writing the averages back is the update's row scatter: they are priced as those (lookup_gather,
// emb_update), so that the twin prices one operation one way.
void add_replica_sync(const StepSizes& s, Builder* b) {
  Task& gather = b->add("replica_gather", TaskKind::kLookup, kLookup, "lookup_gather", {"emb_update"});
  gather.bytes = s.replica_sync_rows * s.row_bytes;
  gather.requests = 1;
  Task& sync = b->collective("replica_allreduce", CollectiveOp::kAllReduce, s.replica_sync_bytes, 0,
                             "replica_allreduce", {"replica_gather"});
  sync.collective->group.kind = models::GroupSpec::Kind::kStride;
  sync.collective->group.size = s.sharding_group;
  b->add("replica_write", TaskKind::kHost, kUpdate, "emb_update", {"replica_allreduce"}).bytes =
      s.replica_sync_rows * s.row_bytes;
}

}  // namespace

std::string_view variant_name(Variant variant) {
  for (const auto& v : kVariants) {
    if (v.variant == variant) return v.name;
  }
  return "?";
}

std::optional<Variant> variant_from_name(std::string_view name) {
  for (const auto& v : kVariants) {
    if (v.name == name) return v.variant;
  }
  return std::nullopt;
}

std::string variant_list() {
  std::string out;
  for (const auto& v : kVariants)
    out += (out.empty() ? "" : ", ") + std::string(v.name);
  return out;
}

std::vector<Variant> all_variants() {
  std::vector<Variant> out;
  for (const auto& v : kVariants)
    out.push_back(v.variant);
  return out;
}

StatusOr<models::Plan> build_plan(Variant variant, const StepSizes& s, int micro_batches) {
  const std::string where = "nestpipe/" + std::string(variant_name(variant)) + ": ";
  CT_RETURN_IF_ERROR(check_step_sizes(variant, s, micro_batches, where));
  const VariantShape v = shape_of(variant, s, micro_batches);
  Builder b(variant);
  add_input_and_rows(v, s, &b);
  std::vector<std::string> all_grads = add_micro_batches(v, s, &b);
  // One update per batch: the frozen window ends here.
  if (variant == Variant::kSemiSync) all_grads.push_back("lookup_gather");
  b.add("emb_update", TaskKind::kHost, kUpdate, "emb_update", all_grads).bytes = v.rows * s.row_bytes;
  b.collective("dense_allreduce", CollectiveOp::kAllReduce, s.dense_param_bytes, 0, "dense_allreduce",
               {v.n > 1 ? mb("dense_bwd", v.n - 1) : "dense_bwd"});
  if (v.replica_sync) add_replica_sync(s, &b);
  if (v.dbp) {
    // Swaps the buffers and refreshes batch i+1's rows that batch i updated.
    b.add("dbp_patch", TaskKind::kCopy, kCopy, "dbp_patch", {"lookup_copy", "emb_update"}).bytes =
        s.patch_rows * s.row_bytes;
    b.task("dbp_patch").batch_offset = 1;
  }
  return b.finish();
}

}  // namespace clustertwin::models::nestpipe
