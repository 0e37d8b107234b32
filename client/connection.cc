// Synchronous Asio over a local stream socket; the wait for the response is
// bounded with poll() because Asio's blocking reads have no timeout.
#include "client/connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>

#include "client/exit_codes.h"
#include "client/locations.h"
#include "common/account_name.h"
#include "common/mode_text.h"
#include "common/socket_dir.h"
#include "common/text.h"

namespace fad::client {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

std::string unreachable_message(const std::string& socket_path, const std::string& reason) {
  // The socket a plain 'fad daemon start' would use; another (named with
  // --socket) is named in the advice too, or it would start the wrong fadd.
  // Resolved here, not by the command that holds its Locations, because every
  // sender (launchers, fad run, the commands) phrases this failure alike; a
  // follower retrying for a minute reads the config at most twice per try,
  // which is small beside its backoff.
  const auto env = process_env();
  auto plain = resolve_locations(Command{}, env, ::getuid());
  // The user service sees neither $FAD_SOCKET nor $FAD_CONFIG: it starts a
  // fadd at the socket those would leave (resolved only when it may matter).
  const EnvLookup service_env = [env](std::string_view name) -> std::optional<std::string> {
    if (name == "FAD_SOCKET" || name == "FAD_CONFIG") return std::nullopt;
    return env(name);
  };
  std::string start = "'fad daemon start'";
  if (!(plain && plain->socket == socket_path)) {
    start = "'fad daemon start --socket " + socket_path + "'";
  } else if (auto service = resolve_locations(Command{}, service_env, ::getuid());
             service && service->socket == socket_path) {
    start = "'fad daemon start' (or 'systemctl --user start fadd')";
  }
  return unreachable_cause(socket_path, reason) + ". Start it with " + start + ".";
}

std::string unreachable_cause(const std::string& socket_path, const std::string& reason) {
  return "cannot reach fadd at " + socket_path + ": " + reason;
}

std::string permission_message(const std::string& socket_path) {
  std::string message = "permission denied on " + socket_path;
  struct stat st {};
  std::string what = socket_path;
  if (::stat(socket_path.c_str(), &st) != 0) {
    // The socket's directory may be what keeps this user out.
    what = std::filesystem::path(socket_path).parent_path().string();
    if (::stat(what.c_str(), &st) != 0) return message + "; ask the admin who runs fadd for access";
  }
  message += " (" + what + " is owned by " + account_name(st.st_uid) + ":" + group_name(st.st_gid) + ", mode " +
             mode_text(st.st_mode) + ")";
  if ((st.st_mode & S_IRWXG) != 0)
    return message + "; ask the admin to add you to group " + group_name(st.st_gid) +
           " (then log in again), or run your own fadd with 'fad daemon start --socket PATH'";
  return message + ": this fadd serves " + account_name(st.st_uid) +
         " only; ask the admin to share it (the socket_group config key) or run your own with 'fad daemon start "
         "--socket PATH'";
}

Result<std::chrono::milliseconds> request_timeout(const std::optional<std::string>& fad_timeout) {
  if (!fad_timeout) return std::chrono::milliseconds(std::chrono::seconds(60));
  long long seconds = 0;
  const std::string& t = *fad_timeout;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), seconds);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || seconds <= 0 || seconds > 86400)
    return make_error("FAD_TIMEOUT must be a whole number of seconds from 1 to 86400, got '" + t + "'");
  return std::chrono::milliseconds(std::chrono::seconds(seconds));
}

CallResult call_daemon(const std::string& socket_path, const Request& request, std::chrono::milliseconds timeout,
                       std::optional<Peer>* answered_by, const std::function<bool()>& stop) {
  // Whoever could put the socket there could answer in fadd's place.
  if (Status trusted = check_socket_for_client(socket_path); !trusted)
    return CallFailure{kExitUnreachable, trusted.error(), false};  // waiting does not change who made it
  asio::io_context io;
  stream::socket socket(io);
  boost::system::error_code ec;
  try {
    socket.connect(stream::endpoint(socket_path), ec);  // the endpoint throws on an over-long path
  } catch (const boost::system::system_error& e) {
    ec = e.code();
  }
  if (ec == boost::system::errc::permission_denied || ec == boost::system::errc::operation_not_permitted)
    return CallFailure{kExitUnreachable, permission_message(socket_path), false};
  if (ec) {
    CallFailure failure{kExitUnreachable, unreachable_message(socket_path, ec.message())};
    failure.cause = unreachable_cause(socket_path, ec.message());
    failure.gone = true;
    return failure;
  }
  if (answered_by) {
    ucred cred{};
    socklen_t len = sizeof cred;
    answered_by->reset();
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
      *answered_by = Peer{cred.uid, cred.pid};
  }

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
      return CallFailure{kExitFailed, "fadd sent a response longer than " + std::to_string(kMaxMessageBytes) + " bytes",
                         false};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    // Also before each wait: a signal just before poll() interrupts nothing.
    if (stop && stop()) return CallFailure{kExitUnreachable, "interrupted while waiting for fadd's answer", false};
    pollfd pfd{socket.native_handle(), POLLIN, 0};
    const int ready = left.count() <= 0 ? 0 : ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) {
      // A signal: the caller's to act on (a follower's Ctrl-C), else wait on.
      // Never a read without poll: a stopped fadd would hold it past the timeout.
      continue;
    }
    if (ready < 0) {
      CallFailure lost{kExitUnreachable, "lost connection to fadd at " + socket_path + ": " + std::strerror(errno)};
      lost.gone = true;
      return lost;
    }
    if (ready == 0)
      return CallFailure{kExitUnreachable, "fadd at " + socket_path + " did not answer within " +
                                               std::to_string(timeout.count() / 1000) +
                                               " s (is it stopped, e.g. by SIGSTOP, or overloaded?)"};
    std::size_t n = socket.read_some(asio::buffer(chunk), ec);
    if (ec == asio::error::interrupted) continue;
    if (ec) {
      if (!buffer.empty()) break;  // a last line without its newline
      std::string why = write_ec                 ? write_ec.message()
                        : ec == asio::error::eof ? "connection closed before an answer"
                                                 : ec.message();
      CallFailure lost{kExitUnreachable, "lost connection to fadd at " + socket_path + ": " + why};
      lost.gone = true;
      return lost;
    }
    buffer.append(chunk, n);
  }
  if (auto nl = buffer.find('\n'); nl != std::string::npos) buffer.resize(nl);
  auto response = parse_response(buffer);
  if (!response)
    return CallFailure{kExitFailed, "fadd sent a response fad does not understand: " + response.error(), false};
  // One line, as every message: fadd quotes what clients sent it (a path, a
  // name), and whatever it quotes must not break the line or act on a terminal.
  response->message = printable(response->message);
  // Too many connections open: for now fadd cannot be reached, as when it
  // restarts, so a follower rides it out and a script sees 3, worth a retry.
  if (!response->ok && response->code == ErrorCode::busy)
    return CallFailure{kExitUnreachable, std::move(response->message), true, true};
  return std::move(*response);
}

Sender socket_sender(std::string socket_path, std::chrono::milliseconds timeout, std::function<bool()> stop) {
  return [path = std::move(socket_path), timeout, stop = std::move(stop)](const Request& request) {
    return call_daemon(path, request, timeout, nullptr, stop);
  };
}

}  // namespace fad::client
