// amp::save / amp::load in the safetensors format (csrc/io/safetensors.h, docs/checkpoints.md).
#include "csrc/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "csrc/core/limits.h"
#include "csrc/core/macros.h"
#include "csrc/io/json_reader.h"

namespace amp {

// The format stores little-endian bytes; tensors are written and read as they lie in memory.
static_assert(std::endian::native == std::endian::little,
              "ampcpp's safetensors I/O assumes a little-endian host");

namespace {

// The reference implementation refuses headers above 100 MB; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeInfo {
  DType dtype;
  const char* name;  // the safetensors spelling
  // Position in the reference's Dtype enum, which is ordered by increasing alignment: the
  // reference serializer sorts tensors by decreasing rank, then by name.
  int rank;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::Int64, "I64", 13},          {DType::Float64, "F64", 12},
    {DType::Float32, "F32", 11},        {DType::BFloat16, "BF16", 8},
    {DType::Float16, "F16", 7},         {DType::Float8_e4m3fn, "F8_E4M3", 4},
    {DType::Float8_e5m2, "F8_E5M2", 3}, {DType::Bool, "BOOL", 0},
};

// Valid safetensors dtypes that ampcpp has no tensor type for.
constexpr const char* kUnsupportedDTypes[] = {"U8",  "I8",      "I16", "U16",     "I32",     "U32",
                                              "U64", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};

const DTypeInfo& info_of(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  AMP_FAIL("save: no safetensors name for dtype ", dtype_name(dtype));
}

