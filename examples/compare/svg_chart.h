// A small, self-contained SVG writer for amp_compare's two line charts (loss curve, loss scale).
// Our own rather than gnuplot: gnuplot is a heavy run-time dependency for two line charts, and a
// fixed SVG subset is easy to test (tests/e2e/test_amp_compare.cpp parses it as XML).
//
// The document holds a title, two axes with ticks, labels and light grid lines, one
// <path class="series"> per series (a non-finite value breaks its line) and a legend. Series
// colours come from a fixed palette, so a run keeps its colour in both charts.
#pragma once

#include <string>
#include <vector>

namespace amp::compare {

struct ChartSeries {
  std::string label;
  std::vector<double> values;  // y of x = 1, 2, ...
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  // A base-2 logarithmic y axis (loss scales are powers of two); values <= 0 are not drawn.
  bool log2_y = false;
  std::vector<ChartSeries> series;
};

// The chart as a complete SVG document.
std::string render_svg(const LineChart& chart);

}  // namespace amp::compare
