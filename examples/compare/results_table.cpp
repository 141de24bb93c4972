#include "examples/compare/results_table.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace amp::compare {

namespace {

std::string format(const char* pattern, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, v);
  return buffer;
}

std::string integer(int64_t v) { return std::to_string(v); }
// Enough digits for results.json's values to be recovered to about 1e-10.
std::string exact(double v) { return format("%.12g", v); }
std::string optional_value(std::optional<double> v, const char* pattern) {
  return v ? format(pattern, *v) : "-";
}

struct Column {
  const char* title;  // the printed table's header
  const char* key;    // results.csv's header: results.json's key
  std::function<std::string(const RunResult&, const RunResult*)> shown, written;
};

const std::vector<Column>& columns() {
  using R = const RunResult&;
  using B = const RunResult*;
  static const std::vector<Column> all = {
      {"workflow", "workflow", [](R r, B) { return r.spec.workflow; },
       [](R r, B) { return r.spec.workflow; }},
      {"opt level", "opt_level", [](R r, B) { return r.spec.opt_level; },
       [](R r, B) { return r.spec.opt_level; }},
      {"dtype", "dtype",
       [](R r, B) { return r.spec.dtype + (r.spec.fp8.empty() ? "" : " fp8-" + r.spec.fp8); },
       [](R r, B) { return r.spec.dtype; }},
      {"ms/step", "ms_per_step", [](R r, B) { return format("%.2f", r.ms_per_step); },
       [](R r, B) { return exact(r.ms_per_step); }},
      {"samples/s", "samples_per_second",
       [](R r, B) { return format("%.0f", r.samples_per_second); },
       [](R r, B) { return exact(r.samples_per_second); }},
      {"speed-up vs fp32", "speedup_vs_fp32",
       [](R r, B b) { return optional_value(speedup_vs_baseline(r, b), "%.2fx"); },
       [](R r, B b) {
         const auto v = speedup_vs_baseline(r, b);
         return v ? exact(*v) : "";
       }},
      {"peak MiB", "peak_bytes",
       [](R r, B) { return format("%.1f", static_cast<double>(r.peak_bytes) / (1 << 20)); },
       [](R r, B) { return integer(r.peak_bytes); }},
      {"peak vs fp32", "peak_ratio_vs_fp32",
       [](R r, B b) { return optional_value(peak_ratio_vs_baseline(r, b), "%.2f"); },
       [](R r, B b) {
         const auto v = peak_ratio_vs_baseline(r, b);
         return v ? exact(*v) : "";
       }},
      {"B/param", "bytes_per_param", [](R r, B) { return format("%.2f", r.bytes_per_param); },
       [](R r, B) { return exact(r.bytes_per_param); }},
      {"final loss", "final_train_loss", [](R r, B) { return format("%.4f", r.final_train_loss); },
       [](R r, B) { return exact(r.final_train_loss); }},
      {"test acc", "test_accuracy", [](R r, B) { return format("%.2f%%", 100 * r.test_accuracy); },
       [](R r, B) { return exact(r.test_accuracy); }},
      {"skipped", "skipped_steps", [](R r, B) { return integer(r.skipped_steps); },
       [](R r, B) { return integer(r.skipped_steps); }},
      {"final scale", "final_loss_scale", [](R r, B) { return format("%g", r.final_loss_scale); },
       [](R r, B) { return exact(r.final_loss_scale); }},
  };
  return all;
}

}  // namespace

std::optional<double> speedup_vs_baseline(const RunResult& run, const RunResult* baseline) {
  if (!baseline) return std::nullopt;
  return baseline->ms_per_step / run.ms_per_step;
}

std::optional<double> peak_ratio_vs_baseline(const RunResult& run, const RunResult* baseline) {
  if (!baseline || baseline->peak_bytes == 0) return std::nullopt;
  return static_cast<double>(run.peak_bytes) / static_cast<double>(baseline->peak_bytes);
}

void print_table(std::ostream& out, const std::vector<RunResult>& results) {
  const RunResult* baseline = find_baseline(results);
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> widths;
  for (const Column& c : columns()) widths.push_back(std::string(c.title).size());
  for (const RunResult& r : results) {
    std::vector<std::string>& row = cells.emplace_back();
    for (size_t i = 0; i < columns().size(); ++i) {
      row.push_back(columns()[i].shown(r, baseline));
      widths[i] = std::max(widths[i], row.back().size());
    }
  }
  // Text columns left-aligned, numbers right-aligned.
  auto print_row = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - row[i].size(), ' ');
      out << (i ? "  " : "") << (i < 3 ? row[i] + pad : pad + row[i]);
    }
    out << "\n";
  };
  std::vector<std::string> header;
  for (const Column& c : columns()) header.push_back(c.title);
  print_row(header);
  size_t total = 2 * (widths.size() - 1);
  for (size_t w : widths) total += w;
  out << std::string(total, '-') << "\n";
  for (const auto& row : cells) print_row(row);
}

std::string results_csv(const std::vector<RunResult>& results) {
  const RunResult* baseline = find_baseline(results);
  std::string csv;
  for (const Column& c : columns()) csv.append(csv.empty() ? "" : ",").append(c.key);
  csv += "\n";
  for (const RunResult& r : results) {
    for (size_t i = 0; i < columns().size(); ++i) {
      csv.append(i ? "," : "").append(columns()[i].written(r, baseline));
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace amp::compare
