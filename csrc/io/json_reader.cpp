// The strict JSON subset reader over nlohmann-json's SAX parser (csrc/io/json_reader.h).
#include "csrc/io/json_reader.h"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "csrc/core/macros.h"

namespace amp::io {

namespace {

// Length of the UTF-8 sequence starting at s[i] when it is well-formed, 0 otherwise
// (RFC 3629: no overlong forms, no UTF-16 surrogates, nothing above U+10FFFF).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    const unsigned char b1 = byte(i + 1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;  // overlong
    if (b0 == 0xED && b1 > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    const unsigned char b1 = byte(i + 1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && b1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02X", b);
  return buf;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string json_quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

namespace {

// The offsets of the tokens behind the parser's events. nlohmann's SAX interface passes no
// positions, so this walks the text the parser has already accepted, one token per event (the
// ',' and ':' separators have no event and are skipped): the text is valid up to there, so
// finding where each token ends is all there is to do.
class TokenCursor {
 public:
  explicit TokenCursor(std::string_view text) : text_(text) {}

  // The offset of the next token; the cursor moves past it.
  size_t next() {
    pos_ = skip_whitespace(pos_);
    while (text_[pos_] == ',' || text_[pos_] == ':') pos_ = skip_whitespace(pos_ + 1);
    const size_t start = pos_;
    pos_ = token_end(start);
    return start;
  }
  // Just after the last token an event was for.
  size_t end() const { return pos_; }
  size_t skip_whitespace(size_t i) const {
    while (i < text_.size() &&
           (text_[i] == ' ' || text_[i] == '\t' || text_[i] == '\n' || text_[i] == '\r')) {
      ++i;
    }
    return i;
  }

 private:
  size_t token_end(size_t start) const {
    size_t i = start;
    switch (text_[start]) {
      case '"':
        for (++i; text_[i] != '"'; ++i) {
          if (text_[i] == '\\') ++i;
        }
        return i + 1;
      case 't':
      case 'n':
        return start + 4;
      case 'f':
        return start + 5;
      case '{':
      case '}':
      case '[':
      case ']':
        return start + 1;
      default:  // a number: an integer part ("0" alone, as JSON wants), then any fraction
                // and exponent
        if (text_[i] == '-') ++i;
        if (text_[i] == '0') {
          ++i;
        } else {
          while (i < text_.size() && is_digit(text_[i])) ++i;
        }
        if (i < text_.size() && (text_[i] == '.' || text_[i] == 'e' || text_[i] == 'E')) {
          while (i < text_.size() &&
                 (is_digit(text_[i]) ||
                  std::string_view(".eE+-").find(text_[i]) != std::string_view::npos)) {
            ++i;
          }
        }
        return i;
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string describe(std::string_view text, size_t at) {
  if (at >= text.size()) return "the end of the header";
  const auto c = static_cast<unsigned char>(text[at]);
  if (c == '"') return "a string";
  if (c == '-' || (c >= '0' && c <= '9')) return "a number";
  if (c == '{') return "an object";
  if (c == '[') return "an array";
  for (const char* literal : {"true", "false", "null"}) {
    if (text.substr(at).starts_with(literal)) return std::string("the literal ") + literal;
  }
  if (c >= 0x21 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  return "byte " + hex_byte(c);
}

bool has_fraction_or_exponent(std::string_view number) {
  return number.find_first_of(".eE") != std::string_view::npos;
}

// nlohmann's SAX handler: checks each value's kind against the schema, hands the schema the
// values with their offsets, and turns the parser's errors into this reader's messages.
class StrictHandler {
 public:
  StrictHandler(std::string_view text, const JsonReader& reader, JsonSchema& schema)
      : text_(text), reader_(reader), schema_(schema), cursor_(text) {}

  bool null() { return refuse(next_token()); }
  bool boolean(bool) { return refuse(next_token()); }
  // nlohmann hands non-negative integers to number_unsigned, negative ones to number_integer,
  // and those beyond the 64-bit ranges to number_float.
  bool number_integer(int64_t value) { return integer(value, next_token()); }
  bool number_unsigned(uint64_t value) {
    const size_t at = next_token();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return out_of_range_or_fractional(at);
    }
    return integer(static_cast<int64_t>(value), at);
  }
  bool number_float(double, const std::string&) { return out_of_range_or_fractional(next_token()); }
  bool string(std::string& value) {
    const size_t at = next_token();
    if (schema_.expected_value().kind != JsonKind::String) return refuse(at);
    schema_.string(std::move(value), at);
    after_value();
    return true;
  }
  bool binary(nlohmann::json::binary_t&) { return refuse(next_token()); }  // not in JSON text
  bool start_object(size_t) {
    const size_t at = next_token();
    if (schema_.expected_value().kind != JsonKind::Object) return refuse(at);
    open_.push_back(true);
    last_ = Last::Opened;
    schema_.start_object(at);
    return true;
  }
  bool key(std::string& key) {
    const size_t at = next_token();
    last_ = Last::Key;
    schema_.key(std::move(key), at);
    return true;
  }
  bool end_object() {
    const size_t at = next_token();
    open_.pop_back();
    schema_.end_object(at);
    after_value();
    // nlohmann takes a NUL byte for the end of the input; the header must end in whitespace.
    if (open_.empty()) {
      const size_t rest = cursor_.skip_whitespace(cursor_.end());
      if (rest != text_.size()) {
        reader_.fail_expected(rest, "only whitespace after the top-level object");
      }
    }
    return true;
  }
  bool start_array(size_t) {
    const size_t at = next_token();
    if (schema_.expected_value().kind != JsonKind::Array) return refuse(at);
    open_.push_back(false);
    last_ = Last::Opened;
    schema_.start_array(at);
    return true;
  }
  bool end_array() {
    const size_t at = next_token();
    open_.pop_back();
    schema_.end_array(at);
    after_value();
    return true;
  }

  // `position`: the bytes the lexer has read, the byte it stopped at included.
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& e) {
    // The token at fault follows the last one an event was for, past at most one separator
    // the parser accepted (one it refused is itself the token at fault).
    size_t at = cursor_.skip_whitespace(cursor_.end());
    char separator = 0;
    if (at < text_.size() && (text_[at] == ',' || text_[at] == ':') && position > at + 1) {
      separator = text_[at];
      at = cursor_.skip_whitespace(at + 1);
    }
    // "02": nlohmann reads the integer 0, then refuses the 2 after it.
    if (last_integer_at_ && at == cursor_.end() && at < text_.size() && text_[at] >= '0' &&
        text_[at] <= '9') {
      reader_.fail_at(*last_integer_at_,
                      "expected an integer without leading zeros, got one with a leading zero");
    }
    const Expected expected = expected_here(separator);
    const char c = at < text_.size() ? text_[at] : '\0';
    if (expected.kind == JsonKind::String && c == '"') string_error(at, position - 1, e);
    if (expected.kind == JsonKind::Integer && (c == '-' || (c >= '0' && c <= '9')) &&
        has_fraction_or_exponent(text_.substr(at, position - at))) {
      reader_.fail_at(at, "expected an integer, got a number with a fraction or an exponent");
    }
    reader_.fail_expected(at, expected.what);
  }

 private:
  enum class Last { Opened, Key, Value };

  size_t next_token() {
    last_integer_at_.reset();
    return cursor_.next();
  }
  struct Expected {
    JsonKind kind;
    std::string what;
  };

  void after_value() { last_ = Last::Value; }

  bool integer(int64_t value, size_t at) {
    if (schema_.expected_value().kind != JsonKind::Integer) return refuse(at);
    schema_.integer(value, at);
    after_value();
    last_integer_at_ = at;
    return true;
  }

  [[noreturn]] bool refuse(size_t at) { reader_.fail_expected(at, schema_.expected_value().what); }

  [[noreturn]] bool out_of_range_or_fractional(size_t at) {
    if (schema_.expected_value().kind != JsonKind::Integer) refuse(at);
    if (has_fraction_or_exponent(text_.substr(at, cursor_.end() - at))) {
      reader_.fail_at(at, "expected an integer, got a number with a fraction or an exponent");
    }
    reader_.fail_at(at, "expected an integer in the 64-bit range, got " +
                            std::string(text_.substr(at, cursor_.end() - at)));
  }

  // What the grammar and the schema accept where the parser stopped; `separator` is the ',' or
  // ':' it accepted after the last token, if any.
  Expected expected_here(char separator) const {
    if (open_.empty()) return {JsonKind::Object, "only whitespace after the top-level object"};
    const JsonExpected value = schema_.expected_value();
    const Expected key{JsonKind::String, "a string (an object key)"};
    if (open_.back()) {  // in an object
      if (last_ == Last::Opened) return key;
      if (last_ == Last::Key) {
        if (separator == ':') return {value.kind, value.what};
        return {JsonKind::Object, "':' after the object key"};
      }
      if (separator == ',') return key;
      return {JsonKind::Object, "',' or '}' in an object"};
    }
    if (last_ == Last::Opened || separator == ',') return {value.kind, value.what};
    return {JsonKind::Array, "',' or ']' in an array"};
  }

  // A string the lexer refused: the token starts at `at`, and the lexer stopped at byte `stop`
  // (the text's size at the end of the header). nlohmann's message says what it found.
  [[noreturn]] void string_error(size_t at, size_t stop, const nlohmann::detail::exception& e) {
    const std::string_view what = e.what();
    const auto says = [&](const char* s) { return what.find(s) != std::string_view::npos; };
    const auto byte_at = [&](size_t i) { return i < text_.size() ? text_[i] : '\0'; };
    if (says("missing closing quote")) {
      reader_.fail_at(at, "unterminated string (no closing '\"' before the end of the header)");
    }
    if (says("control character")) {
      reader_.fail_at(stop, "expected an escaped control character in a string, got raw byte " +
                                hex_byte(static_cast<unsigned char>(byte_at(stop))));
    }
    if (says("forbidden character after backslash")) {
      reader_.fail_expected(stop,
                            "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) after '\\'");
    }
    if (says("4 hex digits")) reader_.fail_expected(stop, "4 hex digits after \\u");
    if (says("must follow U+D800")) {
      reader_.fail_at(stop - 5,
                      "expected a code point or a leading surrogate, got a lone trailing "
                      "surrogate \\u escape");
    }
    if (says("must be followed by U+DC00")) {
      // The lexer stopped after the leading \uXXXX at a byte other than '\' (stop - 6), at a
      // '\' without 'u' (stop - 7), or at the end of a second \uXXXX that is no trailing one.
      if (byte_at(stop - 1) == '\\') leading_without_trailing(stop - 7);
      if (byte_at(stop - 6) == '\\' && byte_at(stop - 5) == 'u') leading_without_trailing(stop - 6);
      reader_.fail_at(stop - 11,
                      "expected a trailing surrogate (\\uDC00-\\uDFFF) after a leading surrogate, "
                      "got another code point");
    }
    if (says("ill-formed UTF-8")) {
      // The lexer stops at the byte that ends the sequence; the message names its first byte.
      size_t lead = at + 1;
      while (lead < stop) {
        const size_t n = utf8_sequence_length(text_, lead);
        if (n == 0) break;
        lead += n;
      }
      reader_.fail_at(lead, "expected UTF-8 text in a string, got invalid UTF-8 byte " +
                                hex_byte(static_cast<unsigned char>(byte_at(lead))));
    }
    reader_.fail_at(
        at, std::string("expected a valid string, got one nlohmann-json refuses: ") + e.what());
  }

  [[noreturn]] void leading_without_trailing(size_t escape_at) {
    reader_.fail_at(escape_at,
                    "expected a trailing surrogate \\u escape after a leading surrogate, got none");
  }

  std::string_view text_;
  const JsonReader& reader_;
  JsonSchema& schema_;
  TokenCursor cursor_;
  std::vector<bool> open_;  // the containers open, innermost last: true for an object
  Last last_ = Last::Opened;
  std::optional<size_t> last_integer_at_;  // the last event's offset when it was an integer
};

}  // namespace

JsonReader::JsonReader(std::string_view text, std::string context)
    : text_(text), context_(std::move(context)) {}

void JsonReader::fail_at(size_t offset, const std::string& message) const {
  AMP_FAIL(context_, " at byte ", offset, ": ", message);
}

void JsonReader::fail_expected(size_t offset, const std::string& expected) const {
  fail_at(offset, "expected " + expected + ", got " + describe(text_, offset));
}

void JsonReader::read(JsonSchema& schema) {
  StrictHandler handler(text_, *this, schema);
  // Every refusal throws from the handler; strict: the value must be the whole text.
  nlohmann::json::sax_parse(text_.begin(), text_.end(), &handler,
                            nlohmann::json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
}

}  // namespace amp::io
