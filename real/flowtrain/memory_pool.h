#pragma once

// FlowTrain's memory pool on one machine: slots in POSIX shared memory,
// addressable by any process that opens the pool by name, whichever process
// produced a slot. Encoder workers put each sample's projected embeddings
// under its key (step, sample); backbone workers take the samples the
// packer assigned them, by key; the gradients flow back through a second
// pool the same way. No torch: a slot holds bytes.
//
// Each slot's control word is one 64-bit atomic in the shared region:
// state (free, writing, ready, reading), the key, and a generation that
// changes on every transition, so a compare-and-swap claims exactly the
// ready slot a reader saw (no ABA when a slot is reused):
//
//   put   free -> writing (CAS), copy in, -> ready (release)
//   take  ready with the key -> reading (CAS), copy out, -> free (release)
//
// So no slot is read before its writer marked it ready, and none is
// overwritten before its reader freed it. A full pool is back-pressure:
// put waits for a free slot, up to its timeout.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/common/status.h"

namespace clustertwin::real::flowtrain {

/// The key of a sample's slot: step (16 bits) and sample (32 bits).
uint64_t pool_key(int64_t step, int64_t sample);

class SharedPool {
 public:
  /// Creates the pool `name` (a POSIX shared-memory name, "/ct_pool_x"):
  /// `slots` slots of `slot_bytes` bytes each. InvalidArgument for slots < 1
  /// or slot_bytes < 1; Internal when the system refuses the memory. The
  /// creator removes the name when it is destroyed.
  static StatusOr<std::unique_ptr<SharedPool>> create(const std::string& name, int slots, size_t slot_bytes);
  /// Opens a pool another process created. NotFound when there is none.
  static StatusOr<std::unique_ptr<SharedPool>> open(const std::string& name);
  ~SharedPool();
  SharedPool(const SharedPool&) = delete;
  SharedPool& operator=(const SharedPool&) = delete;

  int slots() const;
  size_t slot_bytes() const;

  /// Copies `bytes` bytes into a free slot under `key` and marks it ready;
  /// waits while the pool is full. InvalidArgument when the data is larger
  /// than a slot or the key is already in the pool (checked before claiming
  /// a slot: keys are unique by design); Internal ("timed out") after
  /// `timeout_s`.
  Status put(uint64_t key, const void* data, size_t bytes, double timeout_s);
  /// Waits for the slot of `key` to be ready, copies its bytes out (they
  /// must be `bytes` long) and frees the slot.
  Status take(uint64_t key, void* out, size_t bytes, double timeout_s);
  /// What take_any took.
  struct Taken {
    uint64_t key = 0;
    size_t bytes = 0;
  };
  /// Takes whichever ready slot holds a key of `wanted` (sorted), as a
  /// backbone worker takes the ready samples the packer gave it: copies its
  /// bytes (at most `capacity`) to `out` and frees the slot.
  StatusOr<Taken> take_any(const std::vector<uint64_t>& wanted, void* out, size_t capacity, double timeout_s);
  /// Slots ready now (not free, not being written or read).
  int ready() const;

 private:
  struct Header;
  SharedPool(std::string name, void* base, size_t length, bool owner);
  Header* header() const;

  std::string name_;
  void* base_ = nullptr;
  size_t length_ = 0;
  bool owner_ = false;
};

}  // namespace clustertwin::real::flowtrain
