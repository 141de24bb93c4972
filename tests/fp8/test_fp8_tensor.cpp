// Specification of fp8 tensors (DType::Float8_e4m3fn, DType::Float8_e5m2; docs/fp8.md): every
// conversion through the tensor copy kernels (to(), copy_) and the saturating quantizer
// (amp::fp8::quantize) is compared code for code with tests/data/float8_golden.txt, the OCP
// reference of tests/reference/make_float8_golden.py (float64 math, no code shared with the
// library): all 256 codes decode exactly into every floating dtype, and every bfloat16 and
// binary16 bit pattern, fp32 and float64 points at every rounding tie and a sweep of fp32 bit
// patterns round to the reference's codes, contiguous and strided. Ops without fp8 kernels raise
// amp::Error naming the op and the dtype, as PyTorch's do.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "csrc/ops/fp8_quantize.h"
#include "tests/support/float8_golden.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;
using namespace amp_test::float8_golden;

constexpr DType kFormats[] = {DType::Float8_e4m3fn, DType::Float8_e5m2};

// "e4m3fn" / "e5m2": the golden file's name of a format.
std::string golden_name(DType fp8) { return fp8 == DType::Float8_e4m3fn ? "e4m3fn" : "e5m2"; }

// The golden column of a format and cast.
Column column_of(DType fp8, bool saturated) {
  if (fp8 == DType::Float8_e4m3fn) return saturated ? kE4M3Saturated : kE4M3Plain;
  return saturated ? kE5M2Saturated : kE5M2Plain;
}

std::string hex(uint64_t v, int digits) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << std::setw(digits) << std::setfill('0') << v;
  return out.str();
}

// A 1-d tensor of `dtype` holding the given raw element bits (1, 2 or 4 bytes each).
template <class Bits>
Tensor from_bits(const std::vector<Bits>& bits, DType dtype) {
  BOOST_TEST_REQUIRE(amp::element_size(dtype) == sizeof(Bits));
  Tensor t = amp::empty({static_cast<int64_t>(bits.size())}, {.dtype = dtype});
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * sizeof(Bits));
  return t;
}

// The raw bits of every element, row-major.
template <class Bits>
std::vector<Bits> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous().to(amp::Device::cpu());
  BOOST_TEST_REQUIRE(amp::element_size(c.dtype()) == sizeof(Bits));
  std::vector<Bits> out(static_cast<size_t>(c.numel()));
  std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(Bits));
  return out;
}

std::vector<uint8_t> every_code() {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  return codes;
}

std::vector<uint16_t> every_16_bit_pattern() {
  std::vector<uint16_t> bits(65536);
  for (uint32_t b = 0; b < 65536; ++b) bits[b] = static_cast<uint16_t>(b);
  return bits;
}

// Compares codes one by one; reports the first few mismatches with their input.
template <class Describe>
void check_codes(const std::string& what, const std::vector<uint8_t>& want,
                 const std::vector<uint8_t>& got, const Describe& input) {
  BOOST_TEST_REQUIRE(want.size() == got.size(), what << ": sizes differ");
  size_t failed = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) [[likely]]
      continue;
    if (++failed <= 10) {
      BOOST_ERROR(what << ": " << input(i) << " -> expected " << hex(want[i], 2) << ", got "
                       << hex(got[i], 2));
    }
  }
  BOOST_TEST(failed == 0u, what << ": " << failed << " of " << want.size() << " codes wrong");
}

// A decoded value equals the reference: the same bits, or a NaN of the same sign.
bool same_value(double want, double got) {
  if (std::isnan(want)) return std::isnan(got) && std::signbit(got) == std::signbit(want);
  return std::bit_cast<uint64_t>(want) == std::bit_cast<uint64_t>(got);
}

// A tensor's values as doubles, widened on the host by the storage types' exact conversions
// (not through the copy kernel under test).
std::vector<double> host_values(const Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == DType::Float32) {
    for (uint32_t b : bits_of<uint32_t>(t)) out.push_back(std::bit_cast<float>(b));
  } else if (t.dtype() == DType::Float64) {
    for (uint64_t b : bits_of<uint64_t>(t)) out.push_back(std::bit_cast<double>(b));
  } else if (t.dtype() == DType::Float16) {
    for (uint16_t b : bits_of<uint16_t>(t)) out.push_back(float(amp::Half::from_bits(b)));
  } else {
    BOOST_TEST_REQUIRE((t.dtype() == DType::BFloat16));
    for (uint16_t b : bits_of<uint16_t>(t)) out.push_back(float(amp::BFloat16::from_bits(b)));
  }
  return out;
}

