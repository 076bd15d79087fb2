/* A stand-in for CANN's runtime (libascendcl.so + libruntime.so) for tests without an NPU:
 * the functions npu-launcher's ascend driver resolves, with the same prototypes
 * (csrc/ascend_api.h), recording each call as one line of FAKE_CANN_LOG:
 *   set_device <id>
 *   register <magic hex> <length> <first bytes hex>
 *   function <stub name> <device function name> <mode>
 *   launch <device function name> <blockDim> <argsSize> <stream> <args hex>
 * aclrtGetSocName answers FAKE_CANN_SOC (default Ascend910B3); FAKE_CANN_FAIL=<function>
 * makes that function return error 0x7 (507015-style runtime failure). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint32_t magic;
  uint32_t version;
  const void *data;
  uint64_t length;
} rtDevBinary_t;

#define MAX_STUBS 4096
static const void *stubs[MAX_STUBS];
static char *stub_funcs[MAX_STUBS];
static int n_stubs = 0;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void log_line(const char *fmt, ...) {
  const char *path = getenv("FAKE_CANN_LOG");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

static int failing(const char *name) {
  const char *f = getenv("FAKE_CANN_FAIL");
  return f && strcmp(f, name) == 0;
}

static void hex(const void *data, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = 0;
}

int aclrtSetDevice(int32_t device) {
  log_line("set_device %d", device);
  return failing("aclrtSetDevice") ? 7 : 0;
}

const char *aclrtGetSocName(void) {
  const char *soc = getenv("FAKE_CANN_SOC");
  return soc && *soc ? soc : "Ascend910B3";
}

int rtDevBinaryRegister(const rtDevBinary_t *bin, void **handle) {
  if (failing("rtDevBinaryRegister")) return 7;
  char head[2 * 16 + 1];
  size_t n = bin->length < 16 ? (size_t)bin->length : 16;
  hex(bin->data, n, head);
  log_line("register %x %llu %s", bin->magic, (unsigned long long)bin->length, head);
  *handle = malloc(1);
  return 0;
}

int rtFunctionRegister(void *handle, const void *stub, const char *stub_name, const void *dev_func,
                       uint32_t mode) {
  (void)handle;
  if (failing("rtFunctionRegister")) return 7;
  if (n_stubs < MAX_STUBS) {
    stubs[n_stubs] = stub;
    stub_funcs[n_stubs] = strdup((const char *)dev_func);
    ++n_stubs;
  }
  log_line("function %s %s %u", stub_name, (const char *)dev_func, mode);
  return 0;
}

int rtGetC2cCtrlAddr(uint64_t *addr, uint32_t *len) {
  *addr = 0xC2C0000ull;
  *len = 64;
  return 0;
}

int rtKernelLaunch(const void *stub, uint32_t block_dim, void *args, uint32_t args_size,
                   void *sm_desc, void *stream) {
  (void)sm_desc;
  if (failing("rtKernelLaunch")) return 7;
  const char *name = "?";
  for (int i = 0; i < n_stubs; ++i)
    if (stubs[i] == stub) name = stub_funcs[i];
  char *buf = (char *)malloc(2 * (size_t)args_size + 1);
  hex(args, args_size, buf);
  log_line("launch %s %u %u %llu %s", name, block_dim, args_size,
           (unsigned long long)(uintptr_t)stream, buf);
  free(buf);
  return 0;
}
