// Exit-code mapping, kept apart so it is tested on its own.
#include "client/exit_codes.h"

namespace fad::client {

int exit_code_for_error(const Response& response) { return exit_code_for(response.code); }

int exit_code_for_build_state(std::string_view state) { return state == "succeeded" ? kExitOk : kExitFailed; }

bool is_final_build_state(std::string_view state) {
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

}  // namespace fad::client
