// checkpoint_resume: training that survives being killed at any moment and, resumed, ends
// bit-identical to a run that was never interrupted.
//
// A small classifier (Linear, BatchNorm1d, ReLU, Dropout, Linear) trains with apex O2 (fp16
// model, fp32 master weights, dynamic loss scale) and Adam on synthetic data. Every K steps it
// writes one checkpoint file holding everything the rest of the run depends on:
//
//   model.*     the model's state_dict: the fp32 masters and the batch-norm buffers
//   optimizer.* Adam's state_dict: options, step counts, exp_avg, exp_avg_sq of the masters
//   amp.*       amp::state_dict(): the loss scale and its count of clean steps
//   rng.state   amp::get_rng_state(): the stream that dropout draws from
//   progress.*  the global step, the epoch and the batch within it (the data order of an
//               epoch is a function of the loader's seed and the epoch)
//
// One file, written by amp::save (temporary file, fsync, rename): a kill leaves the previous
// checkpoint or the new one, never a mix. On start, a checkpoint in --dir is resumed from. At the
// end the complete state is written to final.safetensors; two runs with the same options, one
// killed and resumed any number of times, write the same bytes there (docs/checkpoints.md).
//
//   ./checkpoint_resume --dir /tmp/run --steps 200 --checkpoint-every 25
//   # kill it (Ctrl-C, kill -9) and start the same command again: it continues
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "amp/amp.h"
#include "examples/command_line.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSamples = 1024;
constexpr int64_t kBatchSize = 32;

struct Config {
  std::string dir;
  int64_t steps = 200;
  int64_t checkpoint_every = 25;
  std::string opt_level = "O2";
  int step_delay_ms = 0;
  bool skip_rng_state = false;
};

std::shared_ptr<amp::nn::Sequential> make_model() {
  using namespace amp::nn;
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(16, 64), std::make_shared<BatchNorm1d>(64), std::make_shared<ReLU>(),
      std::make_shared<Dropout>(0.25), std::make_shared<Linear>(64, 4)});
}

// Four classes, each the sign pattern of two input coordinates, plus noise. Drawn from its own
// seed, so a resumed run rebuilds the same data before it restores the generator.
amp::data::Dataset synthetic_data() {
  amp::manual_seed(1);
  const amp::Tensor x = amp::randn({kSamples, 16});
  const amp::Tensor a = amp::gt(x.narrow(1, 0, 1), 0.0).to(amp::DType::Int64);
  const amp::Tensor b = amp::gt(x.narrow(1, 1, 1), 0.0).to(amp::DType::Int64);
  return {x, amp::add(amp::mul(a, 2.0), b).reshape({kSamples}).to(amp::DType::Int64)};
}

amp::Tensor int64_scalar(int64_t v) { return amp::scalar_tensor(v, {.dtype = amp::DType::Int64}); }

// Adds `part` to `out` with every key prefixed.
void put(amp::StateDict& out, const std::string& prefix, const amp::StateDict& part) {
  for (const auto& [key, value] : part) out[prefix + key] = value;
}

// The entries of `all` under `prefix`, with the prefix removed.
amp::StateDict take(const amp::StateDict& all, const std::string& prefix) {
  amp::StateDict part;
  for (const auto& [key, value] : all) {
    if (key.compare(0, prefix.size(), prefix) == 0) part[key.substr(prefix.size())] = value;
  }
  return part;
}

struct Trainer {
  std::shared_ptr<amp::nn::Sequential> model;
  std::unique_ptr<amp::optimizers::Adam> optimizer;
  amp::data::DataLoader loader;
  int64_t step = 0;  // optimizer steps done

  amp::StateDict state() const {
    amp::StateDict s;
    put(s, "model.", model->state_dict());
    put(s, "optimizer.", optimizer->state_dict());
    put(s, "amp.", amp::state_dict());
    s["rng.state"] = amp::get_rng_state();
    s["progress.step"] = int64_scalar(step);
    s["progress.epoch"] = int64_scalar(step / loader.size());
    s["progress.batch"] = int64_scalar(step % loader.size());
    return s;
  }

  // Checks the entries this program reads itself before anything is restored, so that a
  // checkpoint written by another program is an amp::Error naming the entry, not an abort.
  void load(const amp::StateDict& s, bool restore_rng) {
    const int64_t saved_step = progress_entry(s, "progress.step");
    const int64_t epoch = progress_entry(s, "progress.epoch");
    const int64_t batch = progress_entry(s, "progress.batch");
    if (saved_step < 0 || batch < 0 || batch >= loader.size() ||
        epoch * loader.size() + batch != saved_step) {
      throw amp::Error("expected epoch " + std::to_string(epoch) + " and batch " +
                       std::to_string(batch) + " to make step " + std::to_string(saved_step) +
                       " at " + std::to_string(loader.size()) +
                       " batches per epoch; was the checkpoint written with other options?");
    }
    const amp::Tensor& rng_state = entry(s, "rng.state");
    model->load_state_dict(take(s, "model."));  // under O2 this reloads the masters too
    optimizer->load_state_dict(take(s, "optimizer."));
    amp::load_state_dict(take(s, "amp."));
    if (restore_rng) amp::set_rng_state(rng_state);
    step = saved_step;
  }

