// CPU emulation shim: __half with round-to-nearest-even conversions.
#pragma once

#include <cmath>
#include <cstdint>

struct __half {
  uint16_t b;
};

inline float __half2float(__half h) {
  const uint32_t s = (h.b >> 15) & 1, e = (h.b >> 10) & 31, m = h.b & 1023;
  float f;
  if (e == 0)
    f = std::ldexp((float)m, -24);
  else if (e == 31)
    f = m ? NAN : INFINITY;
  else
    f = std::ldexp((float)(m | 1024), (int)e - 25);
  return s ? -f : f;
}

inline __half __float2half_rn(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return __half{0x7e00};
  const float a = std::fabs(f);
  if (a >= 65520.0f) return __half{(uint16_t)(sign | 0x7c00)};
  int e;
  std::frexp(a, &e);                    // a = m * 2^e, m in [0.5, 1)
  const int q = std::max(e - 11, -24);  // exponent of one unit in the last place
  const float v = std::ldexp(std::nearbyint(std::ldexp(a, -q)), q);  // nearest even
  if (v == 0.0f) return __half{sign};
  int ee;
  const float mm = std::frexp(v, &ee);
  const int exp_field = ee - 1 + 15;
  if (exp_field <= 0) return __half{(uint16_t)(sign | (uint16_t)std::lround(std::ldexp(v, 24)))};
  return __half{(uint16_t)(sign | (uint16_t)(exp_field << 10) | (uint16_t)std::lround((mm * 2 - 1) * 1024))};
}
