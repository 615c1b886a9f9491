#include "src/core/error.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "src/core/peer_failure.hpp"

namespace armci {
namespace {
std::atomic<int> g_rank{-1};
std::atomic<void (*)()> g_cleanup{nullptr};
}  // namespace

void set_error_rank(int rank) { g_rank.store(rank); }
int error_rank() { return g_rank.load(); }
void set_cleanup_hook(void (*hook)()) { g_cleanup.store(hook); }

void terminate_job(int code) {
  if (auto hook = g_cleanup.exchange(nullptr)) hook();
  std::fflush(stdout);
  std::fflush(stderr);
  // _exit: atexit handlers of a half-initialised runtime (MPI, UCX) may hang;
  // the launcher sees the non-zero status and ends the other ranks.
  _exit(code == 0 ? 1 : (code & 0xff ? code & 0xff : 1));
}

void install_terminate_handler() {
  // An exception nothing caught (a failed PMIx fence under ARMCI_Free, a
  // network error thrown in the helper thread) still ends as an armci:
  // error naming the call, and the shared-memory names still go.
  std::set_terminate([] {
    const char* what = "unknown exception";
    try {
      if (auto e = std::current_exception()) std::rethrow_exception(e);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (const PeerDead& e) {
      // ARMCI_ON_PEER_FAILURE=return, in a call that cannot return the code.
      what = "a peer died, and this call cannot return ARMCI_ERR_PEER_DEAD";
    } catch (...) {
    }
    fail(current_call(), "%s", what);
  });
}

void fail(const char* call, const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  std::fprintf(stderr, "armci: rank %d: %s: %s\n", g_rank.load(), call, text);
  terminate_job(1);
}

}  // namespace armci
