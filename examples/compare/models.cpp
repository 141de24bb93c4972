#include "examples/compare/models.h"

#include <initializer_list>

#include "amp/amp.h"

namespace amp::compare {

namespace {

constexpr int64_t kPixels = 28 * 28;
constexpr int64_t kClasses = 10;
constexpr int64_t kPatch = 7;                     // 7x7 pixels per patch
constexpr int64_t kPatchesPerSide = 28 / kPatch;  // 4
constexpr int64_t kPatches = kPatchesPerSide * kPatchesPerSide;
constexpr int64_t kHeads = 4;
constexpr int64_t kEncoderBlocks = 2;

using ModuleList = std::initializer_list<std::shared_ptr<nn::Module>>;

std::shared_ptr<nn::Module> make_mlp(int64_t width) {
  return std::make_shared<nn::Sequential>(
      ModuleList{std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(kPixels, width),
                 std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(width, width),
                 std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(width, kClasses)});
}

std::shared_ptr<nn::Module> make_cnn(int64_t width) {
  // 28x28 -> 14x14 -> 7x7 after the two pools; padding 1 keeps each conv's size.
  return std::make_shared<nn::Sequential>(ModuleList{
      std::make_shared<nn::Conv2d>(1, width, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(width),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Conv2d>(width, 2 * width, 3, 1, 1),
      std::make_shared<nn::BatchNorm2d>(2 * width), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(2 * width * 7 * 7, kClasses)});
}

// A pre-norm transformer encoder block: x + attention(norm(x)), then x + mlp(norm(x)).
class EncoderBlock : public nn::Module {
 public:
  explicit EncoderBlock(int64_t width) : Module("EncoderBlock") {
    attention_norm_ =
        register_module("attention_norm", std::make_shared<nn::LayerNorm>(Shape{width}));
    attention_ = register_module("attention",
                                 std::make_shared<nn::MultiheadAttention>(width, kHeads, 0.0, true,
                                                                          /*batch_first=*/true));
    mlp_norm_ = register_module("mlp_norm", std::make_shared<nn::LayerNorm>(Shape{width}));
    mlp_ = register_module(
        "mlp", std::make_shared<nn::Sequential>(ModuleList{
                   std::make_shared<nn::Linear>(width, 2 * width), std::make_shared<nn::GELU>(),
                   std::make_shared<nn::Linear>(2 * width, width)}));
  }

  Tensor forward(const Tensor& x) override {
    const Tensor h = x + (*attention_)((*attention_norm_)(x));
    return h + (*mlp_)((*mlp_norm_)(h));
  }

 private:
  std::shared_ptr<nn::LayerNorm> attention_norm_, mlp_norm_;
  std::shared_ptr<nn::MultiheadAttention> attention_;
  std::shared_ptr<nn::Sequential> mlp_;
};

class PatchTransformer : public nn::Module {
 public:
  explicit PatchTransformer(int64_t width) : Module("PatchTransformer") {
    embedding_ = register_module("embedding", std::make_shared<nn::Linear>(kPatch * kPatch, width));
    // Small random positions, as ViT initialises them.
    position_ = register_parameter("position", randn({kPatches, width}) * 0.02);
    blocks_ = register_module("blocks", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < kEncoderBlocks; ++i) {
      blocks_->push_back(std::make_shared<EncoderBlock>(width));
    }
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(Shape{width}));
    head_ = register_module("head", std::make_shared<nn::Linear>(width, kClasses));
  }

  Tensor forward(const Tensor& images) override {
    const int64_t n = images.size(0);
    // (N, 1, 28, 28) -> (N, 4, 7, 4, 7) -> (N, 4, 4, 7, 7) -> (N, 16, 49): row-major patches.
    const Tensor patches = images.reshape({n, kPatchesPerSide, kPatch, kPatchesPerSide, kPatch})
                               .permute({0, 1, 3, 2, 4})
                               .contiguous()
                               .reshape({n, kPatches, kPatch * kPatch});
    Tensor x = (*embedding_)(patches) + position_;
    for (const auto& block : *blocks_) x = (*block)(x);
    return (*head_)(mean((*norm_)(x), {1}));
  }

 private:
  std::shared_ptr<nn::Linear> embedding_, head_;
  Tensor position_;
  std::shared_ptr<nn::ModuleList> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
};

}  // namespace

std::shared_ptr<nn::Module> make_model(const std::string& name, int64_t width, uint64_t seed) {
  manual_seed(seed);
  if (name == "cnn") return make_cnn(width);
  if (name == "transformer") return std::make_shared<PatchTransformer>(width);
  if (name == "mlp") return make_mlp(width);
  throw Error("unknown model '" + name + "'");
}

}  // namespace amp::compare
