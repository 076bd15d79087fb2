// Applies a function to every tensor of a dispatcher argument or result (a tensor, a tensor
// list, a list of optional tensors), keeping the rest: the one walk the fallback and its dtype
// conversions share.
#pragma once

#include <ATen/core/ivalue.h>

namespace npu_sim {

template <typename F>
c10::IValue map_tensors(const c10::IValue& v, F&& f) {
  if (v.isTensor()) return f(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(f(t));
    return out;
  }
  if (v.isList()) {  // Tensor?[] and friends
    auto list = v.toList();
    c10::impl::GenericList out(list.elementType());
    for (const c10::IValue& e : list) out.push_back(map_tensors(e, f));
    return out;
  }
  return v;
}

}  // namespace npu_sim
