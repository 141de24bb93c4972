// The command-line parsing every example program shares: Boost.Program_options as it is, except
// that an argument no option takes is an error. Boost stores such a positional argument nowhere
// and says nothing, so `--opt-levels O1 O2` would run O1 alone as if O2 had not been typed.
//
//   po::variables_map vm;
//   try {
//     po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
//   } catch (const po::error& e) { ... exit status 2 ... }
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace amp::examples {

// The options of `argv`; po::error naming the first argument that belongs to no option.
inline boost::program_options::parsed_options parse_command_line_strictly(
    int argc, const char* const* argv, const boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  po::parsed_options parsed = po::command_line_parser(argc, argv).options(options).run();
  const std::vector<std::string> stray =
      po::collect_unrecognized(parsed.options, po::include_positional);
  if (!stray.empty()) {
    throw po::error("unexpected argument '" + stray.front() +
                    "': every option takes at most one value (give a list comma-separated, "
                    "where an option takes one)");
  }
  return parsed;
}

}  // namespace amp::examples
