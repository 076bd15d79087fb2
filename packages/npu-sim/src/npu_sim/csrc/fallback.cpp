// The boxed fallback: every op without a native npu kernel runs its CPU kernel on CPU tensors
// that alias npu memory. In-place and out= ops write in place; nothing is copied in and out.
// While the thread captures a graph, the op is not run: its outputs are shaped by the meta
// kernel, allocated from the graph's pool, and the call is recorded for replay.
#include "sim.h"
#include "map_tensors.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/library.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include <atomic>
#include <cstring>

#include <unordered_map>

namespace npu_sim {
namespace {

using Stack = torch::jit::Stack;

// Maps the npu tensors of one call to their stand-ins (CPU aliases or meta tensors).
struct Mapping {
  std::unordered_map<c10::TensorImpl*, at::Tensor> npu_of;  // stand-in impl -> npu tensor
  std::vector<std::pair<at::Tensor, at::Tensor>> pairs;     // (stand-in, npu): keeps stand-ins alive
  int device = -1;
  std::string op_name;

  at::Tensor to_cpu(const at::Tensor& t) {
    if (!t.defined() || t.device().type() != kNpu) return t;
    note_device(t);
    // sparse: a CPU sparse tensor over CPU aliases of its indices and values (sparse.cpp), one
    // per npu tensor, so a kernel sees `s.add_(s)` as the CPU kernel does, and the write-back of
    // a second stand-in cannot undo the first's
    if (sparse_layout(t)) {
      for (auto& [stand_in, npu] : pairs)
        if (npu.is_same(t)) return stand_in;
    }
    auto alias = sparse_layout(t) ? sparse_to_cpu(t, [&](const at::Tensor& d) { return to_cpu(d); }) : cpu_alias(t);
    npu_of.emplace(alias.unsafeGetTensorImpl(), t);
    pairs.emplace_back(alias, t);
    return alias;
  }
  at::Tensor to_meta(const at::Tensor& t) {
    if (!t.defined() || t.device().type() != kNpu) return t;
    TORCH_CHECK_NOT_IMPLEMENTED(t.layout() == c10::kStrided, "npu-sim: cannot capture ", op_name, " on a ", t.layout(),
                                " tensor: graphs record strided tensors only");
    // geometry is all a meta kernel needs to shape the outputs
    auto m = at::empty_strided(t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()).device(at::kMeta));
    npu_of.emplace(m.unsafeGetTensorImpl(), t);
    pairs.emplace_back(m, t);
    return m;
  }
  void note_device(const at::Tensor& t) {
    int d = t.device().index();
    TORCH_CHECK(device < 0 || device == d, "npu-sim: ", op_name, ": expected all npu tensors on one device, got npu:",
                device, " and npu:", d);
    device = d;
  }
};

bool has_npu_tensor(const c10::IValue& v) {
  bool found = false;
  map_tensors(v, [&](const at::Tensor& t) {
    if (t.defined() && t.device().type() == kNpu) found = true;
    return t;
  });
  return found;
}

// Non-tensor arguments a CPU kernel cannot take as they are.
c10::IValue to_cpu_scalar_arg(const c10::IValue& v, const c10::Argument& arg, bool any_npu, c10::DeviceType target) {
  if (v.isDevice() && v.toDevice().type() == kNpu) return c10::Device(target);
  if (v.isGenerator()) {
    auto g = v.toGenerator();
    return g.device().type() == kNpu ? cpu_generator_of(g) : g;
  }
  if (v.isNone() && any_npu && target == c10::kCPU) {
    auto kind = arg.type()->kind();
    if (kind == c10::TypeKind::OptionalType &&
        arg.type()->expectRef<c10::OptionalType>().getElementType()->kind() == c10::TypeKind::GeneratorType) {
      return cpu_generator_of(default_generator(current_device()));  // the npu default generator
    }
  }
  return v;
}

// A CPU result as an npu tensor: the npu tensor itself when the kernel returned an alias
// argument, a view of npu memory when it returned a view of one, else a fresh npu tensor.
at::Tensor to_npu_result(const at::Tensor& r, Mapping& map, int device) {
  if (!r.defined() || r.device().type() != c10::kCPU) return r;
  auto it = map.npu_of.find(r.unsafeGetTensorImpl());
  if (it != map.npu_of.end()) return it->second;
  if (sparse_layout(r))
    return sparse_to_npu(r, [&](const at::Tensor& d) { return to_npu_result(d, map, device); });
  TORCH_CHECK_NOT_IMPLEMENTED(r.layout() == c10::kStrided, "npu-sim: ", map.op_name, " returned a ", r.layout(),
                              " tensor: npu-sim has strided and sparse tensors only");
  for (auto& kv : map.npu_of) {  // a view of an npu argument's memory
    const at::Tensor& npu = kv.second;
    if (npu.layout() != c10::kStrided) continue;
    const char* base = static_cast<const char*>(npu.storage().data());
    const char* p = static_cast<const char*>(r.storage().data());
    if (base && p == base && r.storage().nbytes() <= npu.storage().nbytes() && r.dtype() == npu.dtype()) {
      auto view = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(npu.storage()),
                                                           npu.key_set(), npu.dtype());
      view.unsafeGetTensorImpl()->set_sizes_and_strides(r.sizes(), r.strides(), r.storage_offset());
      return view;
    }
  }
  auto out = r.is_non_overlapping_and_dense() ? empty_npu(r.sizes(), r.strides(), r.scalar_type(), device)
                                               : empty_npu(r.sizes(), c10::contiguous_strides(r.sizes()), r.scalar_type(), device);
  cpu_alias(out).copy_(r);
  return out;
}

