// The settings table: every ARMCI_* variable, the layers' included, parsed
// in one place, shown with its value and where it came from, and a bad
// value named in the error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "src/core/settings.hpp"

namespace armci {
namespace {

// Sets one variable for the lifetime of the object.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (old_.empty()) ::unsetenv(name_);
    else ::setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

const Settings::Row* row(const std::vector<Settings::Row>& rows, const std::string& name) {
  for (const Settings::Row& r : rows)
    if (name == r.name) return &r;
  return nullptr;
}

TEST(Settings, LayersSettingsReachTheirOptions) {
  ScopedVariable device("ARMCI_VERBS_DEVICE", "rxe0");
  ScopedVariable sge("ARMCI_VERBS_MAX_SGE", "0x4");
  ScopedVariable errors("ARMCI_UCX_ERR_MODE", "peer");
  const Settings s = Settings::from_environment();
  EXPECT_EQ(s.network_options.verbs.device, "rxe0");
  EXPECT_EQ(s.network_options.verbs.max_sge, 4u);
  EXPECT_TRUE(s.network_options.ucx.detect_failures);
  EXPECT_EQ(s.network_options.verbs.recv_size, platform::VerbsOptions{}.recv_size);
}

TEST(Settings, HeartbeatBetweenHostsIsOnByDefaultAndCanBeTurnedOff) {
  EXPECT_EQ(Settings::from_environment().heartbeat_ms, 500);
  EXPECT_EQ(Settings::from_environment().heartbeat_timeout_ms, 5000);
  ScopedVariable off("ARMCI_HEARTBEAT_MS", "0");
  ScopedVariable timeout("ARMCI_HEARTBEAT_TIMEOUT_MS", "20000");
  const Settings s = Settings::from_environment();
  EXPECT_EQ(s.heartbeat_ms, 0);
  EXPECT_EQ(s.heartbeat_timeout_ms, 20000);
}

TEST(Settings, RowsShowValueAndSource) {
  ScopedVariable offload("ARMCI_OFFLOAD_MIN", "off");
  ScopedVariable helper("ARMCI_PROGRESS_THREAD", "0");
  const std::vector<Settings::Row> rows = Settings::from_environment().rows();
  ASSERT_NE(row(rows, "ARMCI_OFFLOAD_MIN"), nullptr);
  EXPECT_EQ(row(rows, "ARMCI_OFFLOAD_MIN")->value, "off");
  EXPECT_STREQ(row(rows, "ARMCI_OFFLOAD_MIN")->source, "environment");
  EXPECT_EQ(row(rows, "ARMCI_HELPER")->value, "none");  // the old spelling still works
  EXPECT_STREQ(row(rows, "ARMCI_HELPER")->source, "default");
  EXPECT_EQ(row(rows, "ARMCI_ACC_CHUNK")->value, "65536");
  EXPECT_EQ(row(rows, "ARMCI_VERBS_GID_INDEX")->value, "auto");
  EXPECT_NE(row(rows, "ARMCI_VERBS_REG_CACHE"), nullptr);
  const std::string text = Settings::from_environment().describe("> ");
  EXPECT_NE(text.find("> ARMCI_OFFLOAD_MIN=off (environment)\n"), std::string::npos) << text;
}

// docs/settings.md is generated from these lines (armci_info --markdown
// settings): a setting without one would be a silent hole in the page.
TEST(Settings, EveryRowHasAOneLineDescription) {
  for (const Settings::Row& r : Settings().rows()) {
    ASSERT_NE(r.description, nullptr) << r.name;
    const std::string text = r.description;
    EXPECT_GT(text.size(), 10u) << r.name;
    EXPECT_EQ(text.find('\n'), std::string::npos) << r.name;
    EXPECT_EQ(text.find('|'), std::string::npos) << r.name << ": breaks the Markdown table";
  }
}

TEST(SettingsDeathTest, BadValueNamesTheVariableAndTheRange) {
  ScopedVariable bad("ARMCI_VERBS_RECV_SIZE", "lots");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
              "ARMCI_Init: setting ARMCI_VERBS_RECV_SIZE='lots' is not an integer in \\[256, 1073741824\\]");
}

TEST(SettingsDeathTest, BadChoiceListsTheChoices) {
  ScopedVariable bad("ARMCI_UCX_ERR_MODE", "bogus");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
              "setting ARMCI_UCX_ERR_MODE='bogus' is not one of none, peer");
}

TEST(SettingsDeathTest, UnknownPeerFailurePolicyIsRefused) {
  ScopedVariable bad("ARMCI_ON_PEER_FAILURE", "ignore");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
              "setting ARMCI_ON_PEER_FAILURE='ignore' is not one of abort, return");
}

