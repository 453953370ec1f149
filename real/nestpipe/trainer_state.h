#pragma once

// The per-batch state of the trainer (trainer.h), shared by its two source
// files. Each field is written by one task and read by tasks that depend on
// it in the plan, so the fields need no lock of their own; the map that
// holds the states does (Trainer::state). The trainer's header only names
// these structs, so this one needs nothing of it.

#include <ATen/ATen.h>

#include <vector>

#include "real/nestpipe/batch_source.h"
#include "real/nestpipe/exchange.h"

namespace clustertwin::real::nestpipe {

/// The requester's view of one micro-batch.
// Index tensors marked "device" are on the trainer's device (the same
// tensors as their host twins on the CPU).
struct MicroState {
  at::Tensor samples;   // [S/N] int64 (device): the batch's sample indices, in order
  at::Tensor inverse;   // [S/N * F] int64 (device): index of each lookup in `keys`' order
  at::Tensor in_batch;  // [U_m] int64 (device): index of each unique key in the batch list
  at::Tensor rows;      // [U_m, d]: received rows (fwp, nestpipe)
  at::Tensor leaf;      // [U_m, d] requires grad: the micro-batch's embedding rows
  at::Tensor loss;      // scalar, with its graph until dense_bwd
  at::Tensor grad;      // [U_m, d]: g_m, the gradient of leaf
};

/// One batch on this rank, requester and owner side.
struct BatchState {
  // h2d
  HostBatch host;
  at::Tensor dense;   // [S, dense features] on the device
  at::Tensor labels;  // [S]
  // requester (key_a2a, emb_a2a_fwd, dense_*)
  RequesterExchange requester;
  at::Tensor batch_rows;  // [U, d]: received rows (variants that do not split the All2All)
  std::vector<MicroState> micro;
  double loss = 0;
  // owner (key_a2a on)
  OwnerExchange owner;
  at::Tensor union_keys;                                      // [|U|] int64
  at::Tensor expected;                                        // [|U|] int64: versions the oracle expects
  std::vector<at::Tensor> requester_in_union;                 // [r] (the store's device)
  std::vector<std::vector<at::Tensor>> list_keys;             // [r][l]
  std::vector<std::vector<at::Tensor>> list_in_req;           // [r][l]: index in r's batch list
  std::vector<std::vector<at::Tensor>> list_in_union;         // [r][l]: index in union_keys
  std::vector<std::vector<at::Tensor>> list_in_req_device;    // [r][l]: list_in_req on the device
  std::vector<std::vector<at::Tensor>> list_in_union_device;  // [r][l]: list_in_union on the device
  std::vector<at::Tensor> host_rows, host_versions;           // [r] or [0] for the union
  std::vector<at::Tensor> device_rows;                        // [r] or [0] (not dbp/nestpipe: the DualBuffer)
  std::vector<at::Tensor> owner_acc;                          // [r]: acc_r over r's batch list
  int released = 0;
};

/// A 1-D int64 tensor holding `values`.
inline at::Tensor long_tensor(const std::vector<int64_t>& values) {
  return at::tensor(at::ArrayRef<int64_t>(values), at::kLong);
}

}  // namespace clustertwin::real::nestpipe
