// AOTInductor's model runner for device "npu": what torch's AOTIModelPackageLoader (and so
// torch._inductor.aoti_load_package) looks up by the package's device key. Upstream registers
// runners for cpu/cuda/xpu/mps only; torch_npu registers its own for "npu" on Ascend, as this
// does for the simulated device. The runner is upstream's: it loads the model .so and calls
// its AOTInductorModelContainer functions with the device string "npu[:i]"; the model code
// (npu-lowering's AOT codegen, npu_aoti.h) maps that string itself.
#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>

namespace npu_sim {
namespace {

class NpuSimModelContainerRunner : public torch::inductor::AOTIModelContainerRunner {
 public:
  NpuSimModelContainerRunner(const std::string& model_so_path, size_t num_models, const std::string& device_str,
                             const std::string& cubin_dir, bool run_single_threaded)
      : AOTIModelContainerRunner(model_so_path, num_models, device_str, cubin_dir, run_single_threaded) {}
};

std::unique_ptr<torch::inductor::AOTIModelContainerRunner> create_runner(const std::string& model_so_path,
                                                                         size_t num_models,
                                                                         const std::string& device_str,
                                                                         const std::string& cubin_dir,
                                                                         const bool run_single_threaded) {
  return std::make_unique<NpuSimModelContainerRunner>(model_so_path, num_models, device_str, cubin_dir,
                                                      run_single_threaded);
}

// at load of npu_sim._C, i.e. when npu-sim provides device "npu"
torch::inductor::RegisterAOTIModelRunner register_npu_runner("npu", &create_runner);

}  // namespace
}  // namespace npu_sim