const DTypeInfo* info_of(const std::string& name) {
  for (const auto& info : kDTypes) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

std::string errno_message(int err) {
  return std::error_code(err, std::generic_category()).message();
}

std::string shape_json(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// ------------------------------------------------------------------------------------------------
// Writing

// What save replaces: `path`, or, when `path` is a symbolic link, the file its chain of links
// ends at (so the link survives and its target gets the new contents, as writing through the
// link would), with that file's permission bits when it exists. Anything but a regular file or
// a missing one (a directory, FIFO, device node, socket) is refused: renaming over it would
// replace a special file with a checkpoint.
struct SaveTarget {
  std::string path;
  std::optional<mode_t> mode;  // the permission bits of the file replaced; none for a new file
};

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

SaveTarget resolve_save_target(const std::string& path, const std::string& where) {
  namespace fs = std::filesystem;
  // The kernel's own limit on links followed in one lookup (MAXSYMLINKS).
  constexpr int kMaxLinks = 40;
  fs::path target(path);
  for (int links = 0;; ++links) {
    struct stat st {};
    // An entry that cannot be looked up (missing, or a missing directory) is created; the
    // temporary file's creation reports a path that cannot be written.
    if (::lstat(target.c_str(), &st) != 0) return {target.string(), std::nullopt};
    if (S_ISREG(st.st_mode)) return {target.string(), st.st_mode & 07777};
    const std::string at =
        target.string() == path ? std::string() : " ('" + target.string() + "', a link's target)";
    AMP_CHECK(S_ISLNK(st.st_mode), where, ": expected a regular file to replace, got ",
              file_kind(st.st_mode), at, "; refusing to replace it");
    AMP_CHECK(links < kMaxLinks, where, ": too many levels of symbolic links (more than ",
              kMaxLinks, ")");
    std::error_code ec;
    const fs::path next = fs::read_symlink(target, ec);
    AMP_CHECK(!ec, where, ": reading symbolic link '", target.string(), "' failed: ", ec.message());
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
}

// A temporary file beside the target: removed on destruction unless renamed into place.
class TempFile {
 public:
  // mode: the permission bits the file gets before anything is written (those of the file it
  // will replace); none: 0666 under the process umask, as a new file.
  TempFile(const std::string& target, std::optional<mode_t> mode, const std::string& where) {
    namespace fs = std::filesystem;
    const fs::path p(target);
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    dir_ = dir.string();
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::string name =
          detail::concat(".", p.filename().string(), ".tmp.", ::getpid(), ".", counter++);
      path_ = (dir / name).string();
      // 0666 so that a new file gets the usual permissions under the process umask; 0600 until
      // fchmod when the mode is kept, so the contents are never readable more widely than the
      // replaced file's.
      const int fd =
          ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode ? 0600 : 0666);
      if (fd >= 0 && mode && ::fchmod(fd, *mode) != 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(path_.c_str());
        AMP_FAIL(where, ": cannot give the temporary file '", path_, "' the mode of the file it ",
                 "replaces: ", errno_message(err));
      }
      if (fd >= 0) {
        file_.reset(::fdopen(fd, "wb"));
        if (!file_) {
          const int err = errno;
          ::close(fd);
          ::unlink(path_.c_str());
          AMP_FAIL(where, ": cannot open a temporary file in '", dir_, "': ", errno_message(err));
        }
        return;
      }
      if (errno != EEXIST) {
        AMP_FAIL(where, ": cannot create a temporary file in '", dir_, "': ", errno_message(errno));
      }
    }
    AMP_FAIL(where, ": cannot create a temporary file in '", dir_, "': 100 names taken");
  }
  ~TempFile() {
    file_.reset();
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* data, size_t n, const std::string& where) {
    if (n == 0) return;
    AMP_CHECK(std::fwrite(data, 1, n, file_.get()) == n, where, ": writing '", path_,
              "' failed: ", errno_message(errno));
  }

  // fflush + fsync + close, rename over `target`, fsync the directory.
  void commit(const std::string& target, const std::string& where) {
    AMP_CHECK(std::fflush(file_.get()) == 0, where, ": flushing '", path_,
              "' failed: ", errno_message(errno));
    AMP_CHECK(::fsync(::fileno(file_.get())) == 0, where, ": fsync of '", path_,
              "' failed: ", errno_message(errno));
    std::FILE* f = file_.release();
    AMP_CHECK(std::fclose(f) == 0, where, ": closing '", path_, "' failed: ", errno_message(errno));
    AMP_CHECK(::rename(path_.c_str(), target.c_str()) == 0, where, ": renaming '", path_,
              "' over the target failed: ", errno_message(errno));
    committed_ = true;
    // Make the rename itself durable. Some file systems cannot fsync a directory (EINVAL):
    // there is nothing more to do on those.
    const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    AMP_CHECK(dfd >= 0, where, ": opening directory '", dir_,
              "' to fsync it failed: ", errno_message(errno));
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    AMP_CHECK(rc == 0 || err == EINVAL, where, ": fsync of directory '", dir_,
              "' failed: ", errno_message(err));
  }

 private:
  std::string path_;
  std::string dir_;
  FilePtr file_;
  bool committed_ = false;
};

// ------------------------------------------------------------------------------------------------
// Reading

struct Entry {
  std::string name;
  const DTypeInfo* info = nullptr;
  Shape shape;
  int64_t begin = -1;
  int64_t end = -1;
};

std::string range_string(const Entry& e) { return detail::concat("[", e.begin, ", ", e.end, "]"); }

// A header must be a JSON object; anything else is told by its first byte.
void check_header_opens_an_object(const std::string& header, const std::string& where) {
  if (!header.empty() && header[0] == '{') return;
  AMP_FAIL(where, ": expected the JSON header to start with '{', got ",
           header.empty() ? std::string("an empty header")
                          : "byte " + std::to_string(static_cast<unsigned char>(header[0])));
}

// A tensor's "dtype" value. A valid safetensors dtype that ampcpp has no tensor type for is told
// apart from a name the format does not know.
const DTypeInfo* dtype_named(const io::JsonReader& r, const std::string& name,
                             const std::string& tensor, size_t at) {
  if (const DTypeInfo* info = info_of(name)) return info;
  const bool known = std::any_of(std::begin(kUnsupportedDTypes), std::end(kUnsupportedDTypes),
                                 [&](const char* s) { return name == s; });
  r.fail_at(at, tensor +
                    ": expected dtype F32, F16, BF16, F64, I64, BOOL, F8_E4M3 or F8_E5M2, got " +
                    (known ? "'" + name + "', which ampcpp does not support"
                           : "unknown dtype '" + name + "'"));
}

// The header's layout, {"__metadata__": {string: string, ...}, name: {"dtype": string,
// "shape": [integer, ...], "data_offsets": [integer, integer]}, ...}, checked token by token as
// the reader hands them over: each tensor name, __metadata__ key and field once, no other
// field, at most kMaxDims non-negative dimensions, exactly two non-negative offsets.
class HeaderSchema final : public io::JsonSchema {
 public:
  HeaderSchema(const io::JsonReader& reader, CheckpointMetadata& metadata)
      : r_(reader), metadata_(metadata) {}

  std::vector<Entry> take_entries() { return std::move(entries_); }

  io::JsonExpected expected_value() const override {
    switch (state_) {
      case State::MetadataValue:
        return {io::JsonKind::String, "a string (a __metadata__ value)"};
      case State::DType:
        return {io::JsonKind::String, "a string (the dtype)"};
      case State::ShapeArray:
      case State::OffsetsArray:
        return {io::JsonKind::Array, "'[' (an array)"};
      case State::Shape:
        return {io::JsonKind::Integer, "an integer (a shape dimension)"};
      case State::Offsets:
        return {io::JsonKind::Integer, "an integer (a data offset)"};
      default:  // the header, __metadata__ and each tensor's entry are objects
        return {io::JsonKind::Object, "'{' (an object)"};
    }
  }

  void start_object(size_t at) override {
    if (state_ == State::Header) state_ = State::Names;
    if (state_ == State::MetadataObject) state_ = State::Metadata;
    if (state_ == State::EntryObject) {
      state_ = State::Fields;
      entry_at_ = at;
    }
  }

  void key(std::string&& key, size_t at) override {
    if (state_ == State::Names) return tensor_name(std::move(key), at);
    if (state_ == State::Metadata) {
      metadata_key_ = std::move(key);
      metadata_key_at_ = at;
      state_ = State::MetadataValue;
      return;
    }
    field(key, at);
  }

  void string(std::string&& value, size_t at) override {
    if (state_ == State::MetadataValue) {
      if (!metadata_.emplace(metadata_key_, std::move(value)).second) {
        r_.fail_at(metadata_key_at_,
                   "expected unique __metadata__ keys, got '" + metadata_key_ + "' twice");
      }
      state_ = State::Metadata;
      return;
    }
    entry_.info = dtype_named(r_, value, tensor_, at);
    state_ = State::Fields;
  }

  void start_array(size_t at) override {
    state_ = state_ == State::ShapeArray ? State::Shape : State::Offsets;
    offsets_at_ = at;
    offsets_ = 0;
  }

  void integer(int64_t v, size_t at) override {
    if (state_ == State::Shape) {
      if (v < 0) {
        r_.fail_at(at,
                   tensor_ + ": expected non-negative shape dimensions, got " + std::to_string(v));
      }
      if (entry_.shape.size() >= static_cast<size_t>(kMaxDims)) {
        r_.fail_at(at, tensor_ + ": expected at most " + std::to_string(kMaxDims) +
                           " dimensions, got more");
      }
      entry_.shape.push_back(v);
      return;
    }
    if (v < 0) {
      r_.fail_at(at, tensor_ + ": expected non-negative data_offsets, got " + std::to_string(v));
    }
    if (offsets_ >= 2) {
      r_.fail_at(at, tensor_ + ": expected data_offsets [begin, end], got more than 2 values");
    }
    (offsets_ == 0 ? entry_.begin : entry_.end) = v;
    ++offsets_;
  }

  void end_array(size_t) override {
    if (state_ == State::Offsets && offsets_ != 2) {
      r_.fail_at(offsets_at_, tensor_ + ": expected data_offsets [begin, end], got " +
                                  std::to_string(offsets_) + " value" + (offsets_ == 1 ? "" : "s"));
    }
    state_ = State::Fields;
  }

  void end_object(size_t) override {
    if (state_ == State::Metadata) {
      state_ = State::Names;
    } else if (state_ == State::Fields) {
      check_no_field_missing();
      entries_.push_back(std::move(entry_));
      state_ = State::Names;
    }
  }

 private:
  // What comes next: a state per place in the layout above.
  enum class State {
    Header,          // the header object
    Names,           // a tensor name, "__metadata__", or the header's end
    MetadataObject,  // __metadata__'s object
    Metadata,        // a __metadata__ key or the object's end
    MetadataValue,   // a __metadata__ value
    EntryObject,     // a tensor's entry
    Fields,          // a field name or the entry's end
    DType,           // the dtype string
    ShapeArray,      // the shape array
    Shape,           // a dimension or the array's end
    OffsetsArray,    // the data_offsets array
    Offsets,         // an offset or the array's end
  };

  void tensor_name(std::string&& name, size_t at) {
    if (name == "__metadata__") {
      if (seen_metadata_) r_.fail_at(at, "expected one \"__metadata__\" key, got a second one");
      seen_metadata_ = true;
      state_ = State::MetadataObject;
      return;
    }
    if (!names_.insert(name).second) {
      r_.fail_at(at, "expected unique tensor names, got '" + name + "' twice");
    }
    tensor_ = "tensor '" + name + "'";
    entry_ = Entry{};
    entry_.name = std::move(name);
    seen_ = FieldsSeen{};
    state_ = State::EntryObject;
  }

  // One of a tensor's three fields, each once.
  void field(const std::string& name, size_t at) {
    const auto once = [&](bool& seen, const char* field) {
      if (seen) r_.fail_at(at, tensor_ + ": expected one \"" + field + "\" field, got two");
      seen = true;
    };
    if (name == "dtype") {
      once(seen_.dtype, "dtype");
      state_ = State::DType;
    } else if (name == "shape") {
      once(seen_.shape, "shape");
      state_ = State::ShapeArray;
    } else if (name == "data_offsets") {
      once(seen_.data_offsets, "data_offsets");
      state_ = State::OffsetsArray;
    } else {
      r_.fail_at(at, tensor_ +
                         ": expected only the fields dtype, shape and data_offsets, got unknown "
                         "field '" +
                         name + "'");
    }
  }

  // Names the fields the entry lacks, at the entry's start.
  void check_no_field_missing() const {
    if (seen_.dtype && seen_.shape && seen_.data_offsets) return;
    std::string missing;
    for (auto [has, name] : {std::pair{seen_.dtype, "dtype"}, std::pair{seen_.shape, "shape"},
                             std::pair{seen_.data_offsets, "data_offsets"}}) {
      if (!has) missing += std::string(missing.empty() ? "" : ", ") + name;
    }
    r_.fail_at(entry_at_,
               tensor_ + ": expected the fields dtype, shape and data_offsets, got no " + missing);
  }

  // Which of a tensor's three fields were read: each must come exactly once.
  struct FieldsSeen {
    bool dtype = false;
    bool shape = false;
    bool data_offsets = false;
  };

  const io::JsonReader& r_;
  CheckpointMetadata& metadata_;
  std::vector<Entry> entries_;
  std::set<std::string> names_;
  bool seen_metadata_ = false;
  State state_ = State::Header;
  std::string metadata_key_;
  size_t metadata_key_at_ = 0;
  Entry entry_;          // the tensor being read
  std::string tensor_;   // "tensor '<name>'", for messages
  size_t entry_at_ = 0;  // where its entry starts
  FieldsSeen seen_;
  size_t offsets_at_ = 0;  // where its data_offsets array starts
  int offsets_ = 0;        // how many offsets it has so far
};

// Parses the header into tensor entries and metadata; checks the JSON and each entry's fields.
std::vector<Entry> parse_header(const std::string& header, const std::string& where,
                                CheckpointMetadata& metadata) {
  check_header_opens_an_object(header, where);
  io::JsonReader reader(header, where + ": header");
  HeaderSchema schema(reader, metadata);
  reader.read(schema);
  return schema.take_entries();
}

// Checks every entry's byte range against its shape and the data section, and that the ranges
// tile the data section exactly (the reference loader requires it), before anything is read.
void validate_layout(std::vector<Entry>& entries, uint64_t data_bytes, const std::string& where) {
  for (const Entry& e : entries) {
    const std::string tensor = where + ": tensor '" + e.name + "'";
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      AMP_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel), tensor,
                ": expected a shape whose element count fits in 64 bits, got ",
                shape_json(e.shape));
    }
    const uint64_t esize = element_size(e.info->dtype);
    uint64_t nbytes = 0;
    AMP_CHECK(!__builtin_mul_overflow(numel, esize, &nbytes), tensor,
              ": expected a byte size that fits in 64 bits, got shape ", shape_json(e.shape),
              " of ", esize, "-byte ", e.info->name);
    AMP_CHECK(e.begin <= e.end, tensor,
              ": expected data_offsets [begin, end] with begin <= end, got ", range_string(e));
    AMP_CHECK(static_cast<uint64_t>(e.end) <= data_bytes, tensor,
              ": expected data_offsets within the data section of ", data_bytes, " bytes, got ",
              range_string(e), " (out of range: truncated file?)");
    const uint64_t span = static_cast<uint64_t>(e.end - e.begin);
    AMP_CHECK(span == nbytes, tensor, ": expected data_offsets spanning ", nbytes, " bytes (shape ",
              shape_json(e.shape), " x ", esize, "-byte ", e.info->name, "), got ", range_string(e),
              " (", span, " bytes)");
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  int64_t cursor = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    AMP_CHECK(e.begin >= cursor, where, ": expected tensors not to overlap, got tensor '", e.name,
              "' at ", range_string(e), " overlapping tensor '",
              previous ? previous->name : std::string(), "' at ",
              previous ? range_string(*previous) : std::string());
    AMP_CHECK(e.begin == cursor, where,
              ": expected the tensors to cover the data section without "
              "gaps, got bytes [",
              cursor, ", ", e.begin, ") before tensor '", e.name, "' in no tensor");
    cursor = e.end;
    previous = &e;
  }
  AMP_CHECK(static_cast<uint64_t>(cursor) == data_bytes, where,
            ": expected the tensors to cover the data section of ", data_bytes,
            " bytes, got bytes [", cursor, ", ", data_bytes, ") in no tensor");
}

