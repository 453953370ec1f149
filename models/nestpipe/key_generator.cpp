#include "models/nestpipe/key_generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/check.h"

namespace clustertwin::models::nestpipe {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr int64_t kMaxVocabulary = int64_t{1} << 53;  // ranks must be exact doubles

// log1p(t) / t and expm1(t) / t, continued smoothly through t = 0, where the
// hat's integral and its inverse would otherwise divide zero by zero (s = 1).
double log1p_over(double t) {
  if (std::abs(t) > 1e-8) return std::log1p(t) / t;
  return 1.0 - t / 2.0 + t * t / 3.0;
}
double expm1_over(double t) {
  if (std::abs(t) > 1e-8) return std::expm1(t) / t;
  return 1.0 + t / 2.0 + t * t / 6.0;
}

// The seeds of one batch's random choices, derived from (seed, index, rank).
struct BatchStreams {
  uint64_t coin = 0;  // copy-or-fresh coin of each slot
  uint64_t draw = 0;  // fresh Zipf draw of each slot
  uint64_t a = 1;     // the copy bijection j -> a j + b mod T
  uint64_t b = 0;
};

BatchStreams batch_streams(uint64_t seed, int64_t index, int rank, uint64_t slots) {
  const uint64_t base = mix64(mix64(mix64(seed) ^ static_cast<uint64_t>(index)) ^ static_cast<uint64_t>(rank));
  BatchStreams streams;
  streams.coin = mix64(base + 1);
  streams.draw = mix64(base + 2);
  if (slots > 1) {
    streams.a = 1 + mix64(base + 3) % (slots - 1);
    while (std::gcd(streams.a, slots) != 1)
      streams.a = streams.a % (slots - 1) + 1;  // stays in [1, slots-1]; a = 1 always ends the search
    streams.b = mix64(base + 4) % slots;
  }
  return streams;
}

double to_unit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace

uint64_t SplitMix64::next_u64() {
  state_ += kGolden;
  return mix64(state_);
}

double SplitMix64::next_double() {
  return to_unit(next_u64());
}

// ---------------------------------------------------------------- ZipfSampler

ZipfSampler::ZipfSampler(int64_t n, double s) : n_(n), s_(s) {
  CT_CHECK(n >= 1 && n <= kMaxVocabulary) << "n = " << n;
  CT_CHECK(s > 0 && std::isfinite(s)) << "s = " << s;
  h_integral_x1_ = hat_integral(1.5) - 1.0;
  h_integral_n_ = hat_integral(static_cast<double>(n) + 0.5);
  squeeze_ = 2.0 - hat_integral_inverse(hat_integral(2.5) - hat(2.0));
}

double ZipfSampler::hat(double x) const {
  return std::exp(-s_ * std::log(x));
}

double ZipfSampler::hat_integral(double x) const {
  // (x^(1-s) - 1) / (1-s), which tends to log x as s -> 1.
  const double log_x = std::log(x);
  return expm1_over((1.0 - s_) * log_x) * log_x;
}

double ZipfSampler::hat_integral_inverse(double y) const {
  // Solves y = H(x): log x = log1p((1-s) y) / (1-s).
  double t = y * (1.0 - s_);
  if (t < -1.0) t = -1.0;  // rounding can step just past the pole at x = 0
  return std::exp(log1p_over(t) * y);
}

int64_t ZipfSampler::sample(SplitMix64& rng) const {
  for (;;) {
    const double u = h_integral_n_ + rng.next_double() * (h_integral_x1_ - h_integral_n_);
    const double x = hat_integral_inverse(u);
    int64_t k = static_cast<int64_t>(x + 0.5);
    k = std::clamp<int64_t>(k, 1, n_);
    const double kd = static_cast<double>(k);
    if (kd - x <= squeeze_ || u >= hat_integral(kd + 0.5) - hat(kd)) return k;
  }
}

double zipf_harmonic(int64_t n, double s) {
  CT_CHECK(n >= 1 && s > 0) << "n = " << n << ", s = " << s;
  constexpr int64_t kHead = int64_t{1} << 20;
  const int64_t head = std::min(n, kHead);
  double sum = 0.0;
  for (int64_t k = head; k >= 1; --k)  // smallest terms first: less rounding
    sum += std::pow(static_cast<double>(k), -s);
  if (n == head) return sum;
  // sum_{k=a}^{n} f(k) = int_a^n f + (f(a) + f(n)) / 2 + (f'(n) - f'(a)) / 12
  //                      - (f'''(n) - f'''(a)) / 720 + O(f^(5)(a)), f(x) = x^-s.
  const double a = static_cast<double>(head + 1), b = static_cast<double>(n);
  const double log_ratio = std::log(b / a);
  const double integral = std::pow(a, 1.0 - s) * log_ratio * expm1_over((1.0 - s) * log_ratio);
  auto f = [s](double x) { return std::pow(x, -s); };
  auto f1 = [s](double x) { return -s * std::pow(x, -s - 1.0); };
  auto f3 = [s](double x) { return -s * (s + 1.0) * (s + 2.0) * std::pow(x, -s - 3.0); };
  return sum + integral + (f(a) + f(b)) / 2.0 + (f1(b) - f1(a)) / 12.0 - (f3(b) - f3(a)) / 720.0;
}

// --------------------------------------------------------------- KeyGenerator

Status validate(const KeyGeneratorOptions& options) {
  std::ostringstream message;
  message << "key generator option ";
  if (options.vocabulary < 1 || options.vocabulary > kMaxVocabulary) {
    message << "'vocabulary': " << options.vocabulary << " is not in [1, 2^53]";
  } else if (!(options.zipf_exponent > 0 && options.zipf_exponent <= 100)) {
    message << "'zipf_exponent': " << options.zipf_exponent << " is not in (0, 100]";
  } else if (options.keys_per_sample < 1) {
    message << "'keys_per_sample': " << options.keys_per_sample << " is not >= 1";
  } else if (!(options.batch_overlap >= 0 && options.batch_overlap <= 1)) {
    message << "'batch_overlap': " << options.batch_overlap << " is not in [0, 1]";
  } else if (options.samples_per_user < 1) {
    message << "'samples_per_user': " << options.samples_per_user << " is not >= 1";
  } else if (!(options.user_shared_fraction >= 0 && options.user_shared_fraction <= 1)) {
    message << "'user_shared_fraction': " << options.user_shared_fraction << " is not in [0, 1]";
  } else {
    return Status::ok();
  }
  return Status::invalid_argument(message.str());
}

namespace {

int shared_keys(const KeyGeneratorOptions& options) {
  return options.samples_per_user > 1
             ? static_cast<int>(std::lround(options.user_shared_fraction * options.keys_per_sample))
             : 0;
}

// Users: deal the samples, in a permutation of their positions, g to a user; a user's first sample
// lends its history to the others.
void share_user_histories(const KeyGeneratorOptions& options, int64_t index, int rank,
                          std::vector<std::vector<int64_t>>* keys) {
  const int samples = static_cast<int>(keys->size());
  const int g = options.samples_per_user;
  const int shared = shared_keys(options);
  if (g <= 1 || shared <= 0 || samples <= 1) return;
  std::vector<int> order(static_cast<size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 rng(
      mix64(mix64(mix64(options.seed ^ 0x75736572ULL) ^ static_cast<uint64_t>(index)) ^ static_cast<uint64_t>(rank)));
  for (size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<size_t>(rng.next_u64() % (i + 1))]);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i % static_cast<size_t>(g) == 0) continue;
    const auto& first = (*keys)[static_cast<size_t>(order[i - i % static_cast<size_t>(g)])];
    std::copy(first.begin(), first.begin() + shared, (*keys)[static_cast<size_t>(order[i])].begin());
  }
}

}  // namespace

