/* A process with neither Python nor torch that launches a kernel through npu-launcher's
 * Python-free C ABI (libnpu_launcher_direct.so), as a C++ server of an AOTInductor package
 * on Ascend would (test_direct_capi.py builds and runs it against fake_cann.c).
 *
 *   serve_without_python <libnpu_launcher_direct.so> <descriptor file>
 *
 * The AOTI shim functions the library reads tensors through (libtorch's, in a real server)
 * are defined here over a small tensor record and exported (-rdynamic). Prints
 *   python_mapped <0|1>             whether any libpython is mapped into this process
 *   launched <data pointer>         after one good launch
 *   refused <message>               a launch with a float16 tensor for a float32 argument
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "npu_launcher_capi.h"

typedef struct {
  void *data;
  int32_t device_type, device_index, dtype;
} Tensor;

int32_t aoti_torch_get_data_ptr(void *h, void **out) { *out = ((Tensor *)h)->data; return 0; }
int32_t aoti_torch_get_device_type(void *h, int32_t *out) { *out = ((Tensor *)h)->device_type; return 0; }
int32_t aoti_torch_get_device_index(void *h, int32_t *out) { *out = ((Tensor *)h)->device_index; return 0; }
int32_t aoti_torch_get_dtype(void *h, int32_t *out) { *out = ((Tensor *)h)->dtype; return 0; }
int32_t aoti_torch_device_type_cuda(void) { return 1; }
int32_t aoti_torch_device_type_cpu(void) { return 0; }
int32_t aoti_torch_device_type_privateuse1(void) { return 20; }
int32_t aoti_torch_dtype_float16(void) { return 5; }
int32_t aoti_torch_dtype_float32(void) { return 6; }

static int python_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "libpython")) found = 1;
  if (f) fclose(f);
  return found;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 3; }
  NplDirectApiFn get = (NplDirectApiFn)dlsym(lib, NPL_DIRECT_SYMBOL);
  if (!get) { fprintf(stderr, "no %s\n", NPL_DIRECT_SYMBOL); return 3; }
  const NplCApi *api = get();
  char err[1024] = {0};
  void *k = api->load(argv[2], -1, err, sizeof err);
  if (!k) { fprintf(stderr, "load: %s\n", err); return 4; }
  static float buf[64] __attribute__((aligned(64)));
  Tensor x = {buf, 20, 0, 6};
  void *hx = &x;
  int32_t n = 64;
  void *args[2] = {&hx, &n};
  if (api->num_args(k) != 2) { fprintf(stderr, "num_args %d\n", api->num_args(k)); return 5; }
  if (api->launch(k, 4, 1, 1, (void *)0x5, args, 2, err, sizeof err) != 0) {
    fprintf(stderr, "launch: %s\n", err);
    return 6;
  }
  printf("python_mapped %d\n", python_mapped());
  printf("launched %llu\n", (unsigned long long)(uintptr_t)buf);
  Tensor half = {buf, 20, 0, 5};
  void *hh = &half;
  args[0] = &hh;
  if (api->launch(k, 4, 1, 1, NULL, args, 2, err, sizeof err) == 0) return 7;
  printf("refused %s\n", err);
  api->release(k);
  return 0;
}
