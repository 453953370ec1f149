#include "real/core/shared_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace clustertwin::real {
namespace {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the slots' control words must be lock-free");

// A control word: state (bits 62-63), generation (bits 48-61), key (bits 0-47).
enum State : uint64_t { kFree = 0, kWriting = 1, kReady = 2, kReading = 3 };
constexpr uint64_t kKeyMask = (uint64_t{1} << 48) - 1;
constexpr uint64_t kGenMask = (uint64_t{1} << 14) - 1;

uint64_t word(State s, uint64_t gen, uint64_t key) {
  return (static_cast<uint64_t>(s) << 62) | ((gen & kGenMask) << 48) | (key & kKeyMask);
}
State state_of(uint64_t w) {
  return static_cast<State>(w >> 62);
}
uint64_t gen_of(uint64_t w) {
  return (w >> 48) & kGenMask;
}
uint64_t key_of(uint64_t w) {
  return w & kKeyMask;
}

constexpr uint64_t kMagic = 0x6374706f6f6c3031ull;  // "ctpool01"

struct Slot {
  std::atomic<uint64_t> control;
  uint64_t bytes;
};

// Waits with growing pauses (a slot's turnaround is microseconds to milliseconds).
class Backoff {
 public:
  explicit Backoff(double timeout_s)
      : deadline_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(timeout_s))) {}
  bool expired() const { return std::chrono::steady_clock::now() > deadline_; }
  void pause() {
    if (spins_ < 64) {
      ++spins_;
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    sleep_us_ = std::min(sleep_us_ * 2, 1000);
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  int spins_ = 0;
  int sleep_us_ = 10;
};

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

struct SharedPool::Header {
  uint64_t magic;
  uint64_t slots;
  uint64_t slot_bytes;
  // Slots follow, then the data: slot i's bytes at data + i * slot_bytes.
};

namespace {

size_t slots_offset() {
  return (sizeof(uint64_t) * 3 + 63) / 64 * 64;
}
size_t data_offset(uint64_t slots) {
  return (slots_offset() + slots * sizeof(Slot) + 63) / 64 * 64;
}

}  // namespace

uint64_t pool_key(int64_t step, int64_t sample) {
  return (static_cast<uint64_t>(step) & 0xffff) << 32 | (static_cast<uint64_t>(sample) & 0xffffffffull);
}

SharedPool::SharedPool(std::string name, void* base, size_t length, bool owner)
    : name_(std::move(name)), base_(base), length_(length), owner_(owner) {}

SharedPool::~SharedPool() {
  if (base_ != nullptr) munmap(base_, length_);
  if (owner_) shm_unlink(name_.c_str());
}

SharedPool::Header* SharedPool::header() const {
  return static_cast<Header*>(base_);
}
int SharedPool::slots() const {
  return static_cast<int>(header()->slots);
}
size_t SharedPool::slot_bytes() const {
  return header()->slot_bytes;
}

StatusOr<std::unique_ptr<SharedPool>> SharedPool::create(const std::string& name, int slots, size_t slot_bytes) {
  if (slots < 1 || slot_bytes < 1) {
    return Status::invalid_argument("memory pool '" + name + "': " + std::to_string(slots) + " slots of " +
                                    std::to_string(slot_bytes) + " bytes (need at least one slot of one byte)");
  }
  const size_t length = data_offset(static_cast<uint64_t>(slots)) + static_cast<size_t>(slots) * slot_bytes;
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Status::internal("memory pool '" + name + "': shm_open: " + errno_text());
  if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
    const std::string why = errno_text();
    close(fd);
    shm_unlink(name.c_str());
    return Status::internal("memory pool '" + name + "': " + std::to_string(length) + " bytes: " + why);
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    return Status::internal("memory pool '" + name + "': mmap: " + errno_text());
  }
  auto* h = static_cast<Header*>(base);
  h->slots = static_cast<uint64_t>(slots);
  h->slot_bytes = slot_bytes;
  auto* slot = reinterpret_cast<Slot*>(static_cast<char*>(base) + slots_offset());
  for (int i = 0; i < slots; ++i) {
    new (&slot[i].control) std::atomic<uint64_t>(word(kFree, 0, 0));
    slot[i].bytes = 0;
  }
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  return std::unique_ptr<SharedPool>(new SharedPool(name, base, length, true));
}

StatusOr<std::unique_ptr<SharedPool>> SharedPool::open(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return Status::not_found("memory pool '" + name + "': " + errno_text());
  Header h{};
  if (pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || h.magic != kMagic) {
    close(fd);
    return Status::invalid_argument("memory pool '" + name + "': not a clustertwin pool (or not initialised yet)");
  }
  const size_t length = data_offset(h.slots) + h.slots * h.slot_bytes;
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return Status::internal("memory pool '" + name + "': mmap: " + errno_text());
  return std::unique_ptr<SharedPool>(new SharedPool(name, base, length, false));
}

void* SharedPool::slot_data(int slot) const {
  return static_cast<char*>(base_) + data_offset(header()->slots) + static_cast<size_t>(slot) * header()->slot_bytes;
}

