// Sparse tensors on npu, as a device with sparse support has them. COO: a SparseTensorImpl with
// dispatch key SparsePrivateUse1 whose indices and values are dense npu tensors; ATen's
// device-agnostic sparse kernels (construction, metadata, indices/values, copy, clone) run
// natively, every other op runs its SparseCPU kernel through the boxed fallback (fallback.cpp)
// on a CPU stand-in whose indices and values alias npu memory. Compressed layouts (CSR, CSC,
// BSR, BSC): a SparseCsrTensorImpl (SparseCsrPrivateUse1) over npu compressed/plain indices and
// values, every op through the fallback the same way. Graph capture refuses sparse tensors
// (the fallback's meta path records strided tensors only).
#include "sim.h"

#include <ATen/SparseCsrTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

#include <string>

namespace npu_sim {
namespace {

at::SparseTensorImpl* sparse_impl(const at::Tensor& t) {
  return static_cast<at::SparseTensorImpl*>(t.unsafeGetTensorImpl());
}

// A sparse tensor of `key` with `like`'s shape, dims and coalesced flag over indices/values.
at::Tensor make_sparse(c10::DispatchKey key, const at::Tensor& like, const at::Tensor& indices,
                       const at::Tensor& values) {
  const auto* src = sparse_impl(like);
  auto out = at::detail::make_tensor<at::SparseTensorImpl>(c10::DispatchKeySet(key), like.dtype());
  auto* impl = sparse_impl(out);
  impl->raw_resize_(src->sparse_dim(), src->dense_dim(), like.sizes());
  impl->set_indices_and_values_unsafe(indices, values);
  impl->set_coalesced(src->coalesced());
  return out;
}

at::SparseCsrTensorImpl* compressed_impl(const at::Tensor& t) {
  return static_cast<at::SparseCsrTensorImpl*>(t.unsafeGetTensorImpl());
}

// The same for the compressed layouts (CSR, CSC, BSR, BSC): compressed and plain indices.
at::Tensor make_compressed(c10::DispatchKey key, const at::Tensor& like, const at::Tensor& compressed,
                           const at::Tensor& plain, const at::Tensor& values) {
  auto out = at::detail::make_tensor<at::SparseCsrTensorImpl>(c10::DispatchKeySet(key), values.device(), like.layout(),
                                                              like.dtype());
  compressed_impl(out)->set_member_tensors(compressed, plain, values, like.sizes());
  return out;
}

}  // namespace

bool sparse_layout(const at::Tensor& t) { return t.is_sparse() || at::sparse_csr::is_sparse_compressed(t); }

at::Tensor sparse_to_cpu(const at::Tensor& npu, const DenseMap& dense) {
  if (!npu.is_sparse()) {
    const auto* src = compressed_impl(npu);
    return make_compressed(c10::DispatchKey::SparseCsrCPU, npu, dense(src->compressed_indices()),
                           dense(src->plain_indices()), dense(src->values()));
  }
  const auto* src = sparse_impl(npu);
  return make_sparse(c10::DispatchKey::SparseCPU, npu, dense(src->indices()), dense(src->values()));
}

at::Tensor sparse_to_npu(const at::Tensor& cpu, const DenseMap& dense) {
  if (!cpu.is_sparse()) {
    const auto* src = compressed_impl(cpu);
    at::Tensor values = dense(src->values());
    DeviceIndexGuard guard(values.device().index());  // the empty members the impl starts with
    return make_compressed(c10::DispatchKey::SparseCsrPrivateUse1, cpu, dense(src->compressed_indices()),
                           dense(src->plain_indices()), values);
  }
  const auto* src = sparse_impl(cpu);
  at::Tensor values = dense(src->values());
  // the impl takes its device from the values it is built with (allocated on the current device)
  DeviceIndexGuard guard(values.device().index());
  return make_sparse(c10::DispatchKey::SparsePrivateUse1, cpu, dense(src->indices()), values);
}

void sparse_write_back(const at::Tensor& stand_in, const at::Tensor& npu, const DenseMap& dense) {
  if (!npu.is_sparse()) {
    const auto* src = compressed_impl(stand_in);
    auto* dst = compressed_impl(npu);
    at::Tensor compressed = dense(src->compressed_indices()), plain = dense(src->plain_indices()),
               values = dense(src->values());
    if (compressed.is_same(dst->compressed_indices()) && plain.is_same(dst->plain_indices()) &&
        values.is_same(dst->values()) && stand_in.sizes() == npu.sizes())
      return;
    dst->set_member_tensors(compressed, plain, values, stand_in.sizes());
    return;
  }
  const auto* src = sparse_impl(stand_in);
  auto* dst = sparse_impl(npu);
  at::Tensor indices = dense(src->indices()), values = dense(src->values());
  if (indices.is_same(dst->indices()) && values.is_same(dst->values()) && stand_in.sizes() == npu.sizes() &&
      src->sparse_dim() == dst->sparse_dim() && src->coalesced() == dst->coalesced())
    return;
  dst->raw_resize_(src->sparse_dim(), src->dense_dim(), stand_in.sizes());
  dst->set_indices_and_values_unsafe(indices, values);
  dst->set_coalesced(src->coalesced());
}

namespace {

// A new SparseTensorImpl takes its device from the empty values it is built with, allocated on
// the current device: the kernels that make one run on the device of their result (what the
// device guard of ATen's generated registrations does for cuda).
int index_of(std::optional<c10::Device> device, const at::Tensor& like = at::Tensor()) {
  if (device && device->type() == kNpu && device->has_index()) return device->index();
  if (!device && like.defined() && like.device().type() == kNpu) return like.device().index();
  return current_device();
}

at::Tensor empty_sparse(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> pin_memory,
                        std::optional<c10::MemoryFormat> memory_format) {
  DeviceIndexGuard guard(index_of(device));
  return at::native::empty_sparse(size, dtype, layout, device, pin_memory, memory_format);
}

at::Tensor empty_like(const at::Tensor& self, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                      std::optional<c10::Device> device, std::optional<bool> pin_memory,
                      std::optional<c10::MemoryFormat> memory_format) {
  DeviceIndexGuard guard(index_of(device, self));
  return at::native::empty_like_sparse_coo(self, dtype, layout, device, pin_memory, memory_format);
}

at::Tensor with_dims(int64_t sparse_dim, int64_t dense_dim, c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                     std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                     std::optional<bool> pin_memory) {
  DeviceIndexGuard guard(index_of(device));
  return at::native::new_with_dims_sparse(sparse_dim, dense_dim, size, dtype, layout, device, pin_memory);
}

at::Tensor with_dims_and_tensors(int64_t sparse_dim, int64_t dense_dim, c10::SymIntArrayRef size,
                                 const at::Tensor& indices, const at::Tensor& values,
                                 std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                                 std::optional<c10::Device> device, std::optional<bool> pin_memory,
                                 std::optional<bool> is_coalesced) {
  DeviceIndexGuard guard(index_of(device, values));
  return at::native::new_with_dims_and_tensor_sparse_symint(sparse_dim, dense_dim, size, indices, values, dtype, layout,
                                                            device, pin_memory, is_coalesced);
}

at::Tensor clone(const at::Tensor& self, std::optional<c10::MemoryFormat> memory_format) {
  DeviceIndexGuard guard(self.device().index());
  return at::native::clone_sparse(self, memory_format);
}

std::string qualified(const c10::OperatorName& name) {
  return name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);  // drops "aten::"
}

}  // namespace