int64_t independent_draws(const KeyGeneratorOptions& options, int samples) {
  const int64_t shared = shared_keys(options);
  const int64_t users = (samples + options.samples_per_user - 1) / options.samples_per_user;
  return users * shared + int64_t{samples} * (options.keys_per_sample - shared);
}

double expected_micro_batch_draws(const KeyGeneratorOptions& options, int samples, int micro) {
  const double shared = shared_keys(options);
  const int g = options.samples_per_user;
  // P(none of a user's g positions among the micro-batch's `micro` of `samples`) = C(S-g, b) / C(S, b)
  // = prod_{i<g} (S-b-i)/(S-i); users of fewer samples (the last, when g does not divide S) are counted as full.
  double none = 1;
  for (int i = 0; i < g && none > 0; ++i)
    none *= std::max(0.0, static_cast<double>(samples - micro - i) / static_cast<double>(samples - i));
  const double users = static_cast<double>((samples + g - 1) / g);
  return users * (1 - none) * shared + static_cast<double>(micro) * (options.keys_per_sample - shared);
}

namespace {
const KeyGeneratorOptions& checked(const KeyGeneratorOptions& options) {
  const Status status = validate(options);
  CT_CHECK(status.is_ok()) << status.message();
  return options;
}
}  // namespace

KeyGenerator::KeyGenerator(const KeyGeneratorOptions& options)
    : options_(checked(options)), sampler_(options.vocabulary, options.zipf_exponent) {}