Status SharedPool::put(uint64_t key, const void* data, size_t bytes, double timeout_s) {
  return put_slot(key, bytes, timeout_s, [&](int slot) {
    std::memcpy(slot_data(slot), data, bytes);
    return Status::ok();
  });
}

Status SharedPool::put_slot(uint64_t key, size_t bytes, double timeout_s, const std::function<Status(int slot)>& fill) {
  Header* h = header();
  if (bytes > h->slot_bytes) {
    return Status::invalid_argument("memory pool '" + name_ + "': " + std::to_string(bytes) + " bytes for a slot of " +
                                    std::to_string(h->slot_bytes));
  }
  auto* slot = reinterpret_cast<Slot*>(static_cast<char*>(base_) + slots_offset());
  key &= kKeyMask;
  Backoff wait(timeout_s);
  for (;;) {
    for (uint64_t i = 0; i < h->slots; ++i) {
      uint64_t w = slot[i].control.load(std::memory_order_acquire);
      if (state_of(w) != kFree && key_of(w) == key) {
        return Status::invalid_argument("memory pool '" + name_ + "': key " + std::to_string(key) +
                                        " is already in the pool");
      }
    }
    for (uint64_t i = 0; i < h->slots; ++i) {
      uint64_t w = slot[i].control.load(std::memory_order_acquire);
      if (state_of(w) != kFree) continue;
      if (!slot[i].control.compare_exchange_strong(w, word(kWriting, gen_of(w) + 1, key), std::memory_order_acq_rel))
        continue;
      const Status filled = fill(static_cast<int>(i));
      if (!filled.is_ok()) {
        slot[i].control.store(word(kFree, gen_of(w) + 2, 0), std::memory_order_release);
        return filled;
      }
      slot[i].bytes = bytes;
      slot[i].control.store(word(kReady, gen_of(w) + 2, key), std::memory_order_release);
      return Status::ok();
    }
    if (wait.expired()) {
      return Status::internal("memory pool '" + name_ + "': put of key " + std::to_string(key) +
                              " timed out: every slot is full (no consumer took one)");
    }
    wait.pause();
  }
}

Status SharedPool::take(uint64_t key, void* out, size_t bytes, double timeout_s) {
  auto taken = take_any({key & kKeyMask}, out, bytes, timeout_s);
  if (!taken.is_ok()) return taken.status();
  if (taken->bytes != bytes) {
    return Status::invalid_argument("memory pool '" + name_ + "': key " + std::to_string(key) + " held " +
                                    std::to_string(taken->bytes) + " bytes, " + std::to_string(bytes) + " asked");
  }
  return Status::ok();
}

StatusOr<SharedPool::Taken> SharedPool::take_any(const std::vector<uint64_t>& wanted, void* out, size_t capacity,
                                                 double timeout_s) {
  return take_slot(wanted, timeout_s, [&](int slot, uint64_t key, size_t bytes) {
    if (bytes > capacity) {
      return Status::invalid_argument("memory pool '" + name_ + "': key " + std::to_string(key) + " holds " +
                                      std::to_string(bytes) + " bytes, more than the " + std::to_string(capacity) +
                                      " the reader has room for");
    }
    std::memcpy(out, slot_data(slot), bytes);
    return Status::ok();
  });
}

StatusOr<SharedPool::Taken> SharedPool::take_slot(
    const std::vector<uint64_t>& wanted, double timeout_s,
    const std::function<Status(int slot, uint64_t key, size_t bytes)>& drain) {
  Header* h = header();
  auto* slot = reinterpret_cast<Slot*>(static_cast<char*>(base_) + slots_offset());
  Backoff wait(timeout_s);
  for (;;) {
    for (uint64_t i = 0; i < h->slots; ++i) {
      uint64_t w = slot[i].control.load(std::memory_order_acquire);
      if (state_of(w) != kReady || !std::binary_search(wanted.begin(), wanted.end(), key_of(w))) continue;
      if (!slot[i].control.compare_exchange_strong(w, word(kReading, gen_of(w) + 1, key_of(w)),
                                                   std::memory_order_acq_rel))
        continue;
      const size_t bytes = slot[i].bytes;
      const Status drained = drain(static_cast<int>(i), key_of(w), bytes);
      if (!drained.is_ok()) {
        slot[i].control.store(word(kReady, gen_of(w) + 2, key_of(w)), std::memory_order_release);  // left for another
        return drained;
      }
      slot[i].control.store(word(kFree, gen_of(w) + 2, 0), std::memory_order_release);
      return Taken{key_of(w), bytes};
    }
    if (wait.expired()) {
      return Status::internal("memory pool '" + name_ + "': take of " + std::to_string(wanted.size()) +
                              " wanted key(s) timed out: no producer put one");
    }
    wait.pause();
  }
}

int SharedPool::ready() const {
  auto* slot = reinterpret_cast<Slot*>(static_cast<char*>(base_) + slots_offset());
  int n = 0;
  for (uint64_t i = 0; i < header()->slots; ++i)
    n += state_of(slot[i].control.load(std::memory_order_acquire)) == kReady;
  return n;
}

}  // namespace clustertwin::real
