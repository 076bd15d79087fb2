// Dtypes the CPU kernel lacks and an accelerator takes (npu_sim/fallback_dtypes.py holds the
// table and says why). For an op of the table, the fallback's CPU kernel gets its tensor
// arguments of a listed dtype in the compute dtype, and the results come back in the dtype the
// argument had: what the op's meta kernel gives a non-CPU device (strided and sparse layouts
// alike). Arguments the kernel writes
// (in-place, out=, rrelu's noise) are written back into the caller's tensor.
#include "sim.h"
#include "map_tensors.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <map>
#include <mutex>
#include <unordered_map>

namespace npu_sim {
namespace {

using Conversions = std::map<c10::ScalarType, c10::ScalarType>;  // argument dtype -> compute dtype

std::unordered_map<std::string, Conversions>& table() {
  static std::unordered_map<std::string, Conversions> t;
  return t;
}

void call_converted(const c10::OperatorHandle& op, torch::jit::Stack* stack, const Conversions& conv) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  std::vector<std::pair<at::Tensor, at::Tensor>> written;            // (caller's tensor, converted)
  std::unordered_map<c10::TensorImpl*, at::Tensor> original_of;      // converted -> caller's tensor
  std::map<c10::ScalarType, c10::ScalarType> back;                   // compute dtype -> result dtype
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* alias = args[i].alias_info();
    const bool writes = alias && alias->isWrite();
    auto& v = (*stack)[first + i];
    v = map_tensors(v, [&](const at::Tensor& t) {
      // sparse ones too (sampled_addmm's CSR self): `to` converts their values
      if (!t.defined()) return t;
      auto it = conv.find(t.scalar_type());
      if (it == conv.end()) return t;
      at::Tensor c = t.to(it->second);
      back.emplace(it->second, t.scalar_type());
      original_of.emplace(c.unsafeGetTensorImpl(), t);
      if (writes) written.emplace_back(t, c);
      return c;
    });
  }
  op.callBoxed(stack);
  for (auto& [caller, c] : written) {
    if (caller.sizes() != c.sizes()) caller.resize_(c.sizes());
    caller.copy_(c);
  }
  const size_t nret = op.schema().returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    (*stack)[i] = map_tensors((*stack)[i], [&](const at::Tensor& r) {
      if (!r.defined()) return r;
      auto o = original_of.find(r.unsafeGetTensorImpl());
      if (o != original_of.end()) return o->second;  // in-place / out=: the caller's tensor, written above
      auto b = back.find(r.scalar_type());
      if (b == back.end()) return r;
      return r.to(b->second);
    });
  }
}

}  // namespace

void set_dtype_conversions(const std::vector<std::pair<std::string, std::vector<std::pair<c10::ScalarType, c10::ScalarType>>>>& rows) {
  auto& t = table();
  t.clear();
  for (const auto& [name, pairs] : rows) {
    Conversions& c = t[name];
    for (const auto& [from, to] : pairs) c[from] = to;
  }
}

void call_cpu_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& t = table();
  if (!t.empty()) {
    auto it = t.find(op.schema().name());
    if (it != t.end()) {
      call_converted(op, stack, it->second);
      return;
    }
  }
  op.callBoxed(stack);
}

}  // namespace npu_sim
