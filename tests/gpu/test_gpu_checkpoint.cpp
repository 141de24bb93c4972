// amp::save of CUDA tensors (csrc/io/safetensors.h): packed on the CPU, contiguous or not, and
// loaded back byte for byte; the CPU side is specified in tests/io/test_checkpoint.cpp. Without a
// usable CUDA device the suite is skipped by its precondition and ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <string>

#include "amp/amp.h"
#include "tests/io/checkpoint_test_util.h"
#include "tests/io/temp_dir.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::StateDict;
using amp::testing::TempDir;
using amp_test::checkpoint_util::check_same;
using amp_test::checkpoint_util::every_dtype;

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_checkpoint, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(save_packs_cuda_tensors_on_the_cpu) {
  const StateDict cpu = every_dtype();
  StateDict gpu;
  for (const auto& [name, t] : cpu) gpu[name] = t.to(amp::Device::cuda());
  gpu["transposed"] = cpu.at("f32").to(amp::Device::cuda()).t();
  TempDir dir;
  amp::save(gpu, dir.file("gpu.safetensors"));
  const StateDict back = amp::load(dir.file("gpu.safetensors"));
  for (const auto& [name, t] : cpu) check_same(back.at(name), t);
  check_same(back.at("transposed"), cpu.at("f32").t());
}

BOOST_AUTO_TEST_SUITE_END()
