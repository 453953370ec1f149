#include "real/igsp/corpus_manifest.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "models/torch/byte_lm.h"

namespace clustertwin::real::igsp {
namespace {

using clustertwin::models::igsp::Domain;
using clustertwin::models::igsp::DomainText;

nlohmann::ordered_json options_json(const models::nets::ByteLmOptions& m) {
  return {{"vocab", m.vocab},   {"context", m.context}, {"d_model", m.d_model},
          {"layers", m.layers}, {"heads", m.heads},     {"d_ff", m.d_ff}};
}

// A pack's path as a manifest keeps it: relative to the checkpoint's folder, so that the two move together.
std::string pack_from_checkpoint(const std::string& pack, const std::string& checkpoint) {
  const std::filesystem::path folder =
      std::filesystem::weakly_canonical(std::filesystem::absolute(checkpoint)).parent_path();
  return std::filesystem::weakly_canonical(std::filesystem::absolute(pack)).lexically_relative(folder).string();
}

// One domain's entry of the manifest: generated from the seed, or the files it was read from (a domain read
// from one pack names it once).
nlohmann::ordered_json domain_json(const DomainText& d, uint64_t seed, const std::string& checkpoint) {
  nlohmann::ordered_json dj;
  dj["domain"] = clustertwin::models::igsp::domain_name(d.domain);
  dj["train_bytes"] = d.train.size();
  dj["heldout_bytes"] = d.heldout.size();
  if (d.files.empty()) {
    dj["generated_from_seed"] = seed;
    return dj;
  }
  const bool one_pack =
      !d.files.front().pack.empty() &&
      std::all_of(d.files.begin(), d.files.end(), [&](const auto& f) { return f.pack == d.files.front().pack; });
  if (one_pack) dj["pack"] = pack_from_checkpoint(d.files.front().pack, checkpoint);
  dj["files"] = nlohmann::ordered_json::array();
  for (const auto& f : d.files) {
    nlohmann::ordered_json fj;
    if (!one_pack && !f.pack.empty()) fj["pack"] = pack_from_checkpoint(f.pack, checkpoint);
    fj["path"] = f.path;
    fj["bytes"] = f.bytes;
    fj["crc32"] = f.crc32;
    dj["files"].push_back(fj);
  }
  return dj;
}

// `pack` as named by checkpoint `from`'s manifest, as `to`'s must name it.
std::string rebased_pack(const std::string& pack, const std::string& from, const std::string& to) {
  const std::filesystem::path named(pack);
  if (named.is_absolute()) return pack;
  return pack_from_checkpoint((std::filesystem::path(from).parent_path() / named).string(), to);
}

// A corpus file the manifest names: a pack's entry (the pack relative to the
// checkpoint's folder), or a file of its own.
struct Listed {
  std::string pack, pack_as_named;  // the pack as found and as the manifest names it; empty: a file
  clustertwin::models::igsp::CorpusFile file;
};
using ListedByDomain = std::map<std::string, std::vector<Listed>>;

// The files the manifest's corpus names, by domain, and the roots to read
// them again from (into `o`); NotFound for a pack that is not where it says.
Status list_corpus(const nlohmann::json& corpus, const std::string& checkpoint, TrainOptions& o,
                   ListedByDomain& listed) {
  const std::filesystem::path folder = std::filesystem::path(checkpoint).parent_path();
  for (const auto& d : corpus) {
    if (!d.contains("files")) continue;
    const std::string domain = d.at("domain").get<std::string>();
    std::vector<std::string>& roots = domain == "code" ? o.code_roots : o.general_roots;
    const std::string domain_pack = d.value("pack", std::string());
    for (const auto& f : d.at("files")) {
      Listed l;
      l.pack_as_named = f.value("pack", domain_pack);
      l.file.path = f.at("path").get<std::string>();
      l.file.bytes = f.at("bytes").get<uint64_t>();
      l.file.crc32 = f.at("crc32").get<uint32_t>();
      if (l.pack_as_named.empty()) {
        roots.push_back(l.file.path);
      } else {
        const std::filesystem::path named(l.pack_as_named);
        l.pack = (named.is_absolute() ? named : folder / named).string();
        if (roots.empty() || roots.back() != l.pack) {
          std::error_code ec;
          if (!std::filesystem::is_regular_file(l.pack, ec)) {
            return Status::not_found(checkpoint + ": corpus pack " + l.pack_as_named + ": " + l.pack +
                                     ": no such file (a checkpoint's packs go where its manifest says, relative "
                                     "to its folder)");
          }
          roots.push_back(l.pack);
        }
      }
      listed[domain].push_back(std::move(l));
    }
  }
  return Status::ok();
}

// The corpus read again must be the text trained on: every listed file
// there, with its size and CRC-32, in the manifest's order, and no other.
Status check_same_text(const std::vector<clustertwin::models::igsp::DomainText>& corpus, const ListedByDomain& listed,
                       const std::string& checkpoint) {
  for (const auto& have : corpus) {
    const auto it = listed.find(clustertwin::models::igsp::domain_name(have.domain));
    if (it == listed.end()) continue;
    const std::vector<Listed>& want = it->second;
    for (size_t i = 0; i < want.size(); ++i) {
      const Listed& w = want[i];
      const std::string what =
          checkpoint + ": corpus " +
          (w.pack.empty() ? "file " + w.file.path : "pack " + w.pack_as_named + ": entry " + w.file.path);
      const auto found = std::find_if(have.files.begin(), have.files.end(),
                                      [&](const auto& f) { return f.pack == w.pack && f.path == w.file.path; });
      if (found == have.files.end()) {
        return Status::invalid_argument(what + " is missing here (or not printable text): not the text trained on");
      }
      if (found->bytes != w.file.bytes || found->crc32 != w.file.crc32) {
        return Status::invalid_argument(what + " differs from the one trained on: " + std::to_string(found->bytes) +
                                        " bytes, CRC-32 " + std::to_string(found->crc32) + "; the manifest says " +
                                        std::to_string(w.file.bytes) + ", " + std::to_string(w.file.crc32));
      }
      if (found != have.files.begin() + static_cast<std::ptrdiff_t>(i)) {
        return Status::invalid_argument(what + " is read as file " + std::to_string(found - have.files.begin() + 1) +
                                        ", the manifest has it as " + std::to_string(i + 1) +
                                        ": other files come before it here");
      }
    }
    if (have.files.size() != want.size()) {
      return Status::invalid_argument(checkpoint + ": the " + clustertwin::models::igsp::domain_name(have.domain) +
                                      " corpus has " + std::to_string(have.files.size()) +
                                      " files here where its manifest lists " + std::to_string(want.size()) +
                                      ": not the text trained on");
    }
  }
  return Status::ok();
}

}  // namespace

std::string byte_lm_options_json(const models::nets::ByteLmOptions& options) {
  return options_json(options).dump();
}

std::string checkpoint_manifest(const TrainOptions& o, const std::vector<DomainText>& corpus, int64_t step,
                                double loss) {
  nlohmann::ordered_json j;
  j["model"] = options_json(o.model);
  j["seed"] = o.seed;
  j["batch"] = o.batch;
  j["lr"] = o.lr;
  j["weight_decay"] = o.weight_decay;
  j["warmup_steps"] = o.warmup_steps;
  j["max_steps"] = o.max_steps;
  j["domain_bytes"] = o.domain_bytes;
  j["step"] = step;
  j["loss"] = loss;
  j["corpus"] = nlohmann::ordered_json::array();
  for (const DomainText& d : corpus)
    j["corpus"].push_back(domain_json(d, o.seed, o.out));
  return j.dump(2);
}

StatusOr<std::vector<DomainText>> training_corpus(const TrainOptions& o) {
  std::vector<DomainText> corpus;
  for (Domain d : clustertwin::models::igsp::kDomains) {
    switch (d) {
      case Domain::kGeneral:
      case Domain::kCode: {
        const std::vector<std::string>& roots = d == Domain::kGeneral ? o.general_roots : o.code_roots;
        auto text = clustertwin::models::igsp::system_text(
            d, roots.empty() ? clustertwin::models::igsp::default_roots(d) : roots, o.domain_bytes);
        if (!text.is_ok()) return text.status();
        corpus.push_back(std::move(*text));
        break;
      }
      case Domain::kMath:
        corpus.push_back(clustertwin::models::igsp::math_text(o.seed, o.domain_bytes));
        break;
      case Domain::kCommonsense:
        corpus.push_back(clustertwin::models::igsp::commonsense_text(o.seed, o.domain_bytes));
        break;
    }
    if (corpus.back().train.size() < static_cast<size_t>(o.model.context + 1)) {
      return Status::invalid_argument(std::string(clustertwin::models::igsp::domain_name(d)) +
                                      " corpus: " + std::to_string(corpus.back().train.size()) +
                                      " training bytes, fewer than one window of " +
                                      std::to_string(o.model.context + 1));
    }
  }
  return corpus;
}

Status relocate_corpus(const std::string& checkpoint, const std::vector<std::string>& general_roots,
                       const std::vector<std::string>& code_roots) {
  auto c = models::nets::load_byte_lm(checkpoint);
  if (!c.is_ok()) return c.status();
  auto old = corpus_for(c->meta_json, checkpoint);  // the text as the manifest names it, checked
  if (!old.is_ok()) return old.status();
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(c->meta_json);
  const uint64_t seed = m.at("seed").get<uint64_t>(), domain_bytes = m.at("domain_bytes").get<uint64_t>();
  for (auto& dj : m.at("corpus")) {
    const DomainText* was = nullptr;
    for (const DomainText& d : *old) {
      if (clustertwin::models::igsp::domain_name(d.domain) == dj.at("domain").get<std::string>()) was = &d;
    }
    if (was == nullptr || (was->domain != Domain::kGeneral && was->domain != Domain::kCode)) continue;
    const std::vector<std::string>& roots = was->domain == Domain::kGeneral ? general_roots : code_roots;
    if (roots.empty()) continue;
    auto now = clustertwin::models::igsp::system_text(was->domain, roots, domain_bytes);
    if (!now.is_ok()) return now.status().with_context(checkpoint);
    if (now->train != was->train || now->heldout != was->heldout) {
      std::string list;
      for (const std::string& r : roots)
        list += (list.empty() ? "" : ", ") + r;
      return Status::invalid_argument(
          checkpoint + ": the " + clustertwin::models::igsp::domain_name(was->domain) + " text of " + list + " (" +
          std::to_string(now->train.size()) + " + " + std::to_string(now->heldout.size()) + " bytes, " +
          std::to_string(now->files.size()) + " files) is not the text its manifest names (" +
          std::to_string(was->train.size()) + " + " + std::to_string(was->heldout.size()) + " bytes, " +
          std::to_string(was->files.size()) + " files)");
    }
    dj = domain_json(*now, seed, checkpoint);
  }
  CT_RETURN_IF_ERROR(models::nets::save_byte_lm(c->model, m.dump(2), checkpoint));
  auto written = models::nets::load_byte_lm(checkpoint);
  if (!written.is_ok()) return written.status();
  auto same_bits = [](const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor x = a.contiguous(), y = b.contiguous();
    return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() &&
           std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
  };
  const auto before = c->model->named_parameters(), after = written->model->named_parameters();
  if (before.size() != after.size()) return Status::internal(checkpoint + ": parameters lost when rewritten");
  for (const auto& p : before) {
    const at::Tensor* q = after.find(p.key());
    if (q == nullptr || !same_bits(p.value(), *q)) {
      return Status::internal(checkpoint + ": parameter " + p.key() + " changed when the checkpoint was rewritten");
    }
  }
  return Status::ok();
}

StatusOr<std::vector<clustertwin::models::igsp::DomainText>> corpus_for(const std::string& manifest_json,
                                                                        const std::string& checkpoint) {
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(manifest_json);
  } catch (const nlohmann::json::exception&) {
    return Status::invalid_argument(checkpoint + ": its manifest is not JSON");
  }
  if (!m.contains("seed") || !m.contains("domain_bytes") || !m.contains("corpus") || !m["corpus"].is_array()) {
    return Status::invalid_argument(checkpoint +
                                    ": its manifest lacks seed, domain_bytes or corpus (not trained by "
                                    "clustertwin igsp train)");
  }
  TrainOptions o;
  o.seed = m["seed"].get<uint64_t>();
  o.domain_bytes = m["domain_bytes"].get<uint64_t>();
  if (m.contains("model") && m["model"].contains("context")) o.model.context = m["model"]["context"].get<int64_t>();
  // The files the manifest names, read again and checked.
  ListedByDomain listed;
  try {
    CT_RETURN_IF_ERROR(list_corpus(m["corpus"], checkpoint, o, listed));
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_argument(checkpoint + ": its manifest's corpus: " + e.what());
  }
  auto corpus = training_corpus(o);
  if (!corpus.is_ok()) return corpus.status().with_context(checkpoint);
  CT_RETURN_IF_ERROR(check_same_text(*corpus, listed, checkpoint));
  return corpus;
}

std::string manifest_for_copy(const std::string& manifest_json, const std::string& from, const std::string& to) {
  nlohmann::ordered_json meta = nlohmann::ordered_json::parse(manifest_json);
  if (!meta.contains("corpus")) return meta.dump(2);
  for (auto& d : meta["corpus"]) {
    if (d.contains("pack")) d["pack"] = rebased_pack(d["pack"].get<std::string>(), from, to);
    if (!d.contains("files")) continue;
    for (auto& f : d["files"])
      if (f.contains("pack")) f["pack"] = rebased_pack(f["pack"].get<std::string>(), from, to);
  }
  return meta.dump(2);
}

}  // namespace clustertwin::real::igsp
