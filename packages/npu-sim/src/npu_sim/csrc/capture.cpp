// Graph capture by recording: while a thread captures, device work is appended to the graph
// instead of running; replay runs the recording on the same addresses.
#include "capture.h"

#include <c10/util/Exception.h>

namespace npu_sim {
namespace {
thread_local Graph* t_capturing = nullptr;
}

Graph* capturing_graph() { return t_capturing; }
bool is_capturing() { return t_capturing != nullptr; }

void record(std::function<void()> action, const char* what) {
  TORCH_INTERNAL_ASSERT(t_capturing, "npu-sim: record() outside capture");
  t_capturing->actions.push_back(std::move(action));
  t_capturing->names.emplace_back(what);
}

void fail_during_capture(const std::string& what) {
  TORCH_CHECK(false, "npu-sim: ", what,
              " is not allowed while a graph is being captured: captured work has not run yet "
              "(the host would read memory before replay). Move it outside the capture.");
}

void check_not_capturing(const std::string& what) {
  if (is_capturing()) fail_during_capture(what);
}

Graph::~Graph() { reset(); }

void Graph::capture_begin(PoolId pool_id) {
  TORCH_CHECK(!t_capturing, "npu-sim: this thread is already capturing a graph");
  TORCH_CHECK(!captured, "npu-sim: graph already captured; reset() it before capturing again");
  device = current_device();
  if (pool_id.first == 0 && pool_id.second == 0) {
    pool = new_pool_id();
  } else {
    pool = pool_id;
    retain_pool(device, pool);  // shared with the graph (or handle) that made it
  }
  begin_allocate_to_pool(device, pool);
  has_pool = true;
  t_capturing = this;
}

void Graph::capture_end() {
  TORCH_CHECK(t_capturing == this, "npu-sim: capture_end() without a matching capture_begin() on this thread");
  t_capturing = nullptr;
  end_allocate_to_pool(device, pool);
  captured = true;
}

void Graph::replay() {
  TORCH_CHECK(captured, "npu-sim: replay() of a graph that was not captured");
  TORCH_CHECK(!t_capturing, "npu-sim: replay() during a capture");
  for (auto& action : actions) action();
  replays += 1;
}

void Graph::reset() {
  if (t_capturing == this) t_capturing = nullptr;
  actions.clear();
  names.clear();
  if (has_pool) {
    release_pool(device, pool);
    has_pool = false;
  }
  captured = false;
}

}  // namespace npu_sim
