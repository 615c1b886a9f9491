// The one copy routine of every same-node transfer and every bounce buffer.
#pragma once

#include <cstddef>
#include <string>

namespace armci {

// memcpy for non-overlapping ranges that stays fast when the destination's
// page offset sits a little past the source's: glibc's `rep movsb` path loses
// about 20x there (4 KiB aliasing between its loads and earlier stores).
// Protected where it is defined: the library's own calls go straight to
// it, not through the PLT and the GOT (two more cache misses on a put that
// follows a large copy); programs still link to it.
void copy_bytes(void* dst, const void* src, std::size_t bytes) noexcept;

// copy_bytes's choice, for the protocol table (armci_info -p, ARMCI_VERBOSE).
std::string copy_rule();

}  // namespace armci
