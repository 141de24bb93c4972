/// \file
/// Checkpoints: amp::save / amp::load of a StateDict in the safetensors format, so a checkpoint
/// written here opens with `safetensors.torch.load_file` in PyTorch and the other way round.
///
/// \code
///   amp::StateDict state = model->state_dict();
///   amp::save(state, "ckpt/model.safetensors");          // atomic: all or nothing on disk
///   amp::StateDict back = amp::load("ckpt/model.safetensors");
/// \endcode
///
/// Layout (docs/checkpoints.md): an 8-byte little-endian header length N; N bytes of JSON
/// {"__metadata__": {..}, "name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ..}
/// padded with spaces to a multiple of 8; then the raw little-endian tensor bytes. Tensors are
/// laid out as the reference serializer does: by decreasing dtype alignment, then by name, so
/// each tensor's data starts at a multiple of its element size.
#pragma once
#include <map>
#include <string>

#include "csrc/core/export.h"
#include "csrc/io/state_dict.h"

namespace amp {

/// Free-form string metadata stored under the header's "__metadata__" key.
using CheckpointMetadata = std::map<std::string, std::string>;

/// Writes `state` to `path` atomically: a temporary file in the same directory is written,
/// flushed and fsync'ed, then renamed over `path`, and the directory is fsync'ed. An existing
/// file keeps its permission bits; a symbolic link is followed (the file it ends at is replaced
/// atomically and the link stays); a directory, FIFO, device node or socket is refused.
/// Non-contiguous and CUDA tensors are packed on the CPU first. amp::Error naming the path on any
/// failure (an undefined tensor, a key that is not UTF-8 or is "__metadata__", a target that is
/// not a regular file, an I/O error); the temporary file is removed and an existing file at
/// `path` is left untouched.
AMPCPP_API void save(const StateDict& state, const std::string& path);
/// Same, with "__metadata__" entries (omitted from the header when empty, as the reference does).
AMPCPP_API void save(const StateDict& state, const std::string& path,
                     const CheckpointMetadata& metadata);

/// Reads a safetensors file with dtypes F32, F16, BF16, F64, I64, BOOL, F8_E4M3, F8_E5M2 into CPU
/// tensors. The whole file is validated before any tensor is allocated (header length, JSON,
/// dtypes, shapes against byte ranges, ranges covering the data section exactly once), so a
/// truncated, corrupt or hostile file raises amp::Error ("load '<path>': ... expected ..., got
/// ...") and never crashes or allocates more than the file holds.
AMPCPP_API StateDict load(const std::string& path);
/// Same, also returning the "__metadata__" entries (empty when the file has none).
AMPCPP_API StateDict load(const std::string& path, CheckpointMetadata* metadata);

}  // namespace amp
