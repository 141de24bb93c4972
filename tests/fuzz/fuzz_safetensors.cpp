// libFuzzer target: amp::load (csrc/io/safetensors.h) on arbitrary bytes. Its contract: any file
// loads or raises amp::Error naming the file, never crashes and never allocates more than the
// file holds (run_fuzz.sh caps single allocations with -malloc_limit_mb). A file that loads must
// also hold exactly what was loaded: the tensors fill the data section after the header, and
// BOOL tensors hold only 0 and 1. Any other exception escapes, and libFuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "amp/amp.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using amp_fuzz::require;
  static amp_fuzz::MemoryFile file("safetensors");
  const std::string& path = file.write(data, size);
  amp::CheckpointMetadata metadata;
  amp::StateDict state;
  try {
    state = amp::load(path, &metadata);
  } catch (const amp::Error& e) {
    require(amp_fuzz::starts_with(e.what(), "load '" + path + "': "),
            std::string("amp::Error names the file: ") + e.what());
    return 0;
  }
  require(size >= 8, "a file that loads holds the 8-byte header length");
  uint64_t header_bytes = 0;
  for (int i = 0; i < 8; ++i) header_bytes |= static_cast<uint64_t>(data[i]) << (8 * i);
  require(header_bytes <= size - 8, "a file that loads holds its whole header");
  uint64_t tensor_bytes = 0;
  for (const auto& [name, t] : state) {
    require(t.defined() && t.device().is_cpu() && (t.is_contiguous() || t.numel() == 0),
            "tensor '" + name + "' is a defined, contiguous CPU tensor");
    const auto nbytes = static_cast<uint64_t>(t.numel()) * amp::element_size(t.dtype());
    tensor_bytes += nbytes;
    if (t.dtype() == amp::DType::Bool) {
      const auto* bytes = static_cast<const uint8_t*>(t.data_ptr());
      for (uint64_t i = 0; i < nbytes; ++i) require(bytes[i] <= 1, "BOOL bytes are 0 or 1");
    }
  }
  require(tensor_bytes == size - 8 - header_bytes,
          "the loaded tensors hold exactly the data section's bytes");
  return 0;
}
