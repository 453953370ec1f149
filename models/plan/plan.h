#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustertwin::models {

/// What a task does; it decides which executor resource runs it and the
/// trace category it is recorded under.
enum class TaskKind {
  kCompute,     // device arithmetic                       -> trace "compute"
  kCollective,  // communication between ranks             -> trace "comm"
  kCopy,        // a transfer within a rank (host <-> device) -> trace "copy"
  kLookup,      // embedding retrieval from host memory    -> trace "lookup"
  kHost,        // CPU-side framework work                 -> trace "host"
};

enum class CollectiveOp { kAllReduce, kAllToAll, kAllGather, kReduceScatter, kBroadcast, kSend, kRecv };

/// How a collective is carried out; kAuto lets the executor choose.
enum class Algorithm {
  kAuto,
  kRing,
  kTree,             // binary tree reduce then broadcast (all-reduce), binomial tree (broadcast)
  kHalvingDoubling,  // recursive halving (reduce-scatter) then doubling (all-gather)
  kHierarchical,     // intra-node first, then across nodes, then intra-node
  kDirect,           // every pair at once (all-to-all), or straight to/from the root
};

/// The ranks a collective spans, relative to the rank that runs it.
///
///   world       all ranks
///   node        the ranks of the caller's node (devices_per_node consecutive ranks)
///   block(G)    consecutive blocks of G ranks: {G*floor(r/G), ..., G*floor(r/G)+G-1}
///   stride(G)   ranks equal modulo G: {r mod G, r mod G + G, ...} (one "rail" when G = devices per node)
///   stride(G) within S: the same inside each block of S consecutive ranks
///               (a data-parallel group inside one pipeline stage's ranks)
struct GroupSpec {
  enum class Kind { kWorld, kNode, kBlock, kStride };
  Kind kind = Kind::kWorld;
  int size = 0;  // G for kBlock and kStride
  int span = 0;  // kStride: S, a multiple of G; 0: the world
  bool operator==(const GroupSpec&) const = default;
};

/// The communication a kCollective task performs.
///
/// Sizes follow nccl-tests (../shared/papers/simulators.md): a task's `bytes`
/// is the per-rank buffer for all-reduce, broadcast and send/recv, the total
/// a rank sends for all-to-all (bytes / n to each member unless
/// `split_bytes` says otherwise), and the total size (per-rank part x n) for
/// all-gather and reduce-scatter.
struct Collective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  GroupSpec group;
  Algorithm algorithm = Algorithm::kAuto;
  int root = 0;         // broadcast: the root's index within the group
  int peer_offset = 0;  // send/recv: the peer is rank + peer_offset (mod world size), within the group
  int tag = 0;          // send/recv: a send matches the recv with the same tag at its peer
  /// Uneven all-to-all: bytes sent to each group member, by index in the
  /// group; empty means uniform. Sums to the task's bytes.
  std::vector<int64_t> split_bytes;
  bool operator==(const Collective&) const = default;
};

/// A half-open range of ranks [begin, end); end -1 means the world size.
struct RankRange {
  int begin = 0;
  int end = -1;
  bool operator==(const RankRange&) const = default;
};

/// One unit of a worker's step: the node of the plan DAG.
struct Task {
  int id = 0;  // index in Plan::tasks
  std::string name;
  TaskKind kind = TaskKind::kCompute;
  int stream = 0;  // index in Plan::streams; tasks of a stream run one at a time, in plan order
  double flops = 0;
  int64_t bytes = 0;
  std::string cost_key;                  // the cost-table entry that prices it; "" to use the roofline
  std::string dtype;                     // for the roofline's peak ("bf16", "fp32", ...); "" for the profile's default
  std::optional<Collective> collective;  // present exactly when kind is kCollective
  std::vector<int> deps;                 // tasks of the same step that must finish first
  std::vector<int> prev_step_deps;       // tasks of the previous step that must finish first
  int micro_batch = -1;                  // -1 when the task is not per micro-batch
  /// A pipeline stage that runs ahead: in step s the task works on the
  /// batch of step s + batch_offset (TorchRec's H2D of batch i+2 runs in
  /// step i: offset 2). Executors with real data use it to pick the batch.
  int batch_offset = 0;
  /// Separate requests the task serves, for a cost key's per-request term
  /// (an owner's lookup serving each of W requesters on its own: W).
  int64_t requests = 0;
  /// Bytes of parameter gradients that are complete when the task ends (a
  /// plan derived from a training trace: the torch.autograd.AccumulateGrad
  /// calls after the task's launch). What data parallelism all-reduces, and
  /// when it may start (models/plan/data_parallel.h). 0: none.
  int64_t grad_bytes = 0;
  /// Device operations (kernels, copies) its host thread launches for it. On
  /// a profile with a GPU node's host (cluster::HostSide) the task is then
  /// launched (launches x the host's launch cost on its cores) and queued on
  /// its device stream, and the stream's host thread goes on launching
  /// without waiting for it; 0: the thread runs the task itself and waits
  /// for it (the executors' tasks, which synchronise).
  int launches = 0;
  /// The host thread waits for the task's end before it launches the next
  /// (`.item()`, a synchronising copy, cudaStreamSynchronize).
  bool sync = false;
  std::vector<RankRange> ranks;  // ranks that run the task; empty means every rank
  bool operator==(const Task&) const = default;
};

/// The DAG of tasks one worker performs for one training step (or one
/// steady-state window of a pipeline) of one system variant.
///
/// Pipelining is nothing but dependencies and streams: a baseline and its
/// pipelined variant differ only in their plans. Every rank runs the same
/// plan (filtered by Task::ranks); steps repeat it, with `prev_step_deps`
/// linking a step to the one before.
struct Plan {
  std::string system;                // "nestpipe", "synthetic", ...
  std::string variant;               // "torchrec", "dbp", ...
  std::vector<std::string> streams;  // "compute", "comm", ...
  std::vector<Task> tasks;
  bool operator==(const Plan&) const = default;
};

std::string_view task_kind_name(TaskKind kind);  // "compute", "collective", "copy", "lookup", "host"
std::optional<TaskKind> task_kind_from_name(std::string_view name);
std::string_view collective_op_name(
    CollectiveOp op);  // "allreduce", "alltoall", "allgather", "reducescatter", "broadcast", "send", "recv"
std::optional<CollectiveOp> collective_op_from_name(std::string_view name);
std::string_view algorithm_name(
    Algorithm algorithm);  // "auto", "ring", "tree", "halving_doubling", "hierarchical", "direct"
std::optional<Algorithm> algorithm_from_name(std::string_view name);

/// True when `rank` runs `task` in a world of `world_size` ranks.
bool runs_on(const Task& task, int rank, int world_size);

/// The members of the group `spec` seen from `rank`, ascending. Requires a
/// valid spec for the world (see validate_plan).
std::vector<int> group_members(const GroupSpec& spec, int rank, int world_size, int devices_per_node);

/// group_members(...).front() and .size(), without building the list (the
/// twin asks for them at every rank's arrival and every event, where a world
/// group of 65,536 ranks would be a list each time).
int group_first(const GroupSpec& spec, int rank, int world_size, int devices_per_node);
int group_size(const GroupSpec& spec, int rank, int world_size, int devices_per_node);

}  // namespace clustertwin::models
