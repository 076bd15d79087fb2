// A C++ program serving an AOTInductor package for npu (test_aoti.py builds it against
// libtorch and libpython): torch's AOTIModelPackageLoader loads the .pt2 and runs it; the
// outputs are compared with the eager outputs the test saved.
//
//   run_package <package.pt2> <case folder>...
//
// $NPU_AOTI_PYTHON, when set, is the Python executable whose environment (a venv's
// site-packages) the embedded interpreter takes, as if that executable ran.
//
// Each case folder holds in<i>.bin (the inputs) and out<i>.bin (eager's outputs), each
// "<int64 ndim> <int64 sizes...> <float32 data>". Prints one line per case, exits 0 when every
// output matches.
//
// On npu-sim the device and the kernels (Triton's interpreter) are Python: the program starts
// an embedded interpreter and imports torch (autoload starts npu-sim, whose extension also
// registers the "npu" model runner), then uses only the C++ API.
#include <Python.h>

#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

static at::Tensor read_tensor(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  int64_t ndim = 0;
  f.read(reinterpret_cast<char*>(&ndim), sizeof(ndim));
  std::vector<int64_t> sizes(ndim);
  f.read(reinterpret_cast<char*>(sizes.data()), ndim * sizeof(int64_t));
  at::Tensor t = at::empty(sizes, at::kFloat);
  f.read(reinterpret_cast<char*>(t.data_ptr<float>()), t.numel() * sizeof(float));
  if (!f) throw std::runtime_error("short file " + path);
  return t;
}

static bool exists(const std::string& path) { return std::ifstream(path).good(); }

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <package.pt2> <case folder>...\n", argv[0]);
    return 2;
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  if (const char* python = std::getenv("NPU_AOTI_PYTHON")) {
    PyConfig_SetBytesString(&config, &config.program_name, python);  // finds the venv's pyvenv.cfg
  }
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) return 3;
  if (PyRun_SimpleString("import torch") != 0) return 3;  // npu-sim: device "npu" and its runner

  int failures = 0;
  try {
    torch::inductor::AOTIModelPackageLoader loader(argv[1]);
    const c10::Device npu("npu:0");
    for (int c = 2; c < argc; ++c) {
      std::string dir = argv[c];
      std::vector<at::Tensor> inputs;
      for (int i = 0; exists(dir + "/in" + std::to_string(i) + ".bin"); ++i)
        inputs.push_back(read_tensor(dir + "/in" + std::to_string(i) + ".bin").to(npu));
      std::vector<at::Tensor> outputs = loader.run(inputs);
      size_t expected = 0;
      double worst = 0.0;
      bool ok = true;
      for (; exists(dir + "/out" + std::to_string(expected) + ".bin"); ++expected) {
        if (expected >= outputs.size()) { ok = false; break; }
        at::Tensor out = outputs[expected];
        at::Tensor ref = read_tensor(dir + "/out" + std::to_string(expected) + ".bin");
        if (out.device().type() != c10::DeviceType::PrivateUse1 || out.sizes() != ref.sizes()) { ok = false; continue; }
        at::Tensor o = out.to(at::kCPU).to(at::kFloat);
        worst = std::max(worst, (o - ref).abs().max().item<double>());
        ok = ok && at::allclose(o, ref, 1e-4, 1e-4);
      }
      ok = ok && expected == outputs.size() && expected > 0;
      std::printf("case %s: %zu outputs on %s, max abs diff %.3g: %s\n", dir.c_str(), outputs.size(),
                  outputs.empty() ? "-" : outputs[0].device().str().c_str(), worst, ok ? "match" : "MISMATCH");
      failures += ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 4;
  }
  return failures == 0 ? 0 : 1;
}