// out= kernels may have resized an alias (a grown one has its storage in CPU memory): give the
// npu tensor the alias's geometry and, when it grew, a storage as large (grown in place, so
// other views of it see the new memory, as a CPU resize does) holding the alias's bytes.
void write_back_resized(Mapping& map, int device) {
  for (auto& [alias_t, npu] : map.pairs) {
    if (npu.layout() != c10::kStrided) continue;
    if (alias_t.storage().data() == npu.storage().data() && alias_t.sizes() == npu.sizes() &&
        alias_t.strides() == npu.strides() && alias_t.storage_offset() == npu.storage_offset())
      continue;
    if (alias_t.storage().data() != npu.storage().data()) {
      const size_t nbytes = alias_t.storage().nbytes();
      if (nbytes > npu.storage().nbytes()) at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(npu.storage(), nbytes);
      if (nbytes) std::memcpy(npu.storage().mutable_data(), alias_t.storage().data(), nbytes);
    }
    npu.unsafeGetTensorImpl()->set_sizes_and_strides(alias_t.sizes(), alias_t.strides(), alias_t.storage_offset());
  }
  for (auto& [stand_in, npu] : map.pairs) {  // sparse: after their indices and values above
    if (sparse_layout(npu))
      sparse_write_back(stand_in, npu, [&](const at::Tensor& d) { return to_npu_result(d, map, device); });
  }
}

std::atomic<int64_t> g_eager_ops{0};  // ops run on the device outside capture and replay (benches)

void run_eager(const c10::OperatorHandle& op, Stack* stack, size_t first, const std::vector<c10::Argument>& args,
               bool any_npu) {
  g_eager_ops.fetch_add(1, std::memory_order_relaxed);
  Mapping map;
  map.op_name = op.schema().name();
  for (size_t i = 0; i < args.size(); ++i) {
    auto& v = (*stack)[first + i];
    v = map_tensors(v, [&](const at::Tensor& t) { return map.to_cpu(t); });
    v = to_cpu_scalar_arg(v, args[i], any_npu, c10::kCPU);
  }
  int device = map.device >= 0 ? map.device : current_device();
  call_cpu_kernel(op, stack);
  write_back_resized(map, device);
  size_t nret = op.schema().returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    (*stack)[i] = map_tensors((*stack)[i], [&](const at::Tensor& r) { return to_npu_result(r, map, device); });
  }
}

