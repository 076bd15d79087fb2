// A kernel descriptor file (NPLKD1, schema version 2: src/npu_launcher/descriptor.py) read in
// C++, for the Python-free C library: the fields a cuda or ascend launch needs, with the
// checks descriptor.py's from_bytes makes (magic, schema, version, binary length and SHA-256).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npl {

struct DescriptorArg {
  std::string name;
  std::string type;  // Triton type: "*fp32", "i32", ...
  uint32_t align = 1;
};

struct DescriptorFile {
  std::string name;
  std::string backend;      // target.backend: "cuda", "npu", "sim"
  std::string arch;         // target.arch: "90", "Ascend910B3", ""
  std::string device_type;  // target.device_type: "cuda", "npu"
  std::string binary_format;
  std::vector<char> binary;
  std::vector<DescriptorArg> args;
  int shared = 0;
  int num_warps = 1;
  int trailing_null_params = 0;
  std::string mix_mode = "aiv";  // extra.mix_mode (ascend)
  bool ffts = true;              // extra.ffts
  bool simt_only = false;        // extra.simt_only
  size_t n_specialized = 0;      // call arguments specialized into the binary
};

// false with the reason in err (naming the file)
bool read_descriptor_file(const char *path, DescriptorFile &out, std::string &err);

// lowercase hex SHA-256 of data (FIPS 180-4)
std::string sha256_hex(const unsigned char *data, size_t n);

}  // namespace npl
