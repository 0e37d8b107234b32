// The `executor` and `slurm` config keys; see slurm_config.h.
#include "common/slurm_config.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "common/config.h"
#include "common/json_fields.h"
#include "common/size.h"
#include "common/suggest.h"

namespace fad {

std::string parse_executor(const nlohmann::json& v, ExecutorKind& out) {
  if (v == "local") {
    out = ExecutorKind::local;
  } else if (v == "slurm") {
    out = ExecutorKind::slurm;
  } else {
    return "expected \"local\" or \"slurm\", got " + v.dump();
  }
  return "";
}

std::string parse_slurm_config(const nlohmann::json& v, SlurmConfig& out) {
  if (!v.is_object()) return "expected an object of Slurm settings, got " + v.dump();
  std::string problems;
  auto problem = [&problems](const std::string& key, const std::string& what) {
    problems += (problems.empty() ? "" : "; ") + std::string("'") + key + "': " + what;
  };
  auto text = [&](const std::string& key, const nlohmann::json& value, std::string& target, bool allow_empty) {
    if (!value.is_string() || (!allow_empty && value.get<std::string>().empty()))
      return problem(key, "expected a " + std::string(allow_empty ? "" : "non-empty ") + "string, got " + value.dump());
    target = value.get<std::string>();
  };
  for (const auto& [key, value] : v.items()) {
    if (key == "mode") {
      if (value == "allocation")
        out.job_per_unit = false;
      else if (value == "job-per-unit")
        out.job_per_unit = true;
      else
        problem(key, "expected \"allocation\" or \"job-per-unit\", got " + value.dump());
    } else if (key == "nodes") {
      auto n = integer_in(value, 1, 10000);
      if (!n) {
        problem(key, "expected an integer from 1 to 10000, got " + value.dump());
        continue;
      }
      out.nodes = static_cast<int>(*n);
    } else if (key == "time_limit") {
      // Slurm's forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
      static const std::regex kTime(R"(^(\d+-)?\d+(:\d+){0,2}$|^UNLIMITED$|^INFINITE$)");
      if (!value.is_string() || !std::regex_match(value.get<std::string>(), kTime)) {
        problem(key, "expected a Slurm time limit such as \"8:00:00\" or \"1-00:00:00\", got " + value.dump());
        continue;
      }
      out.time_limit = value.get<std::string>();
    } else if (key == "partition") {
      text(key, value, out.partition, true);
    } else if (key == "account") {
      text(key, value, out.account, true);
    } else if (key == "step_wrapper") {
      text(key, value, out.step_wrapper, true);
    } else if (key == "extra_args") {
      if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const auto& a) { return a.is_string(); })) {
        problem(key, "expected an array of strings (arguments for salloc and srun), got " + value.dump());
        continue;
      }
      out.extra_args = value.get<std::vector<std::string>>();
    } else if (key == "memory_margin") {
      auto margin = value.is_string() ? parse_reserve(value.get<std::string>()) : Result<Reserve>(make_error(""));
      if (!margin) {
        problem(key,
                "expected a percentage more than 0% and less than 100% such as \"15%\", or a size such as \"512M\", "
                "got " +
                    value.dump());
        continue;
      }
      out.memory_margin_percent = margin->bytes ? 0 : margin->percent;
      out.min_margin = margin->bytes ? margin->bytes : out.min_margin;
    } else {
      problem(key, unknown_key(key,
                               "mode, nodes, time_limit, partition, account, extra_args, memory_margin, "
                               "step_wrapper"));
    }
  }
  return problems;
}

std::uint64_t step_memory(const SlurmConfig& config, std::uint64_t estimate) {
  const auto pct =
      static_cast<std::uint64_t>(std::ceil(static_cast<double>(estimate) * config.memory_margin_percent / 100.0));
  return estimate + std::max(pct, config.min_margin);
}

}  // namespace fad
