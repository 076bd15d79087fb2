// Graph capture by recording: while a thread captures, device work is appended to the graph
// instead of running; replay runs the recording on the same addresses.
//
// Capture rules (on unless npu_sim.config.capture_rules is off; read at capture_begin): what an
// Ascend NPU under torch_npu refuses during capture raises torch_npu's error for it and
// invalidates the capture, as aclmdlRI capture does, so capture_end raises too and the graph
// never replays:
//  - an op outside the capturable set (only aclnn operators capture; torch_npu raises "Cannot
//    run aclop operators during NPU graph capture", ERR00007) -- the set is data
//    (npu_sim/capturable_ops.tsv), handed over by npu_sim.capture_rules at start;
//  - host synchronization, device-to-host reads, synchronous host-to-device copies and ops whose
//    output size is data-dependent (the runtime refuses the synchronous call: 107030,
//    ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
//  - capture_end of an invalidated capture: 507903, ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED.
// With the rules off, npu-sim records anything it can and only refuses what it cannot record
// (host reads of values not computed yet), with its own message.
#include "capture.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_set>

namespace npu_sim {
namespace {
thread_local Graph* t_capturing = nullptr;

std::mutex g_mutex;  // guards the capturable set and the live-graph counts
std::unordered_set<std::string> g_capturable;
std::map<int, int64_t> g_live;
std::atomic<int64_t> g_replayed_actions{0};  // recorded operations run by replays (benches)

// torch_npu's error suffix (formatErrorCode: "ERR" + submodule (2 digits) + code (3 digits),
// PTA = 0; ErrCode::ACL = 100 "call acl api failed", NOT_SUPPORT = 7 "feature not supported")
constexpr const char* kAclFailed = "\n[ERROR] ERR00100 PTA call acl api failed";
constexpr const char* kNotSupported = "\n[ERROR] ERR00007 PTA feature not supported";

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

[[noreturn]] void invalidate(const std::string& message) {
  if (t_capturing && t_capturing->invalidated.empty()) t_capturing->invalidated = message;
  TORCH_CHECK(false, message);
}

// "aten::add.Tensor" -> "aten::add"; an in-place or out= variant ("aten::add_") is its op's.
bool in_capturable_set(const std::string& op_name) {
  std::string packet = op_name.substr(0, op_name.find('.'));
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_capturable.count(packet)) return true;
  return packet.size() > 1 && packet.back() == '_' && g_capturable.count(packet.substr(0, packet.size() - 1));
}
}  // namespace

Graph* capturing_graph() { return t_capturing; }
bool is_capturing() { return t_capturing != nullptr; }
bool capture_rules_on() { return t_capturing != nullptr && t_capturing->rules; }

void set_capturable_ops(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_capturable = std::unordered_set<std::string>(names.begin(), names.end());
}

int64_t replayed_action_count() { return g_replayed_actions.load(std::memory_order_relaxed); }

int64_t live_graphs(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_live.find(device);
  return it == g_live.end() ? 0 : it->second;
}

void record(std::function<void()> action, const char* what) {
  TORCH_INTERNAL_ASSERT(t_capturing, "npu-sim: record() outside capture");
  t_capturing->actions.push_back(std::move(action));
  t_capturing->names.emplace_back(what);
}

void fail_during_capture(const std::string& what, const char* acl) {
  const std::string why = "npu-sim: " + what +
                          " is not allowed while a graph is being captured: captured work has not run yet "
                          "(the host would read memory before replay). Move it outside the capture.";
  if (!capture_rules_on()) TORCH_CHECK(false, why);
  invalidate(what + " during NPU graph capture: NPU function error: " + acl +
             ", error code is 107030 (ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT: operation not permitted when a "
             "stream is capturing and the specified capture mode is not relaxed)" + kAclFailed + "\n" + why +
             " The capture is invalidated.");
}

void check_not_capturing(const std::string& what, const char* acl) {
  if (is_capturing()) fail_during_capture(what, acl);
}

void check_capturable(const std::string& op_name) {
  if (!capture_rules_on() || in_capturable_set(op_name)) return;
  invalidate("Cannot run aclop operators during NPU graph capture. Current working aclop is " + op_name +
             ". If you need this call to be captured, please try to set torch.npu.config.allow_internal_format = "
             "False. If still fail, the operator needs aclnn implementation and please file an issue. Current "
             "npuStreamCaptureStatus: npuStreamCaptureStatusActive" + kNotSupported +
             "\nnpu-sim: " + op_name + " is not in the capturable set (npu_sim/capturable_ops.tsv: torch_npu's "
             "graph_supported_apis and the ops npu-inductor's kernels use); the capture is invalidated. Run it "
             "outside the captured region (reduce-overhead graph trees partition around it), or set "
             "NPU_SIM_CAPTURE_RULES=off to record it anyway (npu-sim only: an NPU refuses it).");
}

Graph::~Graph() { reset(); }

void Graph::capture_begin(PoolId pool_id, bool with_rules) {
  TORCH_CHECK(!t_capturing, "npu-sim: this thread is already capturing a graph");
  TORCH_CHECK(!captured, "npu-sim: graph already captured; reset() it before capturing again");
  device = current_device();
  if (!has_pool) {  // an invalidated capture keeps its pool until reset(), as on the device
    if (pool_id.first == 0 && pool_id.second == 0) {
      pool = new_pool_id();
    } else {
      pool = pool_id;
      retain_pool(device, pool);  // shared with the graph (or handle) that made it
    }
    has_pool = true;
  }
  begin_allocate_to_pool(device, pool);
  rules = with_rules;
  invalidated.clear();
  actions.clear();
  names.clear();
  t_capturing = this;
}

void Graph::capture_end() {
  TORCH_CHECK(t_capturing == this, "npu-sim: capture_end() without a matching capture_begin() on this thread");
  t_capturing = nullptr;
  end_allocate_to_pool(device, pool);
  if (!invalidated.empty()) {
    actions.clear();
    names.clear();
    TORCH_CHECK(false, "NPU function error: AclmdlRICaptureEnd, error code is 507903 "
                       "(ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED: capture status is invalidated)",
                kAclFailed, "\nnpu-sim: the capture was invalidated by: ", first_line(invalidated));
  }
  captured = true;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_live[device] += 1;
}

void Graph::replay() {
  TORCH_CHECK(captured, "npu-sim: replay() of a graph that was not captured",
              invalidated.empty() ? "" : " (its capture was invalidated by: " + first_line(invalidated) + ")");
  TORCH_CHECK(!t_capturing, "npu-sim: replay() during a capture");
  for (auto& action : actions) action();
  replays += 1;
  g_replayed_actions.fetch_add(static_cast<int64_t>(actions.size()), std::memory_order_relaxed);
}

void Graph::reset() {
  if (t_capturing == this) t_capturing = nullptr;
  actions.clear();
  names.clear();
  if (captured) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[device] -= 1;
  }
  if (has_pool) {
    release_pool(device, pool);
    has_pool = false;
  }
  captured = false;
  invalidated.clear();
}

}  // namespace npu_sim
