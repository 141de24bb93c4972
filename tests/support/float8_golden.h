// The reader of tests/data/float8_golden.txt (tests/reference/make_float8_golden.py): each fp8
// format's 256 decoded values and the codes the OCP reference gives for every bfloat16 and
// binary16 bit pattern, fp32 and float64 points around every rounding tie, and a sweep of fp32
// bit patterns, for the plain (PyTorch) and the saturating cast. Shared by the scalar tests
// (tests/core/test_float8.cpp) and the tensor conversion tests (tests/fp8/test_fp8_tensor.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace amp_test::float8_golden {

// The four conversions a golden row gives codes for, in the file's column order.
enum Column { kE4M3Plain, kE4M3Saturated, kE5M2Plain, kE5M2Saturated, kColumns };
inline const char* const kColumnNames[kColumns] = {"e4m3fn.plain", "e4m3fn.saturated", "e5m2.plain",
                                                   "e5m2.saturated"};

struct Point {
  std::string text;  // as written in the file, for messages
  double value = 0;
  std::array<uint8_t, kColumns> codes{};
};

struct Golden {
  std::map<std::string, std::vector<double>> decoded;  // "e4m3fn" -> 256 values
  std::map<std::string, std::vector<uint8_t>> tables;  // "bf16.e5m2.plain" -> codes
  std::vector<Point> points32, points64;
  uint32_t sweep_stride = 0;
  uint64_t sweep_count = 0;
};

// The file, read once (a malformed line fails the calling test case, naming the line).
const Golden& golden();
// The run-length table `name` ("bf16.e4m3fn.plain", "fp32.e5m2.saturated", ...).
const std::vector<uint8_t>& table(const std::string& name);

}  // namespace amp_test::float8_golden
