// A strict reader for the JSON subset that safetensors headers use (objects, arrays, strings,
// integers), and the matching writer-side string quoting.
//
// nlohmann-json's SAX parser does the lexing: escapes, surrogate pairs, UTF-8 validation, the
// grammar. This reader adds what the format needs on top of it: every event carries the byte
// offset of its token; fractions, exponents, true/false/null and trailing bytes are refused at
// once; and every error names the caller's context, the byte offset, what was expected and what
// was found. The caller's JsonSchema says which value it accepts next, so a value of the wrong
// kind is refused before the schema sees it, and nesting never goes deeper than the schema.
// No document tree is built: memory stays proportional to what the schema keeps. Internal to
// ampcpp; nlohmann-json appears only in json_reader.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace amp::io {

enum class JsonKind { Object, Array, String, Integer };

// The value a schema accepts next: its kind, and how errors name it ("a string (the dtype)").
struct JsonExpected {
  JsonKind kind;
  const char* what;
};

// The caller's side of JsonReader::read: one call per token, with the token's byte offset.
// A value call comes only for the kind expected_value() named; key and end_object only inside
// an object, end_array only inside an array. A schema refuses with JsonReader::fail_at.
class JsonSchema {
 public:
  virtual ~JsonSchema() = default;
  virtual JsonExpected expected_value() const = 0;
  virtual void start_object(size_t at) = 0;
  virtual void key(std::string&& key, size_t at) = 0;
  virtual void end_object(size_t at) = 0;
  virtual void start_array(size_t at) = 0;
  virtual void end_array(size_t at) = 0;
  virtual void string(std::string&& value, size_t at) = 0;
  virtual void integer(int64_t value, size_t at) = 0;
};

class JsonReader {
 public:
  // `context` starts every error message, e.g. "load '/ckpt/model.safetensors': header".
  JsonReader(std::string_view text, std::string context);

  // Reads the text as one value followed only by whitespace, calling `schema` for each token.
  void read(JsonSchema& schema);

  // Raises amp::Error: "<context> at byte <offset>: <message>".
  [[noreturn]] void fail_at(size_t offset, const std::string& message) const;
  // Raises amp::Error: "<context> at byte <offset>: expected <expected>, got <what is there>".
  [[noreturn]] void fail_expected(size_t offset, const std::string& expected) const;

 private:
  std::string_view text_;
  std::string context_;
};

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool is_valid_utf8(std::string_view s);

// `s` (UTF-8) as a JSON string literal, escaped as serde_json (the safetensors reference
// serializer) and Python's json module with ensure_ascii=False do: \" \\ \b \f \n \r \t,
// other control characters as \u00xx (lowercase hex), everything else verbatim.
std::string json_quote(std::string_view s);

}  // namespace amp::io
