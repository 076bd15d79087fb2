// The npu random generator: a device-tagged wrapper around a CPU generator, because the
// CPU kernels the fallback runs only accept CPU generators. State, seed and offset are the
// inner generator's, so get/set_rng_state and manual_seed behave as on a device.
#include "sim.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GeneratorImpl.h>

#include <mutex>

namespace npu_sim {
namespace {

struct SimGenerator final : public c10::GeneratorImpl {
  at::Generator cpu;

  SimGenerator(c10::DeviceIndex device, uint64_t seed)
      : c10::GeneratorImpl(c10::Device(kNpu, device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

  void set_current_seed(uint64_t seed) override { cpu.set_current_seed(seed); }
  void set_offset(uint64_t offset) override { cpu.set_offset(offset); }
  uint64_t get_offset() const override { return cpu.get_offset(); }
  uint64_t current_seed() const override { return cpu.current_seed(); }
  uint64_t seed() override { return cpu.seed(); }
  void set_state(const c10::TensorImpl& state) override { cpu.unsafeGetGeneratorImpl()->set_state(state); }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override { return cpu.unsafeGetGeneratorImpl()->get_state(); }
  // Replays draw from the live generator (the recording holds it), so the "graph-safe"
  // state is the generator's own state.
  void graphsafe_set_state(const c10::intrusive_ptr<c10::GeneratorImpl>& other) override {
    set_state(*other->get_state());
  }
  c10::intrusive_ptr<c10::GeneratorImpl> graphsafe_get_state() const override {
    return c10::intrusive_ptr<c10::GeneratorImpl>::reclaim(clone_impl());
  }
  static c10::DeviceType device_type() { return kNpu; }

 private:
  SimGenerator* clone_impl() const override {
    auto* g = new SimGenerator(device_.index(), 0);
    g->cpu = cpu.clone();
    return g;
  }
};

std::once_flag g_once;
std::vector<at::Generator> g_defaults;

}  // namespace

at::Generator new_generator(int device) {
  int d = device < 0 ? current_device() : device;
  check_device_index(d);
  return at::make_generator<SimGenerator>(static_cast<c10::DeviceIndex>(d), c10::default_rng_seed_val);
}

const at::Generator& default_generator(int device) {
  std::call_once(g_once, [] {
    for (int d = 0; d < kMaxDevices; ++d) {
      g_defaults.push_back(at::make_generator<SimGenerator>(static_cast<c10::DeviceIndex>(d), c10::default_rng_seed_val));
    }
  });
  check_device_index(device);
  return g_defaults[device];
}

at::Generator cpu_generator_of(const at::Generator& g) {
  auto* sim = dynamic_cast<SimGenerator*>(g.unsafeGetGeneratorImpl());
  TORCH_CHECK(sim, "npu-sim: not an npu generator: ", g.device());
  return sim->cpu;
}

}  // namespace npu_sim
