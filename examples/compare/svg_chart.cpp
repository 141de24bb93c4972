#include "examples/compare/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace amp::compare {

namespace {

constexpr double kWidth = 860, kHeight = 480;
// The plot area; the legend sits to its right.
constexpr double kLeft = 80, kTop = 50, kRight = kWidth - 210, kBottom = kHeight - 60;
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v, const char* pattern = "%.1f") {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, pattern, v);
  return buffer;
}

struct Range {
  double lo, hi;
  double span() const { return hi - lo; }
};

// A tick spacing of 1, 2 or 5 times a power of ten giving about `target` intervals.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

// Ticks at multiples of a nice step, at least min_step apart (1 for step numbers).
std::vector<double> linear_ticks(Range r, int target, double min_step = 0) {
  const double step = std::max(min_step, nice_step(r.span(), target));
  std::vector<double> ticks;
  for (double t = std::ceil(r.lo / step) * step; t <= r.hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

class ChartWriter {
 public:
  explicit ChartWriter(const LineChart& chart) : chart_(chart) {
    size_t longest = 0;
    for (const ChartSeries& s : chart.series) longest = std::max(longest, s.values.size());
    x_ = {1, std::max(2.0, static_cast<double>(longest))};
    y_ = y_range();
  }

  std::string svg() {
    out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
         << kHeight << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
         << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
         << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
         << "<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"28\" text-anchor=\"middle\" "
         << "font-size=\"16\">" << escaped(chart_.title) << "</text>\n";
    axes();
    for (size_t i = 0; i < chart_.series.size(); ++i) series(i);
    legend();
    out_ << "</svg>\n";
    return out_.str();
  }

 private:
  // The y value as plotted (log2 on a log axis); NaN when it cannot be drawn.
  double plotted(double v) const {
    if (!std::isfinite(v)) return std::numeric_limits<double>::quiet_NaN();
    if (!chart_.log2_y) return v;
    return v > 0 ? std::log2(v) : std::numeric_limits<double>::quiet_NaN();
  }

  Range y_range() const {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const ChartSeries& s : chart_.series) {
      for (double v : s.values) {
        const double p = plotted(v);
        if (std::isnan(p)) continue;
        lo = std::min(lo, p);
        hi = std::max(hi, p);
      }
    }
    if (lo > hi) return {0, 1};  // nothing drawable
    // Half an octave of room, so that a scale sitting on a power of two is not drawn on the
    // plot's edge.
    if (chart_.log2_y) return {std::floor(lo) - 0.5, std::ceil(hi) + 0.5};
    const double pad = lo == hi ? 1.0 : 0.05 * (hi - lo);
    return {lo - pad, hi + pad};
  }

  double px(double x) const { return kLeft + (x - x_.lo) / x_.span() * (kRight - kLeft); }
  double py(double y) const { return kBottom - (y - y_.lo) / y_.span() * (kBottom - kTop); }

  void axes() {
    out_ << "<g class=\"grid\" stroke=\"#dddddd\">\n";
    const std::vector<double> xt = linear_ticks(x_, 8, 1);
    const std::vector<double> yt = y_ticks();
    for (double t : xt) {
      out_ << "<line x1=\"" << number(px(t)) << "\" y1=\"" << kTop << "\" x2=\"" << number(px(t))
           << "\" y2=\"" << kBottom << "\"/>\n";
    }
    for (double t : yt) {
      out_ << "<line x1=\"" << kLeft << "\" y1=\"" << number(py(t)) << "\" x2=\"" << kRight
           << "\" y2=\"" << number(py(t)) << "\"/>\n";
    }
    out_ << "</g>\n<g class=\"axes\" stroke=\"black\">\n"
         << "<line x1=\"" << kLeft << "\" y1=\"" << kBottom << "\" x2=\"" << kRight << "\" y2=\""
         << kBottom << "\"/>\n"
         << "<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\""
         << kBottom << "\"/>\n</g>\n<g class=\"tick-labels\">\n";
    for (double t : xt) {
      out_ << "<text x=\"" << number(px(t)) << "\" y=\"" << kBottom + 18
           << "\" text-anchor=\"middle\">" << number(t, "%g") << "</text>\n";
    }
    for (double t : yt) {
      out_ << "<text x=\"" << kLeft - 6 << "\" y=\"" << number(py(t) + 4)
           << "\" text-anchor=\"end\">" << y_tick_label(t) << "</text>\n";
    }
    out_ << "</g>\n<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"" << kHeight - 18
         << "\" text-anchor=\"middle\">" << escaped(chart_.x_label) << "</text>\n"
         << "<text transform=\"translate(20 " << (kTop + kBottom) / 2
         << ") rotate(-90)\" text-anchor=\"middle\">" << escaped(chart_.y_label) << "</text>\n";
  }

  // Powers of two from 1 to 2^20 in full (loss scales people recognise), others as 2^e so that
  // a collapsed scale (2^-56) still fits left of the axis.
  std::string y_tick_label(double t) const {
    if (!chart_.log2_y) return number(t, "%g");
    if (t >= 0 && t <= 20) return number(std::exp2(t), "%.0f");
    return "2^" + number(t, "%.0f");
  }

  // Log axes: whole exponents, every one while they fit, else multiples of a step (so 2^16,
  // the dynamic scales' start, stays labelled with a step of 2).
  std::vector<double> y_ticks() const {
    if (!chart_.log2_y) return linear_ticks(y_, 6);
    const double every = std::max(1.0, std::ceil(y_.span() / 9));
    std::vector<double> ticks;
    for (double e = std::ceil(y_.lo / every) * every; e <= y_.hi; e += every) ticks.push_back(e);
    return ticks;
  }

  void series(size_t i) {
    const ChartSeries& s = chart_.series[i];
    std::string d;
    bool pen_down = false;
    for (size_t k = 0; k < s.values.size(); ++k) {
      const double y = plotted(s.values[k]);
      if (std::isnan(y)) {
        pen_down = false;
        continue;
      }
      d.append(d.empty() ? "" : " ").append(pen_down ? "L" : "M");
      d.append(number(px(static_cast<double>(k + 1)))).append(",").append(number(py(y)));
      pen_down = true;
    }
    out_ << "<path class=\"series\" data-label=\"" << escaped(s.label) << "\" d=\"" << d
         << "\" fill=\"none\" stroke=\"" << kPalette[i % kPaletteSize]
         << "\" stroke-width=\"1.5\"/>\n";
  }

  void legend() {
    out_ << "<g class=\"legend\">\n";
    for (size_t i = 0; i < chart_.series.size(); ++i) {
      const double y = kTop + 10 + 20 * static_cast<double>(i);
      out_ << "<line x1=\"" << kRight + 15 << "\" y1=\"" << y << "\" x2=\"" << kRight + 39
           << "\" y2=\"" << y << "\" stroke=\"" << kPalette[i % kPaletteSize]
           << "\" stroke-width=\"3\"/>\n"
           << "<text x=\"" << kRight + 45 << "\" y=\"" << y + 4 << "\">"
           << escaped(chart_.series[i].label) << "</text>\n";
    }
    out_ << "</g>\n";
  }

  const LineChart& chart_;
  Range x_{}, y_{};
  std::ostringstream out_;
};

}  // namespace

std::string render_svg(const LineChart& chart) { return ChartWriter(chart).svg(); }

}  // namespace amp::compare
