// Specification of DataLoader at the edge of int64 (csrc/data/dataloader.cpp): any batch_size up
// to INT64_MAX gives one (possibly partial) batch of all samples, and size() does not wrap
// ((n + b - 1) / b overflowed to a negative batch count); a batch index past the end is an
// amp::Error, not a wrapped multiplication.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::Tensor;
using amp_test::has;

// Five samples of two features; sample i holds (i, i) and label i.
amp::data::Dataset tiny() {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < 5; ++i) {
    x.insert(x.end(), {static_cast<float>(i), static_cast<float>(i)});
    y.push_back(i);
  }
  return {amp::from_vector(x, {5, 2}), amp::from_vector(y, {5}, {.dtype = amp::DType::Int64})};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dataloader_limits)

BOOST_AUTO_TEST_CASE(batch_sizes_near_int64_max_give_one_batch_of_every_sample) {
  for (int64_t b : {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2 + 1, int64_t{5}, int64_t{6}}) {
    amp::data::DataLoader loader(tiny(), {.batch_size = b});
    BOOST_TEST(loader.size() == 1, "batch_size " << b);
    int64_t batches = 0;
    for (const amp::data::Batch& batch : loader) {
      BOOST_TEST(batch.labels.to_vector<int64_t>() == std::vector<int64_t>({0, 1, 2, 3, 4}));
      ++batches;
    }
    BOOST_TEST(batches == 1);
    amp::data::DataLoader dropping(tiny(), {.batch_size = b, .drop_last = true});
    BOOST_TEST(dropping.size() == (b == 5 ? 1 : 0), "batch_size " << b << " with drop_last");
  }
}

BOOST_AUTO_TEST_CASE(batch_counts_round_up_unless_drop_last) {
  for (int64_t b = 1; b <= 6; ++b) {
    BOOST_TEST(amp::data::DataLoader(tiny(), {.batch_size = b}).size() == (5 + b - 1) / b);
    BOOST_TEST(amp::data::DataLoader(tiny(), {.batch_size = b, .drop_last = true}).size() == 5 / b);
  }
}

BOOST_AUTO_TEST_CASE(dereferencing_past_the_last_batch_is_an_error_even_for_huge_batches) {
  amp::data::DataLoader loader(tiny(), {.batch_size = INT64_MAX / 2 + 1});
  auto it = loader.begin();
  ++it;
  ++it;  // batch 2: 2 * batch_size overflows int64
  BOOST_CHECK_EXCEPTION((void)*it, amp::Error,
                        has({"DataLoader: expected a batch index in [0, 1)", "got 2"}));
}

BOOST_AUTO_TEST_SUITE_END()
