// Prints the autocast policy table (csrc/autocast/policy.cpp) as Markdown: the table in
// docs/autocast.md is this program's output, and a test checks that the two agree.
//
//   build/examples/autocast_table > /tmp/table.md
#include <iostream>

#include "amp/amp.h"

int main() {
  std::cout << amp::autocast_policy::markdown_table();
  return 0;
}