void read_exact(std::FILE* f, void* dst, size_t n, const std::string& where, const char* what) {
  if (n == 0) return;
  const size_t got = std::fread(dst, 1, n, f);
  if (got != n) {
    AMP_FAIL(where, ": expected ", n, " bytes of ", what, ", got ", got,
             std::ferror(f) ? ": " + errno_message(errno)
                            : std::string(" (the file changed while it was read?)"));
  }
}

}  // namespace

void save(const StateDict& state, const std::string& path) { save(state, path, {}); }

void save(const StateDict& state, const std::string& path, const CheckpointMetadata& metadata) {
  const std::string where = "save '" + path + "'";
  AMP_CHECK(!path.empty(), "save: expected a file path, got an empty string");
  for (const auto& [k, v] : metadata) {
    AMP_CHECK(io::is_valid_utf8(k) && io::is_valid_utf8(v), where,
              ": expected UTF-8 metadata, got invalid UTF-8 in the entry for key ",
              io::json_quote(k));
  }
  struct Item {
    const std::string* name;
    const Tensor* tensor;
    const DTypeInfo* info;
  };
  std::vector<Item> items;
  items.reserve(state.size());
  for (const auto& [name, tensor] : state) {
    AMP_CHECK(tensor.defined(), where, ": expected a defined tensor for key '", name,
              "', got an undefined tensor");
    AMP_CHECK(name != "__metadata__", where,
              ": expected tensor names other than \"__metadata__\" (the format reserves it), "
              "got a tensor named \"__metadata__\"");
    AMP_CHECK(io::is_valid_utf8(name), where, ": expected UTF-8 tensor names, got ",
              io::json_quote(name));
    items.push_back({&name, &tensor, &info_of(tensor.dtype())});
  }
  // The reference serializer's order: decreasing alignment, then name (std::map order already).
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.info->rank > b.info->rank; });

  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      header += io::json_quote(k) + ":" + io::json_quote(v);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const Item& item : items) {
    const uint64_t nbytes =
        static_cast<uint64_t>(item.tensor->numel()) * element_size(item.tensor->dtype());
    if (!first) header += ',';
    first = false;
    header += io::json_quote(*item.name) + ":{\"dtype\":\"" + item.info->name +
              "\",\"shape\":" + shape_json(item.tensor->sizes()) + ",\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  header += "}";
  // Pad with spaces to a multiple of 8 so the data section starts 8-aligned, as the reference.
  header.append((8 - header.size() % 8) % 8, ' ');

  const SaveTarget target = resolve_save_target(path, where);
  TempFile tmp(target.path, target.mode, where);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  tmp.write(length, sizeof(length), where);
  tmp.write(header.data(), header.size(), where);
  for (const Item& item : items) {
    // One tensor at a time on the CPU, so CUDA state never needs a second full copy.
    const Tensor packed = item.tensor->detach().to(Device::cpu()).contiguous();
    tmp.write(packed.data_ptr(), static_cast<size_t>(packed.numel()) * element_size(packed.dtype()),
              where);
  }
  tmp.commit(target.path, where);
}

