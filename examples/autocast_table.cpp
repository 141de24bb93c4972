// Prints the autocast policy table (csrc/autocast/policy.cpp) as Markdown: the table in
// docs/autocast.md is this program's output, and a test checks that the two agree.
//
//   build/examples/autocast_table > /tmp/table.md
#include <iostream>

#include "amp/amp.h"

int main(int argc, char** argv) {
  if (argc > 1) {
    std::cerr << "autocast_table: unexpected argument '" << argv[1] << "': it takes none\n";
    return 2;
  }
  std::cout << amp::autocast_policy::markdown_table();
  return 0;
}