StatusOr<KeyGenerator> KeyGenerator::create(const KeyGeneratorOptions& options) {
  CT_RETURN_IF_ERROR(validate(options));
  return KeyGenerator(options);
}

std::vector<std::vector<int64_t>> KeyGenerator::batch(int64_t index, int rank, int samples) const {
  CT_CHECK(index >= 0 && rank >= 0 && samples >= 1)
      << "index " << index << ", rank " << rank << ", samples " << samples;
  const int kps = options_.keys_per_sample;
  const uint64_t slots = static_cast<uint64_t>(samples) * static_cast<uint64_t>(kps);
  // a_i * j must not overflow: slots < 2^32 keeps every product below 2^64.
  CT_CHECK(slots < (uint64_t{1} << 32)) << samples << " samples x " << kps << " keys are too many slots";
  const double overlap = options_.batch_overlap;
  const uint64_t seed = options_.seed;

  // streams[d] belongs to batch index - d; filled as copy chains reach back.
  std::vector<BatchStreams> streams{batch_streams(seed, index, rank, slots)};
  auto streams_of = [&](int64_t depth) -> const BatchStreams& {
    while (static_cast<int64_t>(streams.size()) <= depth)
      streams.push_back(batch_streams(seed, index - static_cast<int64_t>(streams.size()), rank, slots));
    return streams[static_cast<size_t>(depth)];
  };
  auto fresh_key = [&](const BatchStreams& s, uint64_t slot) {
    SplitMix64 rng(mix64(s.draw ^ slot));
    return sampler_.sample(rng) - 1;
  };

  // Overlap 1: every slot is a copy, back to batch 0; compose the maps once.
  uint64_t whole_a = 1, whole_b = 0;  // slot j of this batch is slot whole_a j + whole_b of batch 0
  if (overlap == 1.0) {
    for (int64_t depth = 0; depth < index; ++depth) {
      const BatchStreams& s = batch_streams(seed, index - depth, rank, slots);
      whole_a = (s.a * whole_a) % slots;
      whole_b = (s.a * whole_b + s.b) % slots;
    }
  }
  const BatchStreams batch0 = overlap == 1.0 ? batch_streams(seed, 0, rank, slots) : BatchStreams{};

  std::vector<std::vector<int64_t>> keys(static_cast<size_t>(samples), std::vector<int64_t>(static_cast<size_t>(kps)));
  uint64_t slot = 0;
  for (auto& sample : keys) {
    for (int64_t& key : sample) {
      if (overlap == 1.0) {
        key = fresh_key(batch0, (whole_a * slot + whole_b) % slots);
      } else {
        int64_t depth = 0;
        uint64_t at = slot;  // the slot of batch index - depth the chain is at
        while (overlap > 0 && depth < index && to_unit(mix64(streams_of(depth).coin ^ at)) < overlap) {
          const BatchStreams& s = streams_of(depth);
          at = (s.a * at + s.b) % slots;
          ++depth;
        }
        key = fresh_key(streams_of(depth), at);
      }
      ++slot;
    }
  }

  share_user_histories(options_, index, rank, &keys);
  return keys;
}

}  // namespace clustertwin::models::nestpipe
