// Normalizations with a CompositeExplicitAutograd kernel beside their CPU kernel: for npu the
// composite one would win over the boxed fallback, and it differs from the CPU kernel (on an
// empty bfloat16/float16 input native_layer_norm's composite returns float32 mean and rstd, the
// CPU kernel the input's dtype). Registered for PrivateUse1, they run the CPU kernel as the
// fallback does, so npu results match cpu's.
#include "sim.h"

#include <torch/library.h>

namespace npu_sim {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
}

}  // namespace npu_sim
