// Kernels the device needs natively: factories, copies, views, resize and set_, scalar reads.
// Everything else goes through the aliasing fallback (fallback.cpp).
#include "sim.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/StorageImpl.h>
#include <torch/library.h>

namespace npu_sim {
namespace {

int device_index_of(std::optional<c10::Device> device) {
  if (device && device->has_index()) {
    check_device_index(device->index());
    return device->index();
  }
  return current_device();
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  DeviceIndexGuard guard(device_index_of(device));
  return at::detail::empty_generic(size, allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  return empty_npu(size, stride, c10::dtype_or_default(dtype), device_index_of(device));
}

// Device-to-host reads and host-to-device writes; device-to-device is a host memcpy.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  const bool src_npu = self.device().type() == kNpu;
  const bool dst_npu = dst.device().type() == kNpu;
  if (src_npu && !dst_npu) {
    check_not_capturing("copying npu memory to the host (" + std::string(dst.device().str()) + ")", "aclrtMemcpy");
    dst.copy_(cpu_alias(self), non_blocking);
    return dst;
  }
  TORCH_CHECK(dst_npu, "npu-sim: _copy_from with no npu tensor");
  if (is_capturing()) {
    auto dst_spec = spec_of(dst);
    if (src_npu) {
      auto src_spec = spec_of(self);
      record([dst_spec, src_spec] { dst_spec.cpu().copy_(src_spec.cpu()); }, "copy npu->npu");
    } else {
      // a blocking host-to-device copy is a synchronous aclrtMemcpy, which capture refuses
      if (!non_blocking && capture_rules_on()) fail_during_capture("a synchronous host-to-device copy", "aclrtMemcpy");
      // the host source is read at replay, as a device graph reads the captured address
      at::Tensor src = self;
      record([dst_spec, src] { dst_spec.cpu().copy_(src); }, "copy host->npu");
    }
    return dst;
  }
  cpu_alias(dst).copy_(src_npu ? cpu_alias(self) : self, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  check_not_capturing("reading a device value on the host (.item())", "aclrtMemcpy");
  return at::_local_scalar_dense(cpu_alias(self));
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  DeviceIndexGuard guard(self.device().index());
  // the CPU resize grows storages through their own allocator, which is ours
  return at::native::resize_(self, size, memory_format);
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) { return at::native::set_tensor_(self, source); }

// t.set_(storage): the whole storage as a 1-d tensor of t's dtype (the CPU kernel would make a
// CPU storage for it)
at::Tensor& set_whole_storage(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return at::native::set_storage_cpu_(self, std::move(source), 0, {numel}, {});
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, allocator(), /*resizable=*/true);
  return at::native::set_storage_cpu_(self, std::move(storage), 0, {0}, {});
}

void record_stream(at::Tensor&, c10::Stream) {}  // single host timeline: nothing to track

// Whether `self` may take `from`'s data in place (`param.data = t`, nn.Module._apply): dense
// npu and dense CPU tensors are plain TensorImpls over a storage, as cuda's are, so a
// Parameter moved with .to("npu") stays the same object and tied weights stay tied. c10's
// TensorImpl::has_compatible_shallow_copy_type lists the dense backends without PrivateUse1;
// the operator is dispatched so a backend can answer for its tensors.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& t) {
    return t.layout() == c10::kStrided && !t.is_nested() && !t.is_quantized() &&
           (t.device().type() == kNpu || t.device().type() == c10::kCPU);
  };
  if (dense(self) && dense(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Storage", set_whole_storage);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("set_", set_empty);
  m.impl("record_stream", record_stream);
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

// A conjugated or negated npu tensor reaches _copy_from with its Conjugate/Negative bit set.
// ATen's conj/neg fallbacks would resolve it with clone(), whose copy calls _copy_from again
// on the same tensor: unbounded recursion, a stack overflow (fft.hfft on npu died so). Our
// copy keeps the bits on its CPU aliases and the CPU copy resolves them, as cuda's copy does.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace npu_sim