void run_captured(const c10::OperatorHandle& op, Stack* stack, size_t first, const std::vector<c10::Argument>& args,
                  bool any_npu) {
  const std::string name = op.schema().name() + (op.schema().overload_name().empty() ? "" : "." + op.schema().overload_name());
  check_capturable(name);  // the capture rules: only ops of the capturable set capture
  // Shapes from the meta kernel; the op itself does not run.
  Mapping meta;
  meta.op_name = name;
  Stack meta_stack;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& v = (*stack)[first + i];
    meta_stack.push_back(to_cpu_scalar_arg(map_tensors(v, [&](const at::Tensor& t) { return meta.to_meta(t); }), args[i],
                                           any_npu, c10::kMeta));
  }
  try {
    op.callBoxed(&meta_stack);
  } catch (const c10::Error& e) {
    // an output whose size depends on the data: the device op reads it back synchronously
    if (capture_rules_on())
      fail_during_capture(name + " (an output size that depends on the data, read back to the host)", "aclrtMemcpy");
    TORCH_CHECK(false, "npu-sim: cannot capture ", name, ": its meta kernel failed (", e.what_without_backtrace(), ")");
  } catch (const std::exception& e) {  // a meta kernel written in Python raises a Python error
    if (capture_rules_on())
      fail_during_capture(name + " (an output size that depends on the data, read back to the host)", "aclrtMemcpy");
    throw;
  }
  const size_t nret = op.schema().returns().size();
  const size_t ret0 = meta_stack.size() - nret;
  // out= tensors the op resizes (factories write into empty(0) outputs) get their shape now,
  // from the graph's pool, before their addresses are recorded.
  for (size_t i = ret0; i < meta_stack.size(); ++i) {
    if (!meta_stack[i].isTensor()) continue;
    const at::Tensor& m = meta_stack[i].toTensor();
    TORCH_CHECK_NOT_IMPLEMENTED(!m.defined() || m.layout() == c10::kStrided, "npu-sim: cannot capture ", name,
                                ": it returns a ", m.layout(), " tensor (graphs record strided tensors only)");
    auto it = meta.npu_of.find(m.unsafeGetTensorImpl());
    if (it != meta.npu_of.end() && (m.sizes() != it->second.sizes() || m.strides() != it->second.strides())) {
      at::Tensor npu = it->second;
      npu.resize_(m.sizes());
      if (npu.strides() != m.strides()) npu.as_strided_(m.sizes(), m.strides());
    }
  }
  // Non-owning aliases: the recording keeps addresses, not memory, as a device graph does.
  Mapping cpu;
  cpu.op_name = name;
  Stack cpu_stack;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& v = (*stack)[first + i];
    cpu_stack.push_back(to_cpu_scalar_arg(map_tensors(v, [&](const at::Tensor& t) { return cpu.to_cpu(t); }), args[i],
                                          any_npu, c10::kCPU));
  }
  int device = cpu.device >= 0 ? cpu.device : current_device();
  std::vector<std::pair<size_t, at::Tensor>> copies;  // (return index, alias of its npu output)
  stack->erase(stack->begin() + first, stack->end());
  for (size_t i = ret0; i < meta_stack.size(); ++i) {
    const auto& mv = meta_stack[i];
    TORCH_CHECK(!mv.isTensorList() && !mv.isList(), "npu-sim: cannot capture ", name, ": list outputs");
    if (!mv.isTensor()) {
      stack->push_back(mv);
      continue;
    }
    const at::Tensor& m = mv.toTensor();
    auto it = meta.npu_of.find(m.unsafeGetTensorImpl());
    if (it != meta.npu_of.end()) {  // in-place or out=: written at replay
      stack->push_back(it->second);
      continue;
    }
    auto out = empty_npu(m.sizes(), m.strides(), m.scalar_type(), device);  // from the graph's pool, poisoned
    copies.emplace_back(i - ret0, cpu_alias(out));
    stack->push_back(out);
  }
  record(
      [op, cpu_stack, copies, nret] {
        Stack s = cpu_stack;
        call_cpu_kernel(op, &s);
        for (auto& c : copies) c.second.copy_(s[s.size() - nret + c.first].toTensor());
      },
      name.c_str());
}

}  // namespace

int64_t eager_op_count() { return g_eager_ops.load(std::memory_order_relaxed); }

void run_on_cpu(const c10::OperatorHandle& op, Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  bool any_npu = false;
  for (size_t i = first; i < stack->size(); ++i) any_npu = any_npu || has_npu_tensor((*stack)[i]);
  if (is_capturing()) {
    run_captured(op, stack, first, args, any_npu);
  } else {
    run_eager(op, stack, first, args, any_npu);
  }
}


TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>()); }

}  // namespace npu_sim
