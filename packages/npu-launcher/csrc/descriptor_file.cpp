// The C++ reader of descriptor files (descriptor_file.h): a small JSON reader for the header
// (the writer is json.dumps of plain values: objects, arrays, strings, numbers, true/false/
// null) and SHA-256 for the binary check.
#include "descriptor_file.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace npl {
namespace {

struct Json {
  enum Type { NUL, BOOL, NUM, STR, ARR, OBJ } type = NUL;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;

  const Json *get(const std::string &key) const {
    auto it = obj.find(key);
    return type == OBJ && it != obj.end() ? &it->second : nullptr;
  }
};

struct Parser {
  const char *p, *end;
  std::string err;

  void ws() { while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p; }
  bool fail(const char *what) {
    if (err.empty()) err = what;
    return false;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if ((size_t)(end - p) < n || std::strncmp(p, word, n) != 0) return fail("bad literal");
    p += n;
    return true;
  }
  static void utf8(std::string &s, uint32_t c) {
    if (c < 0x80) { s += (char)c; return; }
    if (c < 0x800) { s += (char)(0xC0 | (c >> 6)); s += (char)(0x80 | (c & 0x3F)); return; }
    if (c < 0x10000) {
      s += (char)(0xE0 | (c >> 12)); s += (char)(0x80 | ((c >> 6) & 0x3F)); s += (char)(0x80 | (c & 0x3F));
      return;
    }
    s += (char)(0xF0 | (c >> 18)); s += (char)(0x80 | ((c >> 12) & 0x3F));
    s += (char)(0x80 | ((c >> 6) & 0x3F)); s += (char)(0x80 | (c & 0x3F));
  }
  bool hex4(uint32_t &out) {
    if (end - p < 4) return fail("short \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i, ++p) {
      char c = *p;
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return fail("bad \\u escape");
      out = out * 16 + (uint32_t)d;
    }
    return true;
  }
  bool string(std::string &s) {
    if (p >= end || *p != '"') return fail("expected a string");
    ++p;
    while (p < end && *p != '"') {
      if (*p != '\\') { s += *p++; continue; }
      if (++p >= end) break;
      char c = *p++;
      switch (c) {
        case '"': case '\\': case '/': s += c; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
            p += 2;
            uint32_t lo;
            if (!hex4(lo)) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(s, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
    if (p >= end) return fail("unterminated string");
    ++p;
    return true;
  }
  bool value(Json &v, int depth) {
    if (depth > 64) return fail("nested too deeply");
    ws();
    if (p >= end) return fail("unexpected end");
    char c = *p;
    if (c == '{') {
      v.type = Json::OBJ;
      ++p; ws();
      if (p < end && *p == '}') { ++p; return true; }
      while (true) {
        ws();
        std::string key;
        if (!string(key)) return false;
        ws();
        if (p >= end || *p++ != ':') return fail("expected ':'");
        if (!value(v.obj[key], depth + 1)) return false;
        ws();
        if (p < end && *p == ',') { ++p; continue; }
        if (p < end && *p == '}') { ++p; return true; }
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.type = Json::ARR;
      ++p; ws();
      if (p < end && *p == ']') { ++p; return true; }
      while (true) {
        v.arr.emplace_back();
        if (!value(v.arr.back(), depth + 1)) return false;
        ws();
        if (p < end && *p == ',') { ++p; continue; }
        if (p < end && *p == ']') { ++p; return true; }
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') { v.type = Json::STR; return string(v.str); }
    if (c == 't') { v.type = Json::BOOL; v.b = true; return literal("true"); }
    if (c == 'f') { v.type = Json::BOOL; return literal("false"); }
    if (c == 'n') { return literal("null"); }
    if (c == '-' || (c >= '0' && c <= '9')) {
      std::string num;
      while (p < end && std::strchr("+-0123456789.eE", *p)) num += *p++;
      char *stop = nullptr;
      v.type = Json::NUM;
      v.num = std::strtod(num.c_str(), &stop);
      return (stop && *stop == '\0') || fail("bad number");
    }
    return fail("unexpected character");
  }
};

bool as_int(const Json *v, int &out) {
  if (!v || v->type != Json::NUM || v->num != (double)(long long)v->num) return false;
  out = (int)v->num;
  return true;
}

bool as_str(const Json *v, std::string &out) {
  if (!v || v->type != Json::STR) return false;
  out = v->str;
  return true;
}

// SHA-256 (FIPS 180-4)
const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void sha256_block(uint32_t h[8], const unsigned char *b) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
    hh = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
  }
  h[0] += a; h[1] += bb; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

}  // namespace

std::string sha256_hex(const unsigned char *data, size_t n) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  size_t full = n / 64 * 64;
  for (size_t i = 0; i < full; i += 64) sha256_block(h, data + i);
  unsigned char tail[128] = {0};
  size_t rest = n - full;
  std::memcpy(tail, data + full, rest);
  tail[rest] = 0x80;
  size_t len = rest + 9 <= 64 ? 64 : 128;
  uint64_t bits = (uint64_t)n * 8;
  for (int i = 0; i < 8; ++i) tail[len - 1 - i] = (unsigned char)(bits >> (8 * i));
  for (size_t i = 0; i < len; i += 64) sha256_block(h, tail + i);
  char out[65];
  for (int i = 0; i < 8; ++i) std::snprintf(out + 8 * i, 9, "%08x", h[i]);
  return std::string(out, 64);
}

bool read_descriptor_file(const char *path, DescriptorFile &out, std::string &err) {
  std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path, "rb"), std::fclose);
  if (!f) {
    err = std::string("npu_launcher: cannot open kernel descriptor ") + path;
    return false;
  }
  std::vector<char> data;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.insert(data.end(), buf, buf + got);
  const std::string where = std::string(" (") + path + ")";
  if (data.size() < 10 || std::memcmp(data.data(), "NPLKD", 5) != 0) {
    err = "npu_launcher: not an npu-launcher kernel descriptor (bad magic)" + where;
    return false;
  }
  if (data[5] != '1') {
    err = "npu_launcher: kernel descriptor wire format NPLKD" + std::string(1, data[5]) +
          "; this npu-launcher reads NPLKD1" + where;
    return false;
  }
  uint32_t n = (uint32_t)(unsigned char)data[6] | (uint32_t)(unsigned char)data[7] << 8 |
               (uint32_t)(unsigned char)data[8] << 16 | (uint32_t)(unsigned char)data[9] << 24;
  if (data.size() < 10 + (size_t)n) {
    err = "npu_launcher: kernel descriptor header is truncated" + where;
    return false;
  }
  Json head;
  Parser parser{data.data() + 10, data.data() + 10 + n, ""};
  if (!parser.value(head, 0) || head.type != Json::OBJ) {
    err = "npu_launcher: kernel descriptor header is not a valid JSON object (" +
          (parser.err.empty() ? std::string("not an object") : parser.err) + ")" + where;
    return false;
  }
  std::string schema;
  int version = 0;
  if (!as_str(head.get("schema"), schema) || schema != "npu-launcher/kernel-descriptor") {
    err = "npu_launcher: kernel descriptor schema '" + schema + "', expected 'npu-launcher/kernel-descriptor'" + where;
    return false;
  }
  as_str(head.get("name"), out.name);
  if (!as_int(head.get("version"), version) || version != 2) {
    err = "npu_launcher: kernel '" + out.name + "': descriptor schema version " + std::to_string(version) +
          "; this npu-launcher reads version 2" + where;
    return false;
  }
  const char *bin = data.data() + 10 + n;
  size_t bin_size = data.size() - 10 - n;
  int binary_len = -1;
  std::string sha;
  if (!as_int(head.get("binary_len"), binary_len) || (size_t)binary_len != bin_size ||
      !as_str(head.get("binary_sha256"), sha) || sha != sha256_hex((const unsigned char *)bin, bin_size)) {
    err = "npu_launcher: kernel '" + out.name + "': descriptor binary is truncated or corrupt (length or SHA-256 "
          "mismatch)" + where;
    return false;
  }
  out.binary.assign(bin, bin + bin_size);
  const Json *target = head.get("target");
  const Json *args = head.get("args");
  const Json *specialized = head.get("specialized");
  bool ok = target && as_str(target->get("backend"), out.backend) && as_str(target->get("arch"), out.arch) &&
            as_str(target->get("device_type"), out.device_type) &&
            as_str(head.get("binary_format"), out.binary_format) && as_int(head.get("shared"), out.shared) &&
            as_int(head.get("num_warps"), out.num_warps) &&
            as_int(head.get("trailing_null_params"), out.trailing_null_params) && args &&
            args->type == Json::ARR && specialized && specialized->type == Json::ARR;
  for (size_t i = 0; ok && i < args->arr.size(); ++i) {
    const Json &row = args->arr[i];
    DescriptorArg a;
    int align = 0;
    ok = row.type == Json::ARR && row.arr.size() == 3 && as_str(&row.arr[0], a.name) &&
         as_str(&row.arr[1], a.type) && as_int(&row.arr[2], align) && align >= 1;
    a.align = (uint32_t)align;
    out.args.push_back(a);
  }
  if (ok) {
    out.n_specialized = specialized->arr.size();
    if (const Json *extra = head.get("extra")) {
      as_str(extra->get("mix_mode"), out.mix_mode);
      if (const Json *v = extra->get("ffts"); v && v->type == Json::BOOL) out.ffts = v->b;
      if (const Json *v = extra->get("simt_only"); v && v->type == Json::BOOL) out.simt_only = v->b;
    }
  }
  if (!ok) {
    err = "npu_launcher: kernel '" + out.name + "': descriptor header is missing or has a bad field" + where;
    return false;
  }
  return true;
}

}  // namespace npl
