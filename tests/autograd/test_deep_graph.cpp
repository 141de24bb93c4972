// Specification of how autograd graphs are freed (csrc/graph/node.cpp): dropping the last
// reference to a graph millions of nodes deep returns without overflowing the stack, before and
// after backward, and frees only what nothing else still owns. Freeing used to recurse once per
// node and crashed (SIGSEGV) from about 200k nodes: a loss accumulated over many steps without
// backward is such a graph.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "csrc/graph/node.h"

namespace {

using amp::Tensor;
using amp::autograd::Node;

// Sizes. Recorded ops cost about 2.5 us and 480 bytes per node in the release build, so chains
// of real ops stay at 1M (five times the depth that crashed); the 10M-node chain is made of the
// smallest nodes (about 250 bytes each). The sanitizer build runs every allocation several times
// slower and with redzones: there the counts are cut to keep the suite within seconds, still
// above the old limit (whose stack frames were larger there, so it crashed earlier).
#if defined(AMPCPP_SANITIZE)
constexpr int64_t kLinks = 2'000'000;
constexpr int64_t kOps = 250'000;
#else
constexpr int64_t kLinks = 10'000'000;
constexpr int64_t kOps = 1'000'000;
#endif

// The smallest node: no saved tensors, one edge to the node before it.
class Link final : public Node {
 public:
  std::vector<Tensor> apply(std::vector<Tensor>&&) override { return {}; }
  std::string name() const override { return "Link"; }
};

// A chain of `length` links; returns its head (the last one made).
std::shared_ptr<Node> chain(int64_t length, std::shared_ptr<Node> tail = nullptr) {
  std::shared_ptr<Node> head = std::move(tail);
  for (int64_t i = 0; i < length; ++i) {
    auto next = std::make_shared<Link>();
    if (head) next->next_edges.push_back({std::move(head), 0});
    head = std::move(next);
  }
  return head;
}

int64_t depth(const std::shared_ptr<Node>& head) {
  int64_t n = 0;
  for (const Node* node = head.get(); node != nullptr;
       node = node->next_edges.empty() ? nullptr : node->next_edges[0].fn.get()) {
    ++n;
  }
  return n;
}

// loss = x + x + ... + x (`adds` additions), recorded node by node with nothing else kept alive.
Tensor accumulated_loss(const Tensor& x, int64_t adds) {
  Tensor loss = x;
  for (int64_t i = 0; i < adds; ++i) loss = amp::add(loss, x);
  return loss;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(deep_graph)

BOOST_AUTO_TEST_CASE(a_graph_of_ten_million_nodes_is_freed_without_recursion) {
  std::shared_ptr<Node> head = chain(kLinks);
  BOOST_TEST(head->next_edges.size() == 1u);
  head.reset();  // used to recurse once per node
  BOOST_TEST(depth(chain(3)) == 3);
}

BOOST_AUTO_TEST_CASE(nodes_that_something_else_still_owns_survive_the_release) {
  // tail <- ... <- middle <- ... <- head, with `middle` also held here: releasing head frees the
  // upper half only, and middle's own chain stays whole.
  std::shared_ptr<Node> middle = chain(1000);
  std::shared_ptr<Node> head = chain(1000, middle);
  BOOST_TEST(depth(head) == 2000);
  head.reset();
  BOOST_TEST(middle.use_count() == 1);
  BOOST_TEST(depth(middle) == 1000);
}

BOOST_AUTO_TEST_CASE(a_loss_accumulated_without_backward_is_freed_without_recursion) {
  const Tensor x = amp::scalar_tensor(1.0).requires_grad_();
  {
    Tensor loss = accumulated_loss(x, kOps);
    BOOST_TEST(loss.grad_fn() != nullptr);
    // Released here: the whole chain goes with this last handle.
  }
  // The leaf is untouched and the library still works.
  BOOST_TEST(!x.grad().defined());
  BOOST_TEST(amp::add(x, x).item<double>() == 2.0);
}

BOOST_AUTO_TEST_CASE(a_long_chain_is_freed_without_recursion_after_backward) {
  const Tensor x = amp::scalar_tensor(1.0).requires_grad_();
  {
    Tensor loss = accumulated_loss(x, kOps);
    loss.backward();
    // d(loss)/dx = 1 + kOps, exact in fp32 below 2^24.
    BOOST_TEST(x.grad().item<double>() == static_cast<double>(kOps + 1));
  }
  BOOST_TEST(amp::add(x, x).item<double>() == 2.0);
}

BOOST_AUTO_TEST_CASE(a_deep_chain_of_ops_that_save_their_inputs_is_freed_without_recursion) {
  // mul saves its inputs: each node is also owned through a saved tensor, not only its edge.
  const Tensor x = amp::scalar_tensor(1.0).requires_grad_();
  {
    Tensor y = x;
    for (int64_t i = 0; i < kOps; ++i) y = amp::mul(y, x);
    BOOST_TEST(y.grad_fn() != nullptr);
  }
  BOOST_TEST(amp::mul(x, x).item<double>() == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()
