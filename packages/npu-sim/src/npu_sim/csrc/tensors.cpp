// CPU aliases of npu memory, recorded tensor geometry, npu allocation helpers.
#include "sim.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/CPUAllocator.h>

namespace npu_sim {

at::Tensor cpu_alias(const at::Tensor& t) {
  const auto& st = t.storage();
  // Non-owning: the npu storage keeps the memory. Resizable through the CPU allocator so an
  // out= kernel may grow it; the fallback then copies the grown result back to the npu side.
  c10::DataPtr dp(st.mutable_data(), c10::Device(c10::kCPU));
  c10::Storage storage(c10::Storage::use_byte_size_t(), st.nbytes(), std::move(dp), c10::GetCPUAllocator(),
                       /*resizable=*/true);
  auto out = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                      t.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  if (t.is_conj()) out._set_conj(true);
  if (t.is_neg()) out._set_neg(true);
  return out;
}

TensorSpec spec_of(const at::Tensor& t) {
  return TensorSpec{t.data_ptr(), t.sizes().vec(), t.strides().vec(), t.scalar_type()};
}

at::Tensor TensorSpec::cpu() const {
  return at::from_blob(data, sizes, strides, at::TensorOptions().dtype(dtype).device(c10::kCPU));
}

at::Tensor empty_npu(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype, int device) {
  DeviceIndexGuard guard(device);
  return at::detail::empty_strided_generic(sizes, strides, allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           dtype);
}

}  // namespace npu_sim