StateDict load(const std::string& path) { return load(path, nullptr); }

StateDict load(const std::string& path, CheckpointMetadata* metadata_out) {
  const std::string where = "load '" + path + "'";
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  AMP_CHECK(!ec && fs::exists(st), where, ": cannot open: no such file");
  AMP_CHECK(fs::is_regular_file(st), where, ": expected a regular file, got ",
            fs::is_directory(st) ? "a directory" : "a special file");
  FilePtr file(std::fopen(path.c_str(), "rb"));
  AMP_CHECK(file, where, ": cannot open: ", errno_message(errno));
  std::FILE* f = file.get();
  AMP_CHECK(::fseeko(f, 0, SEEK_END) == 0, where, ": cannot seek: ", errno_message(errno));
  const off_t file_size_signed = ::ftello(f);
  AMP_CHECK(file_size_signed >= 0, where, ": cannot tell the file size: ", errno_message(errno));
  AMP_CHECK(::fseeko(f, 0, SEEK_SET) == 0, where, ": cannot seek: ", errno_message(errno));
  const auto file_size = static_cast<uint64_t>(file_size_signed);

  AMP_CHECK(file_size >= 8, where,
            ": expected at least 8 bytes (the header length), got a file of ", file_size, " bytes");
  unsigned char length[8];
  read_exact(f, length, sizeof(length), where, "header length");
  uint64_t header_bytes = 0;
  for (int i = 0; i < 8; ++i) header_bytes |= static_cast<uint64_t>(length[i]) << (8 * i);
  AMP_CHECK(header_bytes <= kMaxHeaderBytes, where, ": expected a header length of at most ",
            kMaxHeaderBytes, " bytes, got ", header_bytes, " (not a safetensors file?)");
  AMP_CHECK(header_bytes <= file_size - 8, where, ": expected a header length of at most the ",
            file_size - 8, " bytes that follow it, got ", header_bytes, " (truncated file?)");

  std::string header(header_bytes, '\0');
  read_exact(f, header.data(), header.size(), where, "JSON header");
  CheckpointMetadata metadata;
  std::vector<Entry> entries = parse_header(header, where, metadata);
  header.clear();
  header.shrink_to_fit();
  const uint64_t data_bytes = file_size - 8 - header_bytes;
  validate_layout(entries, data_bytes, where);

  // Everything checked: allocations now total exactly the data section.
  StateDict out;
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, {.dtype = e.info->dtype});
    const auto nbytes = static_cast<size_t>(e.end - e.begin);
    read_exact(f, t.data_ptr(), nbytes, where, ("tensor '" + e.name + "'").c_str());
    if (e.info->dtype == DType::Bool) {
      // Any other byte would be an invalid C++ bool; PyTorch only writes 0 and 1.
      const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
      for (size_t i = 0; i < nbytes; ++i) {
        AMP_CHECK(bytes[i] <= 1, where, ": tensor '", e.name, "': expected BOOL bytes 0 or 1, got ",
                  static_cast<int>(bytes[i]), " at element ", i);
      }
    }
    out.emplace(e.name, std::move(t));
  }
  if (metadata_out) *metadata_out = std::move(metadata);
  return out;
}

}  // namespace amp
