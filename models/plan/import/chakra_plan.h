#pragma once

// A plan to Chakra execution traces (one .et per rank, ASTRA-sim's workload
// format) and back: `clustertwin trace export-chakra` / `import-chakra`.
//
//   plan task                      Chakra node
//   compute                        COMP_NODE, is_cpu_op false, num_ops = flops, tensor_size = bytes
//   host                           COMP_NODE, is_cpu_op true
//   copy                           MEM_LOAD_NODE, tensor_size = bytes  (MEM_STORE_NODE reads as a copy too)
//   lookup                         MEM_LOAD_NODE with ct_kind "lookup"
//   allreduce, allgather,          COMM_COLL_NODE, comm_type ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER,
//   reducescatter, alltoall,         ALL_TO_ALL, BROADCAST; comm_size = bytes (nccl-tests' convention,
//   broadcast                        which ASTRA-sim's collectives share); pg_name for a group other than the world
//   send / recv                    COMM_SEND_NODE / COMM_RECV_NODE, comm_src, comm_dst, comm_tag, comm_size
//   deps                           data_deps
//   the stream                     attribute `stream` (its index; the names in the metadata's ct_streams)
//   the time it takes              duration_micros, on the platform given to the export
//
// What Chakra has no field for travels in attributes named ct_* (cost key,
// dtype, algorithm, exact group, broadcast root, split bytes, the previous
// step's deps, micro-batch, batch offset, requests, gradient bytes), which
// other readers ignore; so export then import gives back the same plan.
// A file written elsewhere has none of them: see ChakraImportOptions for how
// its nodes are priced and placed on streams.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"
#include "traces/chakra/chakra_trace.h"

namespace clustertwin::models {

/// The time a task takes on rank `rank` (seconds), for duration_micros;
/// nullopt where the network decides (a collective without a cost of its own).
using ChakraTaskSeconds = std::function<StatusOr<std::optional<double>>(const Task& task, int rank)>;

struct ChakraExportOptions {
  int world_size = 1;
  int devices_per_node = 1;  // the members of a node group
  std::string platform;      // recorded in each file's metadata (ct_platform)
};

/// One file per rank, and the process groups their pg_name attributes name
/// (ASTRA-sim's communicator-group file: id -> member ranks).
struct ChakraExport {
  std::vector<traces::chakra::EtFile> ranks;
  std::map<int, std::vector<int>> comm_groups;
};

/// The Chakra graphs of `plan` on each of `options.world_size` ranks. Node
/// ids are task ids. InvalidArgument, naming `name`, for a plan that does
/// not fit the world (validate_plan_for_world) or a task `seconds` rejects.
StatusOr<ChakraExport> plan_to_chakra(const Plan& plan, const std::string& name, const ChakraExportOptions& options,
                                      const ChakraTaskSeconds& seconds);

/// How a compute node of a file written elsewhere is priced when it has both
/// a duration and a FLOP count.
enum class ChakraComputeCost {
  kDuration,  // duration_micros (what was measured); num_ops by the roofline where the duration is 0
  kFlops,     // num_ops by the platform's roofline; duration_micros where num_ops is 0
};

struct ChakraImportOptions {
  ChakraComputeCost compute_cost = ChakraComputeCost::kDuration;
  /// Also order nodes by ctrl_deps. Off by default: Chakra's feeder and
  /// ASTRA-sim order by data_deps alone, and the PyTorch converter puts an
  /// operator's caller in ctrl_deps, not something it waits for.
  bool ctrl_deps = false;
  /// Members of each process group by pg_name (ASTRA-sim's communicator-group
  /// file). Groups the PyTorch converter records in a METADATA_NODE
  /// ("process_group:init") are added where this has none of that name. A
  /// collective whose pg_name is in neither spans the world.
  std::map<std::string, std::vector<int>> comm_groups;
};

struct ChakraInput {
  std::string path;  // for messages, and the rank when every name ends in .<rank>.et
  traces::chakra::EtFile file;
};

struct ChakraImport {
  Plan plan;
  int world_size = 0;
  std::vector<int> file_rank;  // the rank of each input, in input order
  /// Tasks priced by their duration_micros: cost key -> seconds (a profile's
  /// latency; the key is the task's name).
  std::map<std::string, double> durations;
  int64_t nodes = 0;                 // nodes read, all files
  int64_t by_duration = 0;           // compute and host tasks priced by duration_micros (per distinct task)
  int64_t by_flops = 0;              // compute tasks priced by num_ops on the platform's roofline
  int64_t skipped = 0;               // METADATA_NODE and INVALID_NODE nodes, which do no work
  int64_t world_groups = 0;          // collectives whose pg_name is not in the communicator groups: the world
  int64_t groups_from_metadata = 0;  // process groups read from METADATA_NODEs (the PyTorch converter's)
  int64_t ctrl_deps_ignored = 0;
  std::string exported_on;  // our export's platform (ct_platform), whose costs the cost keys name; or ""
};

/// A plan from one file per rank. Ranks: from names ending in .<rank>.et
/// when every input has one and they are 0..n-1, else the input order.
/// Nodes that are the same on several ranks (id, name, type, sizes, deps)
/// become one task run by those ranks. InvalidArgument, one line naming the
/// file, the node id and the field or type: an unsupported node type or
/// collective, a dependency on a node the file lacks, a cycle, a bad peer.
StatusOr<ChakraImport> plan_from_chakra(const std::vector<ChakraInput>& inputs, const ChakraImportOptions& options);

/// ASTRA-sim's communicator-group file: {"1": [0, 1], "2": [2, 3]}.
StatusOr<std::map<std::string, std::vector<int>>> parse_comm_groups(const std::string& json_text,
                                                                    const std::string& name);
std::string comm_groups_json(const std::map<int, std::vector<int>>& groups);

}  // namespace clustertwin::models