BOOST_AUTO_TEST_SUITE(fp8_tensor)

BOOST_AUTO_TEST_CASE(fp8_dtypes_are_one_byte_floating_types_named_as_in_pytorch) {
  BOOST_TEST(amp::dtype_name(DType::Float8_e4m3fn) == std::string("Float8_e4m3fn"));
  BOOST_TEST(amp::dtype_name(DType::Float8_e5m2) == std::string("Float8_e5m2"));
  for (DType fp8 : kFormats) {
    BOOST_TEST(amp::element_size(fp8) == 1u);
    BOOST_TEST(amp::is_floating_point(fp8));
    BOOST_TEST(amp::is_float8(fp8));
    BOOST_TEST(!amp::is_low_precision(fp8));
    BOOST_TEST((amp::promote_types(fp8, fp8) == fp8));
  }
  BOOST_TEST(!amp::is_float8(DType::BFloat16));
  BOOST_TEST((amp::dtype_of<amp::Float8_e5m2>() == DType::Float8_e5m2));
}

BOOST_AUTO_TEST_CASE(promotion_of_fp8_with_another_dtype_raises_as_in_pytorch) {
  for (DType other : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int64, DType::Bool,
                      DType::Float8_e5m2}) {
    BOOST_CHECK_EXCEPTION(amp::promote_types(DType::Float8_e4m3fn, other), amp::Error,
                          amp_test::has({"promote_types", "Float8", "Float8_e4m3fn"}));
    BOOST_CHECK_EXCEPTION(amp::promote_types(other, DType::Float8_e4m3fn), amp::Error,
                          amp_test::has({"promote_types", "Float8_e4m3fn"}));
  }
}

