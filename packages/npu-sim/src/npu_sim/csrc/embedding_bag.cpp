// EmbeddingBag's bookkeeping results in a device's shapes.
//
// `_embedding_bag` and `_embedding_bag_forward_only` return (output, offset2bag, bag_size,
// max_indices). For a non-CPU device their meta kernel (what fake tensors, and so
// torch.compile's size asserts, see; what cuda returns) gives offset2bag one entry per index,
// bag_size the offsets' size and, outside max mode, an empty max_indices, all of the indices'
// dtype. The CPU kernel leaves offset2bag empty on its sum fast path and sizes bag_size and
// max_indices per bag, so a compiled program's check of these outputs failed on npu ("expected
// size 3==0"). The CPU kernel runs as before (the output is its own); its bookkeeping results
// are then remade in the device's shapes: offset2bag filled with each index's bag, bag_size
// padded with empty bags, max_indices emptied outside max mode. The backwards (the CPU kernels,
// through the fallback) read either shape: they rebuild an empty offset2bag themselves and read
// max_indices in max mode only.
#include "sim.h"

#include <ATen/ATen.h>
#include <torch/library.h>

namespace npu_sim {
namespace {

using Stack = torch::jit::Stack;

constexpr int64_t kEmbeddingBagModeMax = 2;

// The bag of each of `n` indices: the last offset (of the first `bags`) at or before it.
at::Tensor bag_of_each_index(const at::Tensor& offsets, int64_t bags, int64_t n) {
  at::Tensor starts = offsets.cpu().to(at::kLong).narrow(0, 0, bags).contiguous();
  at::Tensor positions = at::arange(n, starts.options());
  return at::searchsorted(starts, positions, /*out_int32=*/false, /*right=*/true) - 1;
}

void embedding_bag_device_shaped(const c10::OperatorHandle& op, Stack* s) {
  // (weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  //  include_last_offset, padding_idx)
  const size_t first = s->size() - op.schema().arguments().size();
  const at::Tensor indices = (*s)[first + 1].toTensor();
  const at::Tensor offsets = (*s)[first + 2].toTensor();
  const int64_t mode = (*s)[first + 4].toInt();
  const bool include_last_offset = (*s)[first + 7].toBool();
  run_on_cpu(op, s);
  const size_t ret0 = s->size() - 4;
  const auto options = indices.options();  // the device and the meta kernel's dtype
  const int64_t n = indices.size(0);
  const int64_t bags = std::max<int64_t>(offsets.size(0) - (include_last_offset ? 1 : 0), 0);

  at::Tensor offset2bag = (*s)[ret0 + 1].toTensor();
  if (offset2bag.numel() != n) {
    offset2bag = bag_of_each_index(offsets, bags, n);
  }
  (*s)[ret0 + 1] = offset2bag.to(options);

  at::Tensor bag_size = (*s)[ret0 + 2].toTensor();
  if (bag_size.sizes() != offsets.sizes()) {
    at::Tensor padded = at::zeros(offsets.sizes(), options);
    const int64_t kept = std::min(bag_size.numel(), padded.numel());
    padded.narrow(0, 0, kept).copy_(bag_size.reshape({-1}).narrow(0, 0, kept));
    bag_size = padded;
  }
  (*s)[ret0 + 2] = bag_size.to(options);

  at::Tensor max_indices = (*s)[ret0 + 3].toTensor();
  (*s)[ret0 + 3] =
      mode == kEmbeddingBagModeMax ? max_indices.to(options) : at::empty({0}, options);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", torch::CppFunction::makeFromBoxedFunction<&embedding_bag_device_shaped>());
  m.impl("_embedding_bag_forward_only",
         torch::CppFunction::makeFromBoxedFunction<&embedding_bag_device_shaped>());
}

}  // namespace npu_sim
