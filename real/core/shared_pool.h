#pragma once

// A pool of slots in POSIX shared memory on one machine, addressable by any
// process that opens it by name, whichever process produced a slot. FlowTrain's
// memory pool is one (encoder workers put each sample's projected embeddings
// under its key (step, sample); backbone workers take the samples the packer
// assigned them, by key; the gradients flow back through a second pool), and
// FlexMARL's payload store keeps large messages in them. No torch: a slot
// holds bytes.
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
//
// put_slot and take_slot are the same protocol with the copy left to the
// caller: data kept beside the pool (a GPU arena, pool_transfer.h) moves
// while the slot is claimed, and the shared memory carries only the control
// words.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::real {

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
  /// put with the copy left to `fill`: claims a free slot under `key` for
  /// `bytes` bytes, calls `fill(slot)`, which must have written them (where
  /// the caller keeps slot `slot`'s data) when it returns, then marks the
  /// slot ready. A fill that fails frees the slot again and its status is
  /// returned. Refuses and waits as put does.
  Status put_slot(uint64_t key, size_t bytes, double timeout_s, const std::function<Status(int slot)>& fill);
  /// take_any with the copy left to `drain`: claims a ready slot holding a
  /// key of `wanted` (sorted), calls `drain(slot, key, bytes)`, which must
  /// have read the slot's `bytes` bytes when it returns, then frees the slot. A
  /// drain that fails leaves the slot ready (for another reader) and its
  /// status is returned.
  StatusOr<Taken> take_slot(const std::vector<uint64_t>& wanted, double timeout_s,
                            const std::function<Status(int slot, uint64_t key, size_t bytes)>& drain);
  /// Slot `slot`'s bytes in this process's mapping of the shared memory.
  void* slot_data(int slot) const;
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

}  // namespace clustertwin::real
