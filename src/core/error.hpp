// Error reporting: every message names the call, the argument and the rank,
// then the job ends (ARMCI has no recoverable errors).
#pragma once

#include <cstdarg>

namespace armci {

// The rank printed in messages; -1 until start-up knows it.
void set_error_rank(int rank);
int error_rank();

// "armci: rank R: CALL: <formatted text>" on stderr, then the job ends.
[[noreturn]] void fail(const char* call, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Hook run before the process exits on an error (releases shared segments).
void set_cleanup_hook(void (*hook)());

[[noreturn]] void terminate_job(int code);

// Uncaught exceptions end the job through fail(), naming the current call.
void install_terminate_handler();

}  // namespace armci
