// PrivateUse1 hooks: autograd, storage resize and generators ask the backend through these.
#include "sim.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>

#include <cstring>

namespace npu_sim {
namespace {

struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device < 0 ? current_device() : device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override { return new_generator(device); }
  at::Device getDeviceFromPtr(void* data) const override {
    int d = device_of_ptr(data);
    TORCH_CHECK(d >= 0, "npu-sim: pointer ", data, " is not npu memory");
    return c10::Device(kNpu, d);
  }
  bool isPinnedPtr(const void*) const override { return false; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "npu-sim: trying to resize a storage that is not resizable");
    DeviceIndexGuard guard(storage.device().index() < 0 ? current_device() : storage.device().index());
    at::DataPtr data = newsize ? allocator()->allocate(newsize) : at::DataPtr(nullptr, storage.device());
    size_t keep = std::min(newsize, impl->nbytes());
    if (keep) std::memcpy(data.get(), impl->data(), keep);
    impl->set_data_ptr_noswap(std::move(data));
    impl->set_nbytes(newsize);
  }
};

}  // namespace

void register_hooks() {
  static Hooks hooks;
  static bool done = [] {
    at::RegisterPrivateUse1HooksInterface(&hooks);
    return true;
  }();
  (void)done;
}

}  // namespace npu_sim
