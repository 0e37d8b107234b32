// History that travels: what one real fadd learnt, exported by the real client
// to a file, imported by a fresh fadd and used by its first build.
#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

TEST_CASE("a fresh fadd imports what another learnt and estimates its first build from it", "[integration][history]") {
  // Small units, as the fake compiler holds them (under 1 MiB): what fadd
  // measured is what travels, however small.
  const std::vector<FakeUnit> units{{"fwd_hdim64", "peak_mb=0 duration_s=1"}, {"bwd_hdim64", "peak_mb=0 duration_s=1"}};
  TempDir files;
  const std::string file = (files.path() / "history.json").string();

  Daemon seen;
  seen.write_kernels(units);
  seen.start();
  REQUIRE(seen.wait_final(seen.submit({"--arch", "9.0"})).at("state") == "succeeded");
  const auto exported = seen.fad({"history", "export", file});
  REQUIRE(exported.exit_code == 0);
  INFO(exported.out << exported.err);
  CHECK(exported.out.find("exported 3 unit profile(s) to " + file + "\n") == 0);  // two compiles and the link
  const json doc = json::parse(std::ifstream(file));
  CHECK(doc.at("format") == "fad-history");
  REQUIRE(doc.at("profiles").size() == 3);
  for (const auto& p : doc.at("profiles")) CHECK(p.at("origin") == "local");

  Daemon fresh;
  fresh.write_kernels(units);
  fresh.start();
  const auto imported = fresh.fad({"history", "import", file});
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK(imported.out == "imported 3 unit profile(s) from " + file + "\n");
  // The same history again, piped from one fadd to the other as between two
  // machines, adds nothing: each profile is known once.
  const auto piped = run({"sh", "-c",
                          std::string(FAD_FAD_BIN) + " history export - --socket " + seen.socket() + " | " +
                              FAD_FAD_BIN + " history import - --socket " + fresh.socket()});
  INFO(piped.out << piped.err);
  CHECK(piped.exit_code == 0);
  CHECK(piped.out == "imported 0 unit profile(s) from standard input (3 already known)\n");

  const auto id = fresh.submit({"--arch", "9.0"});
  REQUIRE(fresh.wait_final(id).at("state") == "succeeded");
  // Held: a range-for over a member of the temporary would outlive it.
  const json status = fresh.status(id);
  for (const auto& u : status.at("unit_list")) {
    INFO(u.dump());
    CHECK(u.at("estimate_source").get<std::string>().rfind("imported_", 0) == 0);
  }
}
