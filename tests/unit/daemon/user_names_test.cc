// Remembered login names: one lookup per uid and minute, renamed users seen
// after the minute, and a table bounded however many uids are named.
#include <catch2/catch.hpp>

#include <map>

#include "daemon/credentials.h"
#include "daemon/user_names.h"

namespace fad {

TEST_CASE("user names: looked up once a minute per uid, the number for a uid without a name", "[user_names]") {
  std::map<uid_t, std::string> passwd{{1000, "ada"}};
  std::map<uid_t, int> lookups;
  UserNames names([&](uid_t uid) -> std::optional<std::string> {
    ++lookups[uid];
    auto it = passwd.find(uid);
    if (it == passwd.end()) return std::nullopt;
    return it->second;
  });
  const auto t0 = UserNames::Clock::time_point{};
  CHECK(names.name(1000, t0) == "ada");
  CHECK(names.name(1000, t0 + std::chrono::seconds(59)) == "ada");
  CHECK(names.name(4242, t0) == "4242");
  CHECK(names.name(4242, t0 + std::chrono::seconds(1)) == "4242");
  CHECK(lookups[1000] == 1);
  CHECK(lookups[4242] == 1);
  // Renamed: the new name shows once the old answer is a minute old.
  passwd[1000] = "lovelace";
  CHECK(names.name(1000, t0 + std::chrono::seconds(59)) == "ada");
  CHECK(names.name(1000, t0 + std::chrono::seconds(60)) == "lovelace");
  CHECK(lookups[1000] == 2);
}

TEST_CASE("user names: the table stays bounded however many uids are named", "[user_names]") {
  int lookups = 0;
  UserNames names([&](uid_t) -> std::optional<std::string> {
    ++lookups;
    return std::nullopt;
  });
  const auto t0 = UserNames::Clock::time_point{};
  for (uid_t uid = 0; uid < 3 * UserNames::kMaxRemembered; ++uid) {
    CHECK(names.name(uid, t0) == std::to_string(uid));
    REQUIRE(names.remembered() <= UserNames::kMaxRemembered);
  }
  CHECK(lookups == static_cast<int>(3 * UserNames::kMaxRemembered));
  // Expired answers make room first; the freshly named uid stays.
  const auto later = t0 + std::chrono::minutes(2);
  CHECK(names.name(1, later) == "1");
  CHECK(names.remembered() == 1);
}

TEST_CASE("user names: the real lookup names root", "[user_names]") { CHECK(user_name(0) == "root"); }

}  // namespace fad
