// The settings table: every ARMCI_* variable, the layers' included, parsed
// in one place, shown with its value and where it came from, and a bad
// value named in the error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

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

// Each spelling of a choice reaches its field and is what the row shows;
// the first is the default, with the variable unset.
template <typename T>
void expect_choices(const char* variable, T Settings::*field,
                    std::initializer_list<std::pair<const char*, T>> spellings) {
  bool is_default = true;
  for (const auto& [text, value] : spellings) {
    std::optional<ScopedVariable> set;
    if (!is_default) set.emplace(variable, text);
    is_default = false;
    const Settings s = Settings::from_environment();
    EXPECT_EQ(s.*field, value) << variable << "=" << text;
    ASSERT_NE(row(s.rows(), variable), nullptr) << variable;
    EXPECT_EQ(row(s.rows(), variable)->value, text) << variable;
  }
}

TEST(Settings, PeerFailurePolicyReturn) {
  expect_choices("ARMCI_ON_PEER_FAILURE", &Settings::return_on_peer_failure, {{"abort", false}, {"return", true}});
}

TEST(Settings, WindowReorderingChoices) {
  expect_choices("ARMCI_WIN_REORDER", &Settings::win_reorder,
                 {{"none", WinReorder::none}, {"gets-first", WinReorder::gets_first}, {"combine", WinReorder::combine}});
}

TEST(Settings, WindowFenceDesigns) {
  expect_choices("ARMCI_WIN_FENCE", &Settings::win_fence,
                 {{"immediate", WinFence::immediate}, {"deferred", WinFence::deferred}, {"counted", WinFence::counted}});
}

TEST(Settings, WindowLockMigrationPolicies) {
  expect_choices("ARMCI_WIN_LOCK_MIGRATE", &Settings::win_lock_migrate,
                 {{"pinned", WinLockMigrate::pinned}, {"always", WinLockMigrate::always}, {"after:12", WinLockMigrate::after}});
  ScopedVariable after("ARMCI_WIN_LOCK_MIGRATE", "after:12");
  EXPECT_EQ(Settings::from_environment().win_lock_migrate_after, 12u);
}

TEST(Settings, ShmFallbackIsMemfdByDefaultAndCanBeAnError) {
  expect_choices("ARMCI_SHM_FALLBACK", &Settings::shm_fallback,
                 {{"memfd", ShmFallback::memfd}, {"network", ShmFallback::network}, {"error", ShmFallback::error}});
}

// A value the setting does not take ends ARMCI_Init with the variable, the
// value and what the setting takes.
struct BadValue {
  const char* variable;
  const char* value;
  const char* message;  // a regular expression
};

void PrintTo(const BadValue& bad, std::ostream* os) { *os << bad.variable << "='" << bad.value << "'"; }

class SettingsDeathTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(SettingsDeathTest, IsRefusedNamingTheVariableAndWhatItTakes) {
  ScopedVariable bad(GetParam().variable, GetParam().value);
  EXPECT_EXIT(Settings::from_environment(), ::testing::ExitedWithCode(1), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, SettingsDeathTest,
    ::testing::Values(
        BadValue{"ARMCI_VERBS_RECV_SIZE", "lots",
                 "ARMCI_Init: setting ARMCI_VERBS_RECV_SIZE='lots' is not an integer in \\[256, 1073741824\\]"},
        BadValue{"ARMCI_UCX_ERR_MODE", "bogus", "setting ARMCI_UCX_ERR_MODE='bogus' is not one of none, peer"},
        BadValue{"ARMCI_ON_PEER_FAILURE", "ignore",
                 "setting ARMCI_ON_PEER_FAILURE='ignore' is not one of abort, return"},
        BadValue{"ARMCI_WIN_REORDER", "gets_first",
                 "setting ARMCI_WIN_REORDER='gets_first' is not one of none, gets-first, combine"},
        BadValue{"ARMCI_WIN_FENCE", "two-sided",
                 "setting ARMCI_WIN_FENCE=.two-sided. is not one of immediate, deferred, counted"},
        BadValue{"ARMCI_WIN_LOCK_MIGRATE", "sometimes",
                 "setting ARMCI_WIN_LOCK_MIGRATE='sometimes' is not one of pinned, always, after:N"},
        BadValue{"ARMCI_WIN_LOCK_MIGRATE", "after:0", "ARMCI_WIN_LOCK_MIGRATE='0'"},
        BadValue{"ARMCI_SHM_FALLBACK", "tcp",
                 "setting ARMCI_SHM_FALLBACK='tcp' is not one of memfd, network, error, always"}),
    [](const ::testing::TestParamInfo<BadValue>& info) {
      return std::string(info.param.variable + 6) + "_" + std::to_string(info.index);
    });

}  // namespace
}  // namespace armci
