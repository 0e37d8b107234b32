// Synchronous Asio over a local stream socket; the wait for the response is
// bounded with poll() because Asio's blocking reads have no timeout.
#include "client/connection.h"

#include <poll.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>

#include "client/exit_codes.h"
#include "common/socket_dir.h"

namespace fad::client {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

std::string unreachable_message(const std::string& socket_path, const std::string& reason) {
  return "cannot reach fadd at " + socket_path + ": " + reason +
         ". Start it with 'fad daemon start' (or 'systemctl --user start fadd').";
}

CallResult call_daemon(const std::string& socket_path, const Request& request, std::chrono::milliseconds timeout) {
  // Whoever could put the socket there could answer in fadd's place.
  if (Status trusted = check_socket_for_client(socket_path); !trusted)
    return CallFailure{kExitUnreachable, trusted.error()};
  asio::io_context io;
  stream::socket socket(io);
  boost::system::error_code ec;
  try {
    socket.connect(stream::endpoint(socket_path), ec);  // the endpoint throws on an over-long path
  } catch (const boost::system::system_error& e) {
    ec = e.code();
  }
  if (ec) return CallFailure{kExitUnreachable, unreachable_message(socket_path, ec.message())};

  const std::string line = encode_request(request);
  asio::write(socket, asio::buffer(line), ec);
  // fadd may have answered and closed before reading (too many connections):
  // its one line is still there to read, and says why.
  const boost::system::error_code write_ec = ec;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string buffer;
  char chunk[64 * 1024];
  while (buffer.find('\n') == std::string::npos) {
    if (buffer.size() > kMaxMessageBytes)
      return CallFailure{kExitFailed,
                         "fadd sent a response longer than " + std::to_string(kMaxMessageBytes) + " bytes"};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{socket.native_handle(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) == 0)
      return CallFailure{kExitUnreachable, "fadd at " + socket_path + " did not answer within " +
                                               std::to_string(timeout.count() / 1000) + " s"};
    std::size_t n = socket.read_some(asio::buffer(chunk), ec);
    if (ec == asio::error::interrupted) continue;
    if (ec) {
      if (!buffer.empty()) break;  // a last line without its newline
      std::string why = write_ec                 ? write_ec.message()
                        : ec == asio::error::eof ? "connection closed before an answer"
                                                 : ec.message();
      return CallFailure{kExitUnreachable, "lost connection to fadd at " + socket_path + ": " + why};
    }
    buffer.append(chunk, n);
  }
  if (auto nl = buffer.find('\n'); nl != std::string::npos) buffer.resize(nl);
  auto response = parse_response(buffer);
  if (!response) return CallFailure{kExitFailed, "fadd sent a response fad does not understand: " + response.error()};
  return std::move(*response);
}

Sender socket_sender(std::string socket_path) {
  return [path = std::move(socket_path)](const Request& request) { return call_daemon(path, request); };
}

}  // namespace fad::client
