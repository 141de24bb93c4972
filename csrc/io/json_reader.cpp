// The strict JSON subset reader (csrc/io/json_reader.h).
#include "csrc/io/json_reader.h"

#include <cstdio>
#include <limits>

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

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
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

JsonReader::JsonReader(std::string_view text, std::string context)
    : text_(text), context_(std::move(context)) {}

void JsonReader::fail_at(size_t offset, const std::string& message) const {
  AMP_FAIL(context_, " at byte ", offset, ": ", message);
}

void JsonReader::fail(const std::string& expected) const {
  fail_at(pos_, "expected " + expected + ", got " + describe_here());
}

std::string JsonReader::describe_here() const {
  const int c = peek();
  if (c < 0) return "the end of the header";
  if (c == '"') return "a string";
  if (c == '-' || (c >= '0' && c <= '9')) return "a number";
  if (c == '{') return "an object";
  if (c == '[') return "an array";
  for (const char* literal : {"true", "false", "null"}) {
    if (text_.substr(pos_).starts_with(literal)) return std::string("the literal ") + literal;
  }
  if (c >= 0x21 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  return "byte " + hex_byte(static_cast<unsigned char>(c));
}

void JsonReader::skip_whitespace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
}

bool JsonReader::consume(char c) {
  skip_whitespace();
  if (peek() != static_cast<unsigned char>(c)) return false;
  ++pos_;
  return true;
}

void JsonReader::expect(char c, const char* what) {
  if (!consume(c)) fail(what);
}

void JsonReader::expect_end() {
  skip_whitespace();
  if (pos_ != text_.size()) fail("only whitespace after the top-level object");
}

uint32_t JsonReader::read_hex4() {
  uint32_t value = 0;
  for (int k = 0; k < 4; ++k) {
    const int c = peek();
    uint32_t digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      fail("4 hex digits after \\u");
    }
    value = value * 16 + digit;
    ++pos_;
  }
  return value;
}

std::string JsonReader::read_string(const char* what) {
  skip_whitespace();
  const size_t start = pos_;
  if (peek() != '"') fail(what);
  ++pos_;
  std::string out;
  while (true) {
    const int c = peek();
    if (c < 0) fail_at(start, "unterminated string (no closing '\"' before the end of the header)");
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c < 0x20) {
      fail_at(pos_, "expected an escaped control character in a string, got raw byte " +
                        hex_byte(static_cast<unsigned char>(c)));
    }
    if (c == '\\') {
      ++pos_;
      const int e = peek();
      ++pos_;
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          const size_t escape_at = pos_ - 2;
          uint32_t cp = read_hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_at(escape_at,
                    "expected a code point or a leading surrogate, got a lone "
                    "trailing surrogate \\u escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (peek() != '\\' || pos_ + 1 >= text_.size() || text_[pos_ + 1] != 'u') {
              fail_at(escape_at,
                      "expected a trailing surrogate \\u escape after a leading "
                      "surrogate, got none");
            }
            pos_ += 2;
            const uint32_t low = read_hex4();
            if (low < 0xDC00 || low > 0xDFFF) {
              fail_at(escape_at,
                      "expected a trailing surrogate (\\uDC00-\\uDFFF) after a "
                      "leading surrogate, got another code point");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) after '\\'");
      }
      continue;
    }
    const size_t n = utf8_sequence_length(text_, pos_);
    if (n == 0) {
      fail_at(pos_, "expected UTF-8 text in a string, got invalid UTF-8 byte " +
                        hex_byte(static_cast<unsigned char>(c)));
    }
    out.append(text_.substr(pos_, n));
    pos_ += n;
  }
}

int64_t JsonReader::read_integer(const char* what) {
  skip_whitespace();
  const size_t start = pos_;
  const bool negative = peek() == '-';
  if (negative) ++pos_;
  const int first = peek();
  if (first < '0' || first > '9') {
    pos_ = start;
    fail(what);
  }
  if (first == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9') {
    fail_at(start, "expected an integer without leading zeros, got one with a leading zero");
  }
  // Accumulate as a negative number so that INT64_MIN is representable.
  int64_t value = 0;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  while (peek() >= '0' && peek() <= '9') {
    const int digit = peek() - '0';
    if (value < (kMin + digit) / 10) {
      fail_at(start, "expected an integer in the 64-bit range, got one with more digits");
    }
    value = value * 10 - digit;
    ++pos_;
  }
  if (peek() == '.' || peek() == 'e' || peek() == 'E') {
    fail_at(start, "expected an integer, got a number with a fraction or an exponent");
  }
  if (negative) return value;
  if (value == kMin) {
    fail_at(start, "expected an integer in the 64-bit range, got 9223372036854775808");
  }
  return -value;
}

}  // namespace amp::io
