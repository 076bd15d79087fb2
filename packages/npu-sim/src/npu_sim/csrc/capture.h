// The graph object behind torch.npu.NPUGraph.
#pragma once

#include "sim.h"

namespace npu_sim {

struct Graph {
  int device = 0;
  PoolId pool{0, 0};
  bool has_pool = false;
  bool captured = false;
  int64_t replays = 0;
  std::vector<std::function<void()>> actions;
  std::vector<std::string> names;  // what each action is, for debugging and tests

  ~Graph();
  // pool (0, 0) makes a new private pool; another id shares that pool.
  void capture_begin(PoolId pool);
  void capture_end();
  void replay();
  void reset();
};

}  // namespace npu_sim
