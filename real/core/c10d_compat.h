#pragma once

// The one place where the c10d API of libtorch 1.13 (Debian, CPU) and 2.x
// (GPU machines) differ for us: store and process-group construction, and
// waiting on work. Everything else in real/ calls these.
//
// 1.13: ProcessGroupGloo and ProcessGroupNCCL derive from c10d::ProcessGroup.
// 2.x:  they derive from c10d::Backend, which a c10d::ProcessGroup wraps
//       (one backend per device type). A Backend has the same collective
//       methods with the same signatures as 1.13's ProcessGroup, so a group
//       here is the backend itself: no wrapper, no dispatch on device type.

#include <torch/version.h>

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace clustertwin::real::compat {

using StorePtr = c10::intrusive_ptr<c10d::Store>;
#if TORCH_VERSION_MAJOR >= 2
using GroupPtr = c10::intrusive_ptr<c10d::Backend>;
#else
using GroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;
#endif
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

/// A TCPStore at addr:port; rank 0 serves it. Waits up to `timeout` for all
/// `world_size` ranks to connect.
StorePtr make_tcp_store(const std::string& addr, int port, int rank, int world_size, std::chrono::milliseconds timeout);

/// `store` with every key prefixed, so that several groups share one store.
StorePtr make_prefix_store(const std::string& prefix, const StorePtr& store);

/// A Gloo process group over loopback or the host's address.
GroupPtr make_gloo_group(const StorePtr& store, int rank, int size, std::chrono::milliseconds timeout,
                         const std::string& hostname);

/// Whether this libtorch can make NCCL groups (a CUDA build with c10d NCCL).
bool nccl_available();

/// An NCCL process group; only where nccl_available() (else throws).
GroupPtr make_nccl_group(const StorePtr& store, int rank, int size, std::chrono::milliseconds timeout);

/// Waits for `work`; rethrows its exception (c10::Error) on failure.
void wait(const WorkPtr& work, std::chrono::milliseconds timeout);

}  // namespace clustertwin::real::compat
