#include "src/core/copy.hpp"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace armci {
namespace {

__attribute__((target("avx2"))) inline void move_32(std::byte* d, std::ptrdiff_t shift) noexcept {
  _mm256_store_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + shift)));
}

// Four loads before four stores: the loads need not wait for the stores.
__attribute__((target("avx2"))) inline void move_128(std::byte* d, std::ptrdiff_t shift) noexcept {
  const auto* s = reinterpret_cast<const __m256i*>(d + shift);
  const __m256i a = _mm256_loadu_si256(s), b = _mm256_loadu_si256(s + 1), c = _mm256_loadu_si256(s + 2),
                e = _mm256_loadu_si256(s + 3);
  auto* t = reinterpret_cast<__m256i*>(d);
  _mm256_store_si256(t, a);
  _mm256_store_si256(t + 1, b);
  _mm256_store_si256(t + 2, c);
  _mm256_store_si256(t + 3, e);
}

// A copy of 32 bytes or more whose main loop stores aligned; the unaligned
// head and tail are loaded first and stored last. Backward (from the end
// toward the start) for a dst a little ahead of src modulo 4 KiB: a
// forward copy there loads bytes whose low 12 address bits match stores it
// has just made, and every load waits for them; walking backward the loads
// stay ahead of the stores instead.
template <bool kBackward>
__attribute__((target("avx2"))) void copy_avx2(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept {
  const __m256i head = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  const __m256i tail = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + bytes - 32));
  std::byte* const dst_end = dst + bytes;
  const std::ptrdiff_t shift = src - dst;
  // The aligned blocks in between; head and tail cover what lies outside.
  std::byte* const first =
      reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(dst) + 32) & ~std::uintptr_t{31});
  std::byte* const last =
      reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(dst_end) & ~std::uintptr_t{31});
  if constexpr (kBackward) {
    std::byte* d = last;
    for (; d - first >= 128; d -= 128) move_128(d - 128, shift);
    for (; d - first >= 32; d -= 32) move_32(d - 32, shift);
  } else {
    std::byte* d = first;
    for (; last - d >= 128; d += 128) move_128(d, shift);
    for (; last - d >= 32; d += 32) move_32(d, shift);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), head);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst_end - 32), tail);
}

const bool g_have_avx2 = __builtin_cpu_supports("avx2");

}  // namespace

[[gnu::visibility("protected")]] void copy_bytes(void* dst, const void* src, std::size_t bytes) noexcept {
  // glibc copies this range with `rep movsb` (from its threshold, 2 KiB
  // here, up to about the L2 size, where it turns to non-temporal stores).
  // On AMD CPUs with fast short `rep movsb` that string copy crawls when the
  // destination is a little ahead of the source modulo the page size, while
  // a vector loop runs at the aligned speed at every distance; outside the
  // range glibc is as fast at every distance. Up to 16 KiB the string copy
  // also starts slowly at any distance: a plain vector loop takes 5-25% less
  // time there, warm or just after the buffers left L2 (GA's put and get);
  // above it both run at the cache's bandwidth. Streaming stores lose
  // 2-10x there: the destination is mostly read or written again soon.
  // docs/protocols.md shows the rule.
  constexpr std::size_t kMinimum = 2 * 1024;
  constexpr std::size_t kForwardMaximum = 16 * 1024;
  constexpr std::size_t kMaximum = 1024 * 1024;
  if (bytes >= kMinimum && bytes < kMaximum && g_have_avx2) {
    const std::size_t distance =
        (reinterpret_cast<std::uintptr_t>(dst) - reinterpret_cast<std::uintptr_t>(src)) & 4095;
    if (distance != 0 && distance < 256) {
      copy_avx2<true>(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes);
      return;
    }
    if (bytes <= kForwardMaximum) {
      copy_avx2<false>(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes);
      return;
    }
  }
  std::memcpy(dst, src, bytes);
}

std::string copy_rule() {
  return g_have_avx2 ? "memcpy; 2 KiB..1 MiB with dst 1-255 B ahead of src modulo 4 KiB: AVX2 loop backward (glibc's rep movsb crawls "
                       "there); other 2-16 KiB: AVX2 loop forward (rep movsb starts slowly)"
                     : "memcpy (no AVX2)";
}

}  // namespace armci