TEST(Settings, PeerFailurePolicyReturn) {
  EXPECT_FALSE(Settings::from_environment().return_on_peer_failure);
  ScopedVariable policy("ARMCI_ON_PEER_FAILURE", "return");
  EXPECT_TRUE(Settings::from_environment().return_on_peer_failure);
}

TEST(Settings, WindowReorderingChoices) {
  EXPECT_EQ(Settings::from_environment().win_reorder, WinReorder::none);
  {
    ScopedVariable mode("ARMCI_WIN_REORDER", "gets-first");
    EXPECT_EQ(Settings::from_environment().win_reorder, WinReorder::gets_first);
  }
  ScopedVariable mode("ARMCI_WIN_REORDER", "combine");
  const Settings s = Settings::from_environment();
  EXPECT_EQ(s.win_reorder, WinReorder::combine);
  EXPECT_EQ(row(s.rows(), "ARMCI_WIN_REORDER")->value, "combine");
}

TEST(SettingsDeathTest, UnknownWindowReorderingIsRefused) {
  ScopedVariable bad("ARMCI_WIN_REORDER", "gets_first");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
              "setting ARMCI_WIN_REORDER='gets_first' is not one of none, gets-first, combine");
}

TEST(Settings, WindowFenceDesigns) {
  EXPECT_EQ(Settings::from_environment().win_fence, WinFence::immediate);
  ScopedVariable mode("ARMCI_WIN_FENCE", "deferred");
  const Settings s = Settings::from_environment();
  EXPECT_EQ(s.win_fence, WinFence::deferred);
  EXPECT_EQ(row(s.rows(), "ARMCI_WIN_FENCE")->value, "deferred");
  ScopedVariable counted("ARMCI_WIN_FENCE", "counted");
  EXPECT_EQ(Settings::from_environment().win_fence, WinFence::counted);
}

TEST(SettingsDeathTest, UnknownWindowFenceIsRefused) {
  ScopedVariable bad("ARMCI_WIN_FENCE", "two-sided");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
              "setting ARMCI_WIN_FENCE='two-sided' is not one of immediate, deferred, counted");
}

TEST(Settings, WindowLockMigrationPolicies) {
  EXPECT_EQ(Settings::from_environment().win_lock_migrate, WinLockMigrate::pinned);
  EXPECT_EQ(row(Settings::from_environment().rows(), "ARMCI_WIN_LOCK_MIGRATE")->value, "pinned");
  {
    ScopedVariable always("ARMCI_WIN_LOCK_MIGRATE", "always");
    EXPECT_EQ(Settings::from_environment().win_lock_migrate, WinLockMigrate::always);
  }
  ScopedVariable after("ARMCI_WIN_LOCK_MIGRATE", "after:12");
  const Settings s = Settings::from_environment();
  EXPECT_EQ(s.win_lock_migrate, WinLockMigrate::after);
  EXPECT_EQ(s.win_lock_migrate_after, 12u);
  EXPECT_EQ(row(s.rows(), "ARMCI_WIN_LOCK_MIGRATE")->value, "after:12");
}

TEST(SettingsDeathTest, BadWindowLockMigrationIsRefused) {
  {
    ScopedVariable bad("ARMCI_WIN_LOCK_MIGRATE", "sometimes");
    EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
                "setting ARMCI_WIN_LOCK_MIGRATE='sometimes' is not one of pinned, always, after:N");
  }
  ScopedVariable zero("ARMCI_WIN_LOCK_MIGRATE", "after:0");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1), "ARMCI_WIN_LOCK_MIGRATE='0'");
}

TEST(Settings, ShmFallbackIsMemfdByDefaultAndCanBeAnError) {
  EXPECT_EQ(Settings::from_environment().shm_fallback, ShmFallback::memfd);
  EXPECT_EQ(row(Settings::from_environment().rows(), "ARMCI_SHM_FALLBACK")->value, "memfd");
  {
    ScopedVariable network("ARMCI_SHM_FALLBACK", "network");
    EXPECT_EQ(Settings::from_environment().shm_fallback, ShmFallback::network);
  }
  ScopedVariable error("ARMCI_SHM_FALLBACK", "error");
  EXPECT_EQ(Settings::from_environment().shm_fallback, ShmFallback::error);
  EXPECT_EQ(row(Settings::from_environment().rows(), "ARMCI_SHM_FALLBACK")->value, "error");
}

TEST(SettingsDeathTest, UnknownShmFallbackIsRefused) {
  ScopedVariable bad("ARMCI_SHM_FALLBACK", "tcp");
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1),
              "setting ARMCI_SHM_FALLBACK='tcp' is not one of memfd, network, error, always");
}

}  // namespace
}  // namespace armci
