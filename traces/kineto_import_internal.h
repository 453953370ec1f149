#pragma once

// The Kineto import's parts (internal to traces/), one concept per file:
//
//   kineto_c10d.cpp     what c10d's args on an event say: a collective's
//                       group, a send's or recv's peer, a message's bytes,
//                       the collective operator on the host
//   kineto_scan.cpp     pass 1: what a file holds (streams, thread names,
//                       launches, operators, gradients), its rank and our
//                       streams
//   kineto_convert.cpp  pass 2: one Kineto event as one of ours
//   kineto_import.cpp   the two passes (import_kineto)

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "traces/event.h"
#include "traces/kineto_import_options.h"
#include "traces/kineto_reader.h"

namespace clustertwin::traces::detail {

using kineto::FileHeader;
using kineto::KinetoEvent;
using kineto::Micros;

// A (pid, tid) of one rank. GPU streams sort before CPU threads.
struct StreamKey {
  int kind = 0;     // 0: GPU (pid = device, tid = CUDA stream); 1: CPU (pid = process, tid = thread)
  int64_t pid = 0;  // device or process
  int64_t tid = 0;  // stream or thread
  auto operator<=>(const StreamKey&) const = default;
};

// The category of a complete event we import, or nothing for the rest.
std::optional<Category> imported_category(const KinetoEvent& e, const KinetoImportOptions& options);

StreamKey stream_key(const KinetoEvent& e);

// A runtime call that launched GPU work, by its correlation id.
struct Launch {
  int64_t tid = 0;
  Micros ts;
  double dur = 0;
};

// Where a collective's group and a send's or recv's peer lie, as c10d's args say (kineto_reader.h).
struct GroupArgs {
  std::optional<int64_t> rank, dst, src, start, stride, size;
  std::vector<int64_t> ranks;

  static GroupArgs of(const KinetoEvent& e);
  // The group's global ranks as start + i x stride: from its rank list when that is evenly spaced, else from
  // "Global rank start" and "Global rank stride".
  std::optional<std::pair<int64_t, int64_t>> layout() const;
  // The global rank of a send's destination or a recv's source: "Dst Rank" / "Src Rank", else "Rank" (a rank
  // of the group) through the group's layout, or as it is when the group is the whole world.
  std::optional<int64_t> peer(const std::string& collective, int64_t world_size) const;
};

// A c10d collective operator on a host thread.
struct CommOperator {
  Micros ts;
  double dur = 0;
  std::string collective;
  std::optional<int64_t> bytes, group_size;
  GroupArgs group;
};

// A CPU operator's first input, in bytes ("Input Dims" x "Input type").
std::optional<int64_t> first_input_bytes(const KinetoEvent& e);

// A collective's message as c10d records it ("In msg nelems" x "dtype").
std::optional<int64_t> message_bytes(const KinetoEvent& e);

// The collective and bytes a host operator says, if it is a c10d collective.
std::optional<CommOperator> comm_operator(const KinetoEvent& e);

// What the first pass learns of one input.
struct Input {
  std::string path;
  size_t position = 0;  // in the caller's list
  FileHeader header;
  int64_t rank = 0;
  std::optional<Micros> first_ts;  // earliest imported event, without the base
  std::set<StreamKey> streams;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;              // "ph": "M" thread_name
  std::map<StreamKey, int64_t> stream_ids;                                      // our tid
  std::map<int64_t, Launch> launches;                                           // correlation -> runtime call
  std::map<int64_t, std::vector<CommOperator>> comm_operators;                  // host thread -> by start
  std::map<int64_t, std::vector<std::pair<Micros, int64_t>>> accumulate_grads;  // host thread -> (start, bytes)
  std::map<int64_t, int64_t> grad_bytes;  // correlation -> gradient bytes its GPU work completed

  // The launch of a GPU event, if the file has it.
  const Launch* launch_of(const KinetoEvent& e) const;
  // The innermost c10d collective operator around `launch` on its thread; one with bytes first.
  const CommOperator* operator_around(const Launch& launch) const;
};

// Pass 1: header, streams, thread names and the earliest time of one file.
Status scan(Input* in, const KinetoImportOptions& options, KinetoImportStats* stats);

// Each AccumulateGrad's gradient goes to the last GPU work its thread launched before it: the kernel that
// computed the gradient (with zero_grad(set_to_none=True) AccumulateGrad launches nothing itself).
void credit_gradients(Input* in);

// Ranks from --rank, distributedInfo.rank or the position; no two alike.
Status assign_ranks(std::vector<Input>* inputs, const KinetoImportOptions& options, int* world_size);

// Our streams: one per (pid, tid) of a rank, named after it. Ranks share a
// stream when their names agree ("stream 7" on every GPU), so the list is the
// union of names in the order GPU (device, stream), then CPU (pid, tid).
std::vector<std::string> assign_streams(std::vector<Input>* inputs);

// One Kineto event of `in` as one of ours, on our stream `stream`, its time from `origin`; a comm kernel
// takes what its launch's c10d operator says where its own args do not say it.
Event convert(const KinetoEvent& e, Category category, const Input& in, int64_t stream, const Micros& origin,
              int64_t world_size);

}  // namespace clustertwin::traces::detail