 private:
  static const amp::Tensor& entry(const amp::StateDict& s, const std::string& key) {
    const auto it = s.find(key);
    if (it == s.end()) {
      throw amp::Error("the checkpoint has no '" + key +
                       "' entry; expected one written by checkpoint_resume");
    }
    return it->second;
  }

  // A one-element Int64 entry.
  static int64_t progress_entry(const amp::StateDict& s, const std::string& key) {
    const amp::Tensor& t = entry(s, key);
    if (t.dtype() != amp::DType::Int64 || t.numel() != 1) {
      throw amp::Error("the checkpoint's '" + key + "' must be one Int64 value, got " +
                       std::string(amp::dtype_name(t.dtype())) + " of shape " +
                       amp::shape_to_string(t.sizes()));
    }
    return t.item<int64_t>();
  }
};

int run(const Config& cfg) {
  fs::create_directories(cfg.dir);
  const fs::path checkpoint = fs::path(cfg.dir) / "checkpoint.safetensors";
  const fs::path final_state = fs::path(cfg.dir) / "final.safetensors";

  const amp::data::Dataset data = synthetic_data();
  amp::manual_seed(2);  // the weights' initialisation, then dropout's masks
  Trainer t{make_model(), nullptr,
            amp::data::DataLoader(data, {.batch_size = kBatchSize, .shuffle = true, .seed = 3})};
  t.optimizer = std::make_unique<amp::optimizers::Adam>(t.model->parameters(),
                                                        amp::optimizers::AdamOptions{.lr = 3e-3});
  amp::initialize(*t.model, *t.optimizer, cfg.opt_level, {.verbosity = 0});
  // Restored after initialize, which makes the masters and the loss scaler that the checkpoint
  // fills in.
  if (fs::exists(checkpoint)) {
    t.load(amp::load(checkpoint.string()), !cfg.skip_rng_state);
    std::printf("resumed from step %lld (epoch %lld, batch %lld) of %s\n",
                static_cast<long long>(t.step), static_cast<long long>(t.step / t.loader.size()),
                static_cast<long long>(t.step % t.loader.size()), checkpoint.c_str());
  } else {
    std::printf("no checkpoint in %s: starting at step 0\n", cfg.dir.c_str());
  }
  std::fflush(stdout);

  while (t.step < cfg.steps) {
    // Resume inside an epoch: the same permutation, then skip the batches already trained on.
    t.loader.set_epoch(t.step / t.loader.size());
    auto it = t.loader.begin();
    for (int64_t skip = t.step % t.loader.size(); skip > 0; --skip) ++it;
    for (; it != t.loader.end() && t.step < cfg.steps; ++it) {
      auto [x, y] = *it;
      t.optimizer->zero_grad();
      amp::Tensor loss = amp::nn::functional::cross_entropy((*t.model)(x), y);
      {
        auto scaled = amp::scale_loss(loss, *t.optimizer);
        scaled.backward();
      }
      t.optimizer->step();
      ++t.step;
      if (cfg.step_delay_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(cfg.step_delay_ms));
      }
      if (t.step % cfg.checkpoint_every == 0) {
        amp::save(t.state(), checkpoint.string());
        std::printf("step %lld loss %.4f, loss scale %g: checkpoint written\n",
                    static_cast<long long>(t.step), loss.item<double>(),
                    amp::state_dict().at("loss_scaler0.loss_scale").item<double>());
        std::fflush(stdout);
      }
    }
  }
  amp::save(t.state(), final_state.string());
  std::printf("done: %lld steps, final state in %s\n", static_cast<long long>(t.step),
              final_state.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  po::options_description options("checkpoint_resume: training that resumes bit-identically");
  options.add_options()("help", "show this help")(
      "dir", po::value(&cfg.dir)->required(),
      "directory of the checkpoint and the final state (resumed from when it holds one)")(
      "steps", po::value(&cfg.steps)->default_value(cfg.steps), "optimizer steps in all")(
      "checkpoint-every", po::value(&cfg.checkpoint_every)->default_value(cfg.checkpoint_every),
      "steps between checkpoints")(
      "opt-level", po::value(&cfg.opt_level)->default_value(cfg.opt_level), "apex opt level")(
      "step-delay-ms", po::value(&cfg.step_delay_ms)->default_value(cfg.step_delay_ms),
      "sleep after every step (gives a test time to kill the run between checkpoints)")(
      "skip-rng-state", po::bool_switch(&cfg.skip_rng_state),
      "resume without restoring the random generator: dropout then draws other masks and the "
      "final state differs (shows why the checkpoint holds it)");
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
    if (vm.count("help")) {
      std::cout << options;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "checkpoint_resume: " << e.what() << "\n" << options;
    return 2;
  }
  if (cfg.steps < 1 || cfg.checkpoint_every < 1 || cfg.step_delay_ms < 0) {
    std::cerr << "checkpoint_resume: expected --steps >= 1, --checkpoint-every >= 1 and "
                 "--step-delay-ms >= 0\n";
    return 2;
  }
  try {
    return run(cfg);
  } catch (const amp::Error& e) {
    std::cerr << "checkpoint_resume: " << e.what() << "\n";
    return 1;
  } catch (const fs::filesystem_error& e) {
    std::cerr << "checkpoint_resume: " << e.what() << "\n";
    return 1;
  }
}
