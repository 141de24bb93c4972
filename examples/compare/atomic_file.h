// Writing a file so that readers see the previous complete file or the new complete one, never
// a truncated or partly written one: amp_compare's outputs are read by scripts and plots, and a
// run that fails or is killed while writing must not leave a file that looks like a finished run.
#pragma once

#include <string>

namespace amp::compare {

// Writes `text` to a temporary file in the directory of `path`, flushes it to the disk, then
// renames it to `path` (atomic within one file system). amp::Error naming `path` and the
// reason when any step fails; the temporary file is removed then.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace amp::compare