// The aliasing fallback runs an op's SparseCPU kernel on CPU stand-ins (fallback.cpp).
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>()); }

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  // Kernels ATen shares between its sparse backends: they touch only the sparse tensor's
  // metadata and call ops on its (npu) indices and values.
  m.impl("empty.memory_format", empty_sparse);
  m.impl("empty_like", empty_like);
  m.impl("_sparse_coo_tensor_with_dims", with_dims);
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", with_dims_and_tensors);
  m.impl("sparse_resize_", at::native::sparse_resize_);
  m.impl("sparse_resize_and_clear_", at::native::sparse_resize_and_clear_);
  m.impl("sparse_dim", at::native::sparse_dim_sparse);
  m.impl("dense_dim", at::native::dense_dim_sparse);
  m.impl("_dimI", at::native::sparse_dim_sparse);
  m.impl("_dimV", at::native::dense_dim_sparse);
  m.impl("_nnz", at::native::_nnz_sparse);
  m.impl("is_coalesced", at::native::is_coalesced_sparse);
  m.impl("_coalesced_", at::native::_coalesced_sparse_);
  m.impl("_indices", at::native::_indices_sparse);
  m.impl("_values", at::native::_values_sparse);
  m.impl("indices", at::native::indices_sparse);
  m.impl("values", at::native::values_sparse);
  m.impl("copy_", at::native::copy_sparse_wrapper_);
  m.impl("copy_sparse_to_sparse_", at::native::copy_sparse_);
  m.impl("clone", clone);
  m.impl("zero_", at::native::zero_sparse_);
  // Every other op with a SparseCPU kernel (those above are registered by now) runs it: the
  // fallback alone would lose to the op's composite kernel (add, mm ...), which a SparseCPU
  // tensor never takes.
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    auto op = dispatcher.findOp(name);
    if (op && op->hasKernelForDispatchKey(c10::DispatchKey::SparseCPU) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::SparsePrivateUse1)) {
      m.impl(qualified(name).c_str(), torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
    }
  }
}

// Compressed layouts: every op with a SparseCsrCPU kernel runs it on CPU stand-ins, as above.
TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    auto op = dispatcher.findOp(name);
    if (op && op->hasKernelForDispatchKey(c10::DispatchKey::SparseCsrCPU) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::SparseCsrPrivateUse1)) {
      m.impl(qualified(name).c_str(), torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
    }
  }
}

}  // namespace npu_sim
