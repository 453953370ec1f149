// clustertwin run flowtrain: FlowTrain's real executor (its entry in common/systems.def).

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/run_options.h"
#include "real/flowtrain/flowtrain_command.h"

namespace clustertwin::cli {
namespace {

// The library names FlowTrainRunArgs' fields (real/flowtrain/run_args.h); the command its flags. One message
// names two fields, the width and the model ("width 2 with model large: ..."): both in flag words.
Status in_run_flowtrain_flag_words(const Status& status) {
  const Status s = in_run_flag_words(in_flag_words(status, {{"mode", "--mode"},
                                                            {"global_batch", "--global-batch"},
                                                            {"encoder_workers", "--encoder-workers"},
                                                            {"micro_batch_tokens", "--micro-batch-tokens"},
                                                            {"pool_slots", "--pool-slots"},
                                                            {"lr", "--lr"},
                                                            {"model", "--model"},
                                                            {"width", "--width"},
                                                            {"dtype", "--dtype"},
                                                            {"pool_transfer", "--pool-transfer"}}));
  const std::string& m = s.message();
  const std::string model = " with model ";
  const size_t at = m.find(model);
  if (m.rfind("--width ", 0) != 0 || at == std::string::npos) return s;
  return s.with_message(m.substr(0, at) + " with --model " + m.substr(at + model.size()));
}

}  // namespace

void add_run_flowtrain(CLI::App* run, Action* action) {
  auto a = std::make_shared<real::flowtrain::FlowTrainRunArgs>();
  CLI::App* ft = run->add_subcommand(
      "flowtrain",
      "Vision-language model training for real with FlowTrain's designs: a VLM (ViT encoder, projector, GPT "
      "backbone; --model tiny or large) on the synthetic multimodal dataset (0-8 images and a heavy-tailed text per "
      "sample), SGD with momentum on the summed loss of each global batch. Modes: monolithic (every rank runs encoder "
      "and backbone for its share of the samples, one all-reduce), disagg-sync (ranks [0, E) encode, the rest train "
      "the backbone; micro-batches packed by tokens, lock-step rounds over send/recv), flowtrain (the same split, "
      "decoupled through a shared-memory pool: micro-batches packed by backbone cost, encoders put embeddings as "
      "fast as the pool's slots allow, backbones take them and put the embeddings' gradients back, encoders "
      "recompute and run their backward; encoder updates at step boundaries). All modes end a step with the same "
      "parameters up to rounding. The split modes need 2 processes at least");
  ft->add_option("--mode", a->mode, "monolithic, disagg-sync or flowtrain")->capture_default_str();
  ft->add_option("--steps", a->steps, "Training steps")->capture_default_str();
  ft->add_option("--global-batch", a->global_batch, "Samples per step")->capture_default_str();
  ft->add_option("--encoder-workers", a->encoder_workers,
                 "Split modes: encoder workers, ranks 0..E-1 (0: a quarter of the ranks, at least 1)")
      ->capture_default_str();
  ft->add_option("--micro-batch-tokens", a->micro_batch_tokens,
                 "Backbone tokens per packed micro-batch (0: the model's context, 256 for tiny, 2048 for large)")
      ->capture_default_str();
  ft->add_option("--pool-slots", a->pool_slots,
                 "flowtrain: embedding slots of each encoder worker's pool, one sample each (how far it may run ahead)")
      ->capture_default_str();
  ft->add_option("--lr", a->lr, "SGD's learning rate (momentum 0.9)")->capture_default_str();
  ft->add_option("--model", a->model,
                 "The VLM: tiny (16 px images of 16 patches, d_vision 32 and d_model 48, 2 layers each, context 256: "
                 "trains on a laptop's CPU) or large (a ViT-L/14 encoder, 224 px images of 256 patches, d_vision 1024, "
                 "24 layers; a ~1.2B decoder, d_model 2048, 22 layers, vocab 32000, context 2048; at most 4 images a "
                 "sample: ~1.55B parameters, for one 80-140 GB GPU)")
      ->capture_default_str();
  ft->add_option("--width", a->width,
                 "--model tiny only: its widths (d_vision, d_model and their MLPs) times this, depth and tokens "
                 "unchanged: a GPU needs 8 or more to have work")
      ->capture_default_str();
  ft->add_option("--dtype", a->dtype,
                 "fp32 or bf16: the parameters' and the compute's dtype (default fp32 for --model tiny, bf16 for "
                 "--model large); the pool between the sides, the gradients sent back to the encoders, the gradients' "
                 "all-reduce and the loss stay float32");
  ft->add_option("--seed", a->seed, "Seed of the model and the data")->capture_default_str();
  ft->add_option("--trace", a->trace, "Write the merged trace of all ranks here (rank 0 writes it)");
  ft->add_option("--dump-params", a->dump_params, "Write the final parameters to DIR/rank-0.bin (float64)");
  ft->add_option("--dump-state", a->dump_state,
                 "Write each rank's final state (its side's parameters, SGD's momentum) to DIR/rank-R.bin");
  add_checkpoint_flags(ft, &a->checkpoint_dir, &a->checkpoint_every, &a->resume, "mode", "after a step, pool empty");
  ft->add_flag("--json", a->json, "Print one JSON object instead of the table");
  ft->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  ft->add_option("--backend", a->backend, kBackendHelp)->capture_default_str();
  ft->add_option("--pool-transfer", a->pool_transfer,
                 "flowtrain on a GPU: how the pool moves embeddings between processes: cuda-ipc (device to device "
                 "through CUDA IPC handles), host (staged through pinned host memory) or auto (cuda-ipc where every "
                 "rank can share GPU memory, else host)")
      ->capture_default_str();
  ft->add_option("--timeout", a->timeout_s, "Seconds a receive, pool access or collective may wait before failing")
      ->capture_default_str();
  ft->add_option("--threads", a->threads, "Intra-op threads per rank")->capture_default_str();
  ft->callback(
      [a, action] { *action = [a] { return in_run_flowtrain_flag_words(real::flowtrain::run_flowtrain(*a)); }; });
}

}  // namespace clustertwin::cli
