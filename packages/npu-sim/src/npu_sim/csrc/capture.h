// The graph object behind torch.npu.NPUGraph.
#pragma once

#include "sim.h"

namespace npu_sim {

struct Graph {
  int device = 0;
  PoolId pool{0, 0};
  bool has_pool = false;
  bool captured = false;
  bool rules = false;        // captured under the device's capture rules (npu_sim.config.capture_rules)
  std::string invalidated;   // the first error that invalidated this capture ("" while valid)
  int64_t replays = 0;
  std::vector<std::function<void()>> actions;
  std::vector<std::string> names;  // what each action is, for debugging and tests

  ~Graph();
  // pool (0, 0) makes a new private pool; another id shares that pool.
  void capture_begin(PoolId pool, bool rules);
  void capture_end();
  void replay();
  void reset();
};

// Captured graphs alive (captured, not reset) on `device`: what the device's stream budget counts.
int64_t live_graphs(int device);
void set_capturable_ops(const std::vector<std::string>& names);

}  // namespace npu_sim
