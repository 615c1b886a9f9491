#include "src/core/copy.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace armci {
namespace {

// Copies from the end toward the start. When dst is a little ahead of src
// modulo 4 KiB, a forward copy loads bytes whose low 12 address bits match
// stores it has just made, and every load waits for them; walking backward
// the loads stay ahead of the stores instead.
__attribute__((target("avx2"))) void copy_backward_avx2(std::byte* dst, const std::byte* src,
                                                         std::size_t bytes) noexcept {
  // The unaligned head and tail first, so the main loop stores aligned.
  __m256i head = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  __m256i tail = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + bytes - 32));
  std::byte* dst_end = dst + bytes;
  std::byte* aligned_end =
      reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(dst_end) & ~std::uintptr_t{31});
  const std::byte* s = src + (aligned_end - dst);
  std::byte* d = aligned_end;
  std::byte* stop = dst;  // the head store covers what is left below d
  while (d - 128 >= stop) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s - 32));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s - 64));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s - 96));
    __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s - 128));
    _mm256_store_si256(reinterpret_cast<__m256i*>(d - 32), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d - 64), b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d - 96), c);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d - 128), e);
    s -= 128;
    d -= 128;
  }
  while (d - 32 >= stop) {
    s -= 32;
    d -= 32;
    _mm256_store_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst_end - 32), tail);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), head);
}

const bool g_have_avx2 = __builtin_cpu_supports("avx2");

}  // namespace

void copy_bytes(void* dst, const void* src, std::size_t bytes) noexcept {
  // glibc copies this range with `rep movsb` (from its threshold, 2 KiB
  // here, up to about the L2 size, where it turns to non-temporal stores).
  // On AMD CPUs with fast short `rep movsb` that string copy crawls when the
  // destination is a little ahead of the source modulo the page size, while
  // a vector loop runs at the aligned speed at every distance; outside the
  // range glibc is as fast at every distance. docs/protocols.md shows the rule.
  constexpr std::size_t kMinimum = 2 * 1024;
  constexpr std::size_t kMaximum = 1024 * 1024;
  const std::size_t distance =
      (reinterpret_cast<std::uintptr_t>(dst) - reinterpret_cast<std::uintptr_t>(src)) & 4095;
  if (bytes >= kMinimum && bytes < kMaximum && distance != 0 && distance < 256 && g_have_avx2) {
    copy_backward_avx2(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes);
    return;
  }
  std::memcpy(dst, src, bytes);
}

std::string copy_rule() {
  return g_have_avx2 ? "memcpy; 2 KiB..1 MiB with dst 1-255 B ahead of src modulo 4 KiB: AVX2 loop (glibc's rep movsb crawls there)"
                     : "memcpy (no AVX2)";
}

}  // namespace armci
