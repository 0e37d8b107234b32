// The Unix socket server: accepts clients and owns their sessions. Each session
// learns its peer's uid, gid and pid from the kernel (SO_PEERCRED), reads
// newline-framed requests (at most kMaxMessageBytes each), hands them to the
// RequestHandler and writes the response. A client that sends garbage, too
// much or too little gets an error response and is disconnected; one that
// sends nothing is closed after an idle timeout; past the connection caps a
// client gets a one-line "too many connections" error. The daemon goes on.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "daemon/request_budget.h"
#include "daemon/request_handler.h"

namespace fad {

class Session;

/// Who may reach the socket, and the limits on connections.
struct ServerOptions {
  /// Socket file mode (e.g. 0660 to let a group in); the directory fadd makes
  /// for it is opened up to match (0700, 0750, 0755).
  mode_t socket_mode = 0600;
  std::optional<gid_t> socket_group;  ///< group of the socket (and of a directory fadd makes)
  /// A connection that sends no complete line for this long is closed.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(10);
  std::size_t max_sessions = 1024;          ///< all users together (also kept below the fd limit)
  std::size_t max_sessions_per_user = 256;  ///< one uid, so no user can lock the others out
  /// How much of fadd's time one user's requests may take (root and fadd's
  /// own user are not limited).
  RequestLimits requests;
};

/// Whether something listens on the Unix socket at `path` (another fadd):
/// a connect succeeds, or finds its backlog full. Never blocks.
bool socket_answers(const std::string& path);

/// What Server::listen would refuse at `path` without making anything: a
/// directory above it another user controls, a socket directory that is not
/// fadd's, a file or directory where the socket goes. Asked before fadd makes
/// its state dir, so a start refused for its socket leaves nothing behind;
/// listen() asks again (things change in between).
Status socket_path_usable(const std::string& socket_path);

class Server {
 public:
  Server(boost::asio::io_context& io, RequestHandler& handler, ServerOptions options = {});
  ~Server();

  /// Prepares the socket's directory (creates it, or checks that an existing
  /// one belongs to fadd's user or root and is not writable by others) and
  /// binds the socket with the configured mode and group. Fails if another
  /// daemon answers on it; removes a stale socket file.
  Status listen(const std::string& socket_path);
  /// Stops accepting, closes every session and removes the socket file (if
  /// it is still the one fadd made).
  void close();
  /// Listens again at the socket's path when its file was deleted while fadd
  /// ran (a cleaner of old files in /tmp): clients would otherwise find no
  /// fadd while it runs on for weeks. Something else put in its place is
  /// left alone and said once. fadd calls it every 10 s.
  void keep_socket();

  /// Which share a request draws on: a compile launcher's requests have one
  /// of their own (see runs_at_once in request_budget.h).
  enum class Share { requests, launcher };
  /// Takes `cost` of loop time out of `uid`'s share (root and fadd's own user
  /// are not limited): work done for a request after it was answered later.
  void charge(uid_t uid, std::chrono::steady_clock::duration cost, Share share = Share::requests);

  /// Sessions currently open (for tests and limits).
  std::size_t session_count() const { return sessions_.size(); }

 private:
  friend class Session;
  void accept();
  void admit(boost::asio::local::stream_protocol::socket socket);
  void remove(const std::shared_ptr<Session>& s);
  static bool is_admin(const Caller& c);
  void note_slowed(uid_t uid, std::chrono::milliseconds wait);
  void note_refused(uid_t uid, const std::string& why);

  boost::asio::io_context& io_;
  RequestHandler& handler_;
  ServerOptions options_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  std::string path_;
  /// The socket file fadd made at path_ (lstat), and whether its replacement
  /// by something else was said.
  dev_t socket_dev_ = 0;
  ino_t socket_ino_ = 0;
  bool said_replaced_ = false;
  bool closed_ = false;         ///< close() was called: fadd is stopping
  std::string relisten_error_;  ///< why listening again last failed, said once
  bool is_ours(const struct stat& st) const { return st.st_dev == socket_dev_ && st.st_ino == socket_ino_; }
  std::set<std::shared_ptr<Session>> sessions_;
  std::map<uid_t, std::size_t> per_user_;
  RequestBudget budget_;
  /// Launchers' requests: a user's report loop never holds their own
  /// compiles, and a flood of launcher requests is held to a share too.
  RequestBudget launcher_budget_;
  RequestBudget& budget(Share share) { return share == Share::launcher ? launcher_budget_ : budget_; }
  /// When each slowed user was last logged (at most once a minute).
  std::map<uid_t, std::chrono::steady_clock::time_point> slowed_;
  /// Refused connections per user, logged at most once a second with a count.
  struct Refusals {
    std::chrono::steady_clock::time_point last_logged;
    std::size_t unlogged = 0;
  };
  std::map<uid_t, Refusals> refused_;
};

}  // namespace fad
