// Single-copy reads from a same-host process's private memory (Linux
// cross-memory attach): a large message is copied once, by its receiver,
// from the sender's own buffer, instead of twice through a shared slot.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace armci::platform {

// Lets processes of the same user read this one's memory also where Yama
// restricts ptrace to descendants (ptrace_scope 1, the Ubuntu default).
// Harmless where Yama is absent.
void allow_cross_memory_readers();

// Copies `bytes` at `remote` in process `pid` to `local`. False when the
// kernel refuses (no permission, the call filtered out by seccomp, the
// process gone, the range not mapped there).
bool read_process_memory(pid_t pid, const void* remote, void* local, std::size_t bytes);
// Copies `bytes` at `local` to `remote` in process `pid`; false as above.
// The kernel asks the same permission as for a read.
bool write_process_memory(pid_t pid, void* remote, const void* local, std::size_t bytes);

}  // namespace armci::platform
