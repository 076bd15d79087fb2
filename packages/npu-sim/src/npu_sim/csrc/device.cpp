// Devices, the device guard, streams and events.
// Work executes synchronously on the host, so streams are identities (what Dynamo, graph
// trees and user code switch between) and events are host timestamps.
#include "sim.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>

namespace npu_sim {
namespace {

std::atomic<int> g_device_count{1};
thread_local int t_current_device = 0;
// Stream ids per device: 0 is the default stream; new streams count up.
std::array<std::atomic<int64_t>, kMaxDevices> g_next_stream{};
thread_local std::array<int64_t, kMaxDevices> t_current_stream{};

struct SimEvent {
  double time_ms = -1;  // host time at record, -1 before the first record
  int device = 0;
};

}  // namespace

void set_device_count(int n) {
  TORCH_CHECK(n >= 1 && n <= kMaxDevices, "npu-sim: device count must be in [1, ", kMaxDevices, "], got ", n);
  g_device_count = n;
}
int device_count() { return g_device_count; }
int current_device() { return t_current_device; }
void check_device_index(int index) {
  TORCH_CHECK(index >= 0 && index < g_device_count, "npu-sim: invalid device index ", index,
              " (device_count() is ", g_device_count.load(), ")");
}
void set_current_device(int index) {
  check_device_index(index);
  t_current_device = index;
}
double host_time_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

namespace {

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kNpu; }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kNpu, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kNpu, "npu-sim: expected an npu device, got ", d);
    if (d.index() >= 0) set_current_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count()) t_current_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const override {
    int idx = d.index() < 0 ? current_device() : d.index();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), t_current_stream[idx]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    int idx = d.index() < 0 ? current_device() : d.index();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), 0);
  }
  c10::Stream getNewStream(c10::Device d, int priority = 0) const override {
    int idx = d.index() < 0 ? current_device() : d.index();
    check_device_index(idx);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), ++g_next_stream[idx]);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool = false) const override { return getNewStream(d); }
  c10::Stream exchangeStream(c10::Stream s) const override {
    auto idx = s.device_index();
    check_device_index(idx);
    auto old = c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), t_current_stream[idx]);
    t_current_stream[idx] = s.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override { return static_cast<c10::DeviceIndex>(device_count()); }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "npu-sim: event device ", int(device_index), " does not match stream device ",
                int(stream.device_index()));
    if (!*event) *event = new SimEvent();
    auto* e = static_cast<SimEvent*>(*event);
    e->device = stream.device_index();
    // Work before this point has already run (execution is synchronous): stamp now.
    e->time_ms = host_time_ms();
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<SimEvent*>(event);
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override { check_not_capturing("stream synchronize", "aclrtSynchronizeStream"); }
  void synchronizeEvent(void*) const override { check_not_capturing("event synchronize", "aclrtSynchronizeEvent"); }
  void synchronizeDevice(const c10::DeviceIndex) const override { check_not_capturing("device synchronize", "aclrtSynchronizeDevice"); }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13)
  // torch 2.13 asks the guard; 2.11 has no such hook (torch.npu.is_current_stream_capturing answers)
  bool isStreamCapturing(const c10::Stream&) const override { return is_capturing(); }
#endif
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    auto* a = static_cast<SimEvent*>(start);
    auto* b = static_cast<SimEvent*>(end);
    TORCH_CHECK(a && b && a->time_ms >= 0 && b->time_ms >= 0,
                "npu-sim: both events must be recorded before elapsed_time()");
    return b->time_ms - a->time_ms;
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

}  // namespace
}  // namespace npu_sim
