// A strict pull reader for the JSON subset that safetensors headers use (objects, arrays,
// strings with escapes, integers), and the matching writer-side string quoting.
//
// The reader builds no document tree: the caller walks the structure it expects
// (read_object / read_array / read_string / read_integer), so memory stays proportional to what
// the caller keeps. Anything outside the subset (fractions, exponents, true/false/null, invalid
// UTF-8, raw control characters, lone surrogates, trailing garbage) raises amp::Error with the
// caller's context, the byte offset, what was expected and what was found. Internal to ampcpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace amp::io {

class JsonReader {
 public:
  // `context` starts every error message, e.g. "load '/ckpt/model.safetensors': header".
  JsonReader(std::string_view text, std::string context);

  // Reads '{' ( string ':' <member> ( ',' string ':' <member> )* )? '}', calling
  // on_member(key) with the reader positioned at the member's value; on_member must consume it.
  template <class F>
  void read_object(F&& on_member) {
    expect('{', "'{' (an object)");
    if (consume('}')) return;
    while (true) {
      skip_whitespace();
      if (peek() != '"') fail("a string (an object key)");
      const std::string key = read_string();
      expect(':', "':' after the object key");
      on_member(key);
      if (consume('}')) return;
      expect(',', "',' or '}' in an object");
    }
  }

  // Reads '[' ( <element> ( ',' <element> )* )? ']', calling on_element() at each element.
  template <class F>
  void read_array(F&& on_element) {
    expect('[', "'[' (an array)");
    if (consume(']')) return;
    while (true) {
      on_element();
      if (consume(']')) return;
      expect(',', "',' or ']' in an array");
    }
  }

  // A JSON string, unescaped to UTF-8; `what` names it in the error when something else is there.
  std::string read_string(const char* what = "a string");
  // A JSON integer in the int64 range (sign allowed).
  int64_t read_integer(const char* what = "an integer");
  void expect_end();  // only whitespace may follow

  // True (and consumed) when the next non-whitespace byte is `c`.
  bool consume(char c);
  // Consumes `c` after whitespace, or fails with "expected <what>".
  void expect(char c, const char* what);

  // Byte offset of the reader in the text.
  size_t offset() const { return pos_; }
  // Raises amp::Error: "<context> at byte <offset>: expected <expected>, got <what is there>".
  [[noreturn]] void fail(const std::string& expected) const;
  [[noreturn]] void fail_at(size_t offset, const std::string& message) const;

 private:
  void skip_whitespace();
  int peek() const { return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1; }
  std::string describe_here() const;
  uint32_t read_hex4();

  std::string_view text_;
  std::string context_;
  size_t pos_ = 0;
};

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool is_valid_utf8(std::string_view s);

// `s` (UTF-8) as a JSON string literal, escaped as serde_json (the safetensors reference
// serializer) and Python's json module with ensure_ascii=False do: \" \\ \b \f \n \r \t,
// other control characters as \u00xx (lowercase hex), everything else verbatim.
std::string json_quote(std::string_view s);

}  // namespace amp::io
