// A Boost.Test decorator for test units that read Fashion-MNIST (the Debian package
// dataset-fashion-mnist, which scripts/setup.sh installs). Without the data the unit is skipped
// by its precondition, with the reason, and ctest reports the suite Skipped (tests/main.cpp);
// the tests never fail for a missing optional package.
//
//   BOOST_AUTO_TEST_CASE(trains_on_it, *amp::testing::requires_fashion_mnist()) {
//     const auto train = amp::data::fashion_mnist(amp::testing::fashion_mnist_dir());
//
// AMPCPP_FASHION_MNIST_DIR overrides where the tests look, so that the data-absent path can be
// tried on a machine that has the data: AMPCPP_FASHION_MNIST_DIR=/nonexistent ctest -R data.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "csrc/data/dataset.h"

namespace amp::testing {

inline std::string fashion_mnist_dir() {
  const char* dir = std::getenv("AMPCPP_FASHION_MNIST_DIR");
  return dir != nullptr && *dir != '\0' ? dir : amp::data::kFashionMnistDir;
}

// All four IDX files, gzip'd or not (as amp::data::fashion_mnist reads them).
inline boost::test_tools::assertion_result fashion_mnist_is_installed(
    boost::unit_test::test_unit_id) {
  const std::filesystem::path dir = fashion_mnist_dir();
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    const std::filesystem::path file = dir / name;
    if (!std::filesystem::exists(file) && !std::filesystem::exists(file.string() + ".gz")) {
      boost::test_tools::assertion_result absent(false);
      absent.message() << "Fashion-MNIST is not installed: no " << file.string()
                       << "[.gz] (Debian package dataset-fashion-mnist; scripts/setup.sh)";
      return absent;
    }
  }
  return true;
}

inline boost::unit_test::decorator::precondition requires_fashion_mnist() {
  return boost::unit_test::precondition(fashion_mnist_is_installed);
}

}  // namespace amp::testing
