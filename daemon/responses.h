// Building the engine's answers to requests.
#pragma once

#include <string>
#include <utility>

#include "common/protocol.h"

namespace fad {

inline Response ok_response(json result) {
  Response r;
  r.result = std::move(result);
  return r;
}

inline Response error_response(ErrorCode code, std::string message) {
  Response r;
  r.ok = false;
  r.code = code;
  r.message = std::move(message);
  return r;
}

}  // namespace fad