BOOST_AUTO_TEST_CASE(every_code_decodes_exactly_into_every_floating_dtype) {
  for (DType fp8 : kFormats) {
    const std::vector<double>& want = golden().decoded.at(golden_name(fp8));
    const Tensor codes = from_bits(every_code(), fp8);
    for (DType to : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      const std::vector<double> got = host_values(codes.to(to));
      for (int c = 0; c < 256; ++c) {
        BOOST_TEST(same_value(want[c], got[c]), golden_name(fp8) << " " << hex(c, 2) << " -> " << to
                                                                 << ": expected " << want[c]
                                                                 << ", got " << got[c]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fp8_converts_to_int64_and_bool_and_back) {
  for (DType fp8 : kFormats) {
    const std::vector<double>& decoded = golden().decoded.at(golden_name(fp8));
    // Every finite code to Int64 truncates toward zero, as a C++ cast of its exact value.
    std::vector<uint8_t> finite;
    for (int c = 0; c < 256; ++c) {
      if (std::isfinite(decoded[c])) finite.push_back(static_cast<uint8_t>(c));
    }
    const std::vector<int64_t> ints = from_bits(finite, fp8).to(DType::Int64).to_vector<int64_t>();
    const std::vector<bool> bools = from_bits(every_code(), fp8).to(DType::Bool).to_vector<bool>();
    for (size_t i = 0; i < finite.size(); ++i) {
      BOOST_TEST(ints[i] == static_cast<int64_t>(decoded[finite[i]]), hex(finite[i], 2));
    }
    for (int c = 0; c < 256; ++c) BOOST_TEST(bools[c] == (decoded[c] != 0.0), hex(c, 2));
    // NaN has no Int64 value: amp::Error as for every floating dtype.
    BOOST_CHECK_EXCEPTION(from_bits(std::vector<uint8_t>{0x7F}, fp8).to(DType::Int64), amp::Error,
                          amp_test::has({"to", "int64_t"}));
  }
  const Tensor ints = amp::from_vector<int64_t>({0, 1, -3, 17, 448, 465, 1'000'000, -(1LL << 60)},
                                                {8}, {.dtype = DType::Int64});
  // 17 is the tie of 16 (mantissa 000, even) and 18; 465 rounds past 448 (NaN in E4M3).
  BOOST_TEST(bits_of<uint8_t>(ints.to(DType::Float8_e4m3fn)) ==
                 (std::vector<uint8_t>{0x00, 0x38, 0xC4, 0x58, 0x7E, 0x7F, 0x7F, 0xFF}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of<uint8_t>(ints.to(DType::Float8_e5m2)) ==
                 (std::vector<uint8_t>{0x00, 0x3C, 0xC2, 0x4C, 0x5F, 0x5F, 0x7C, 0xFC}),
             boost::test_tools::per_element());
  const Tensor flags = amp::from_vector<bool>({true, false}, {2}, {.dtype = DType::Bool});
  BOOST_TEST(bits_of<uint8_t>(flags.to(DType::Float8_e4m3fn)) == (std::vector<uint8_t>{0x38, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of<uint8_t>(flags.to(DType::Float8_e5m2)) == (std::vector<uint8_t>{0x3C, 0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_bfloat16_and_binary16_pattern_rounds_through_to_as_the_reference) {
  const std::vector<uint16_t> patterns = every_16_bit_pattern();
  for (const auto& [source, dtype] :
       {std::pair{"bf16", DType::BFloat16}, std::pair{"fp16", DType::Float16}}) {
    const Tensor x = from_bits(patterns, dtype);
    for (DType fp8 : kFormats) {
      const std::string name = std::string(source) + "." + kColumnNames[column_of(fp8, false)];
      check_codes(name + " (contiguous)", table(name), bits_of<uint8_t>(x.to(fp8)),
                  [&](size_t i) { return std::string(source) + " " + hex(i, 4); });
      // A transposed view takes the strided loop; the codes come back in the view's order.
      const Tensor view = x.reshape({256, 256}).t();
      std::vector<uint8_t> want(65536);
      for (size_t r = 0; r < 256; ++r) {
        for (size_t c = 0; c < 256; ++c) want[r * 256 + c] = table(name)[c * 256 + r];
      }
      check_codes(name + " (strided)", want, bits_of<uint8_t>(view.to(fp8)), [&](size_t i) {
        return std::string(source) + " " + hex((i % 256) * 256 + i / 256, 4);
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(an_fp32_sweep_and_the_tie_points_round_through_to_as_the_reference) {
  const Golden& g = golden();
  std::vector<uint32_t> sweep(g.sweep_count);
  for (uint64_t i = 0; i < g.sweep_count; ++i) sweep[i] = static_cast<uint32_t>(i * g.sweep_stride);
  const Tensor swept = from_bits(sweep, DType::Float32);
  std::vector<uint32_t> points32;
  for (const Point& p : g.points32) points32.push_back(std::bit_cast<uint32_t>(float(p.value)));
  const Tensor tie32 = from_bits(points32, DType::Float32);
  std::vector<uint64_t> points64;
  for (const Point& p : g.points64) points64.push_back(std::bit_cast<uint64_t>(p.value));
  const Tensor tie64 = from_bits(points64, DType::Float64);
  for (DType fp8 : kFormats) {
    const Column column = column_of(fp8, false);
    check_codes(std::string("fp32 sweep -> ") + kColumnNames[column],
                table(std::string("fp32.") + kColumnNames[column]), bits_of<uint8_t>(swept.to(fp8)),
                [&](size_t i) { return "fp32 " + hex(sweep[i], 8); });
    for (const auto& [points, tensor, kind] :
         {std::tuple{&g.points32, &tie32, "fp32"}, std::tuple{&g.points64, &tie64, "float64"}}) {
      std::vector<uint8_t> want;
      for (const Point& p : *points) want.push_back(p.codes[column]);
      // Float64 points just off a tie: only a single rounding from the double gets them right.
      check_codes(std::string(kind) + " tie points -> " + kColumnNames[column], want,
                  bits_of<uint8_t>(tensor->to(fp8)),
                  [&](size_t i) { return std::string(kind) + " " + (*points)[i].text; });
    }
  }
}

BOOST_AUTO_TEST_CASE(fp8_to_the_other_fp8_format_rounds_the_exact_value_once) {
  // Every E5M2 value is a binary16 value (its top byte) and every E4M3 value a bfloat16 value, so
  // the reference's 16-bit tables give the expected codes.
  std::vector<uint8_t> want_e4m3(256), want_e5m2(256);
  const std::vector<double>& e4m3 = golden().decoded.at("e4m3fn");
  for (int c = 0; c < 256; ++c) {
    want_e4m3[c] = table("fp16.e4m3fn.plain")[c << 8];
    const uint32_t f = std::bit_cast<uint32_t>(static_cast<float>(e4m3[c]));
    want_e5m2[c] = std::isnan(e4m3[c]) ? static_cast<uint8_t>(0x7F | (c & 0x80))
                                       : table("bf16.e5m2.plain")[f >> 16];
  }
  const auto input = [](size_t i) { return hex(i, 2); };
  check_codes(
      "e5m2 -> e4m3fn", want_e4m3,
      bits_of<uint8_t>(from_bits(every_code(), DType::Float8_e5m2).to(DType::Float8_e4m3fn)),
      input);
  check_codes(
      "e4m3fn -> e5m2", want_e5m2,
      bits_of<uint8_t>(from_bits(every_code(), DType::Float8_e4m3fn).to(DType::Float8_e5m2)),
      input);
}

// docs/fp8.md's table of the plain cast, written out.
BOOST_AUTO_TEST_CASE(to_follows_pytorch_for_values_out_of_range) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x =
      amp::from_vector<float>({464.0f, std::nextafter(464.0f, inf), 1e6f, inf, -inf, nan, -nan,
                               std::nextafter(61440.0f, 0.0f), 61440.0f, -1e-30f},
                              {10});
  BOOST_TEST(bits_of<uint8_t>(x.to(DType::Float8_e4m3fn)) ==
                 (std::vector<uint8_t>{0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0x7F, 0x80}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of<uint8_t>(x.to(DType::Float8_e5m2)) ==
                 (std::vector<uint8_t>{0x5F, 0x5F, 0x7C, 0x7C, 0xFC, 0x7F, 0xFF, 0x7B, 0x7C, 0x80}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(quantize_with_scale_one_matches_the_reference_saturated_and_plain) {
  const std::vector<uint16_t> patterns = every_16_bit_pattern();
  for (const auto& [source, dtype] :
       {std::pair{"bf16", DType::BFloat16}, std::pair{"fp16", DType::Float16}}) {
    const Tensor x = from_bits(patterns, dtype);
    for (DType fp8 : kFormats) {
      for (bool saturate : {true, false}) {
        const std::string name = std::string(source) + "." + kColumnNames[column_of(fp8, saturate)];
        check_codes("quantize " + name, table(name),
                    bits_of<uint8_t>(amp::fp8::quantize(x, 1.0f, fp8, saturate)),
                    [&](size_t i) { return std::string(source) + " " + hex(i, 4); });
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(quantize_scales_in_fp32_before_the_one_rounding_into_fp8) {
  // 600 * 0.5 = 300 -> 288 (0x79); 1000 * 0.5 = 500 saturates to 448 (0x7E) or, plain, is NaN.
  const Tensor x = amp::from_vector<float>({600.0f, 1000.0f, -1000.0f}, {3});
  BOOST_TEST(bits_of<uint8_t>(amp::fp8::quantize(x, 0.5f, DType::Float8_e4m3fn)) ==
                 (std::vector<uint8_t>{0x79, 0x7E, 0xFE}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of<uint8_t>(amp::fp8::quantize(x, 0.5f, DType::Float8_e4m3fn, false)) ==
                 (std::vector<uint8_t>{0x79, 0x7F, 0xFF}),
             boost::test_tools::per_element());
  // (1.0625 - 2^-23)(1 + 2^-23) = 1.0625 + 2^-27 - 2^-46: just above E4M3's tie between 1 and
  // 1.125, but fp32 rounds the product onto the tie, which goes to the even 1.0 (0x38), as
  // Transformer Engine's fp32 multiply does. A product kept in double would give 1.125 (0x39).
  const Tensor t = amp::from_vector<float>({1.0625f - 0x1p-23f}, {1});
  BOOST_TEST(bits_of<uint8_t>(amp::fp8::quantize(t, 1.0f + 0x1p-23f, DType::Float8_e4m3fn))[0] ==
             0x38);
  // A Float64 input is scaled in double and rounded once: the same product gives 0x39.
  BOOST_TEST(bits_of<uint8_t>(amp::fp8::quantize(t.to(DType::Float64), 1.0f + 0x1p-23f,
                                                 DType::Float8_e4m3fn))[0] == 0x39);
  // E5M2 saturates at 57344 (0x7B); inf too.
  const Tensor big = amp::from_vector<float>({1e5f, std::numeric_limits<float>::infinity()}, {2});
  BOOST_TEST(bits_of<uint8_t>(amp::fp8::quantize(big, 1.0f, DType::Float8_e5m2)) ==
                 (std::vector<uint8_t>{0x7B, 0x7B}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(dequantize_multiplies_the_exact_values_by_scale_inv) {
  // Codes 0x79 (288), 0xB8 (-1), 0x01 (2^-9) times 0.25, rounded once into the dtype.
  const Tensor q = from_bits(std::vector<uint8_t>{0x79, 0xB8, 0x01}, DType::Float8_e4m3fn);
  BOOST_TEST(amp::fp8::dequantize(q, 0.25f).to_vector<double>() ==
                 (std::vector<double>{72.0, -0.25, 0x1p-11}),
             boost::test_tools::per_element());
  const Tensor back = amp::fp8::dequantize(q, 3.0f, DType::BFloat16);
  BOOST_TEST(back.dtype() == DType::BFloat16);
  // 864 and -3 are bf16 values; 3 * 2^-9 too.
  BOOST_TEST(back.to_vector<double>() == (std::vector<double>{864.0, -3.0, 3 * 0x1p-9}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(quantize_and_dequantize_reject_bad_arguments_naming_the_op) {
  const Tensor x = amp::ones({2});
  BOOST_CHECK_EXCEPTION(amp::fp8::quantize(x, 0.0f, DType::Float8_e4m3fn), amp::Error,
                        amp_test::has({"quantize", "finite positive scale", "got 0"}));
  BOOST_CHECK_EXCEPTION(amp::fp8::quantize(x, std::nanf(""), DType::Float8_e4m3fn), amp::Error,
                        amp_test::has({"quantize", "finite positive scale"}));
  BOOST_CHECK_EXCEPTION(amp::fp8::quantize(x, 1.0f, DType::BFloat16), amp::Error,
                        amp_test::has({"quantize", "Float8_e4m3fn or Float8_e5m2", "BFloat16"}));
  BOOST_CHECK_EXCEPTION(amp::fp8::quantize(x.to(DType::Int64), 1.0f, DType::Float8_e5m2),
                        amp::Error, amp_test::has({"quantize", "got Int64"}));
  const Tensor q = x.to(DType::Float8_e5m2);
  BOOST_CHECK_EXCEPTION(amp::fp8::quantize(q, 1.0f, DType::Float8_e4m3fn), amp::Error,
                        amp_test::has({"quantize", "got Float8_e5m2"}));
  BOOST_CHECK_EXCEPTION(amp::fp8::dequantize(x, 1.0f), amp::Error,
                        amp_test::has({"dequantize", "got Float32"}));
  BOOST_CHECK_EXCEPTION(amp::fp8::dequantize(q, 1.0f, DType::Float8_e4m3fn), amp::Error,
                        amp_test::has({"dequantize", "as the dtype, got Float8_e4m3fn"}));
  BOOST_CHECK_EXCEPTION(amp::fp8::dequantize(q, -1.0f), amp::Error,
                        amp_test::has({"dequantize", "finite positive scale_inv"}));
}

BOOST_AUTO_TEST_CASE(fill_factories_views_and_cat_work_on_fp8) {
  BOOST_TEST(bits_of<uint8_t>(amp::full({2}, 300.0, {.dtype = DType::Float8_e4m3fn})) ==
                 (std::vector<uint8_t>{0x79, 0x79}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of<uint8_t>(amp::zeros({3}, {.dtype = DType::Float8_e5m2})) ==
                 (std::vector<uint8_t>{0, 0, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of<uint8_t>(amp::full({1}, -INFINITY, {.dtype = DType::Float8_e5m2}))[0] == 0xFC);
  // Values an fp8 type cannot hold raise, as libtorch's checked conversion (E4M3 has no inf).
  BOOST_CHECK_EXCEPTION(amp::full({1}, 1000.0, {.dtype = DType::Float8_e4m3fn}), amp::Error,
                        amp_test::has({"c10::Float8_e4m3fn", "448"}));
  BOOST_CHECK_EXCEPTION(amp::full({1}, INFINITY, {.dtype = DType::Float8_e4m3fn}), amp::Error,
                        amp_test::has({"without overflow", "Float8_e4m3fn"}));
  const Tensor codes = from_bits(every_code(), DType::Float8_e4m3fn).reshape({16, 16});
  const std::vector<uint8_t> t = bits_of<uint8_t>(codes.t());
  BOOST_TEST(t[1] == 0x10);  // row 0 of the transpose is column 0
  BOOST_TEST(bits_of<uint8_t>(codes.narrow(0, 2, 1))[3] == 0x23);
  const Tensor joined = amp::cat({codes.narrow(0, 0, 1), codes.narrow(0, 15, 1)}, 0);
  BOOST_TEST(joined.dtype() == DType::Float8_e4m3fn);
  BOOST_TEST(bits_of<uint8_t>(joined)[16] == 0xF0);
}

BOOST_AUTO_TEST_CASE(copies_within_an_fp8_dtype_keep_every_bit_pattern) {
  // E5M2 has three NaN patterns per sign (0x7D, 0x7E, 0x7F); a conversion through float would
  // write all of them as 0x7F.
  for (DType fp8 : kFormats) {
    const Tensor codes = from_bits(every_code(), fp8).reshape({16, 16});
    const std::vector<uint8_t> t = bits_of<uint8_t>(codes.t().contiguous());
    std::vector<uint8_t> want(256);
    for (int r = 0; r < 16; ++r) {
      for (int c = 0; c < 16; ++c) want[r * 16 + c] = static_cast<uint8_t>(c * 16 + r);
    }
    check_codes(std::string(amp::dtype_name(fp8)) + " transposed copy", want, t,
                [](size_t i) { return std::to_string(i); });
    Tensor target = amp::empty({16, 16}, {.dtype = fp8});
    target.copy_(codes);
    check_codes(std::string(amp::dtype_name(fp8)) + " copy_", every_code(),
                bits_of<uint8_t>(target), [](size_t i) { return std::to_string(i); });
  }
}

BOOST_AUTO_TEST_CASE(printing_shows_the_dtype_and_the_decoded_values) {
  const Tensor q = from_bits(std::vector<uint8_t>{0x3C, 0xFE, 0x01}, DType::Float8_e4m3fn);
  std::ostringstream out;
  out << q;
  BOOST_TEST(out.str() ==
             "Tensor(shape=[3], dtype=Float8_e4m3fn, device=CPU, values=[1.5, -448, 0.001953125])");
  std::ostringstream e5m2;
  e5m2 << from_bits(std::vector<uint8_t>{0x7B, 0x7C}, DType::Float8_e5m2);
  BOOST_TEST(e5m2.str() == "Tensor(shape=[2], dtype=Float8_e5m2, device=CPU, values=[57344, inf])");
}

BOOST_AUTO_TEST_CASE(ops_without_fp8_kernels_raise_naming_the_op_and_the_dtype) {
  const Tensor a = amp::ones({2, 2}).to(DType::Float8_e4m3fn);
  const auto fp8_error = [](const char* op) {
    return amp_test::has({op, "got Float8_e4m3fn", "fp8 tensors only convert"});
  };
  BOOST_CHECK_EXCEPTION(amp::add(a, a), amp::Error, fp8_error("add"));
  BOOST_CHECK_EXCEPTION(amp::mul(a, 2.0), amp::Error, fp8_error("mul"));
  BOOST_CHECK_EXCEPTION(amp::exp(a), amp::Error, fp8_error("exp"));
  BOOST_CHECK_EXCEPTION(amp::sum(a), amp::Error, fp8_error("sum"));
  BOOST_CHECK_EXCEPTION(amp::matmul(a, a), amp::Error, amp_test::has({"matmul", "Float8_e4m3fn"}));
  BOOST_CHECK_EXCEPTION(amp::add(a, amp::ones({2, 2})), amp::Error,
                        amp_test::has({"promote", "Float8_e4m3fn", "Float32"}));
  BOOST_CHECK_EXCEPTION(amp::cat({a, a.to(DType::Float8_e5m2)}, 0), amp::Error,
                        amp_test::has({"promote", "Float8_e4m3fn", "Float8_e5m2"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
