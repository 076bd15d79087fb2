// Random ops whose CPU kernel has no generator argument. The boxed fallback hands an op's
// optional generator the npu generator (fallback.cpp), but native_dropout's schema has none:
// its CPU kernel drew its mask from the CPU default generator, so torch.npu.manual_seed did
// not repeat an npu dropout, and a compiled graph (fallback_random) could not equal eager.
// Here it is the CPU kernel's computation on npu tensors, the mask drawn by bernoulli_ (whose
// generator argument the fallback fills with the npu generator).
#include "sim.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>

namespace npu_sim {
namespace {

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) {
    return std::make_tuple(input, at::empty_like(input, input.options().dtype(at::kBool)));
  }
  if (train.has_value() && !*train) {
    return std::make_tuple(input.clone(), at::ones_like(input, input.options().dtype(at::kBool)));
  }
  double p1m = 1. - p;
  double scale = p1m == 0 ? 0. : 1. / p1m;  // as the CPU kernel: p == 1 gives zeros, not NaN
  auto mask = at::empty_like(input, at::MemoryFormat::Contiguous);
  mask.bernoulli_(p1m);
  auto output = input.mul(mask).mul_(scale);
  return std::make_tuple(output, mask.to(at::kBool));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", native_dropout);
}

}  // namespace npu_sim
