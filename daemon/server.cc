// Socket server and client sessions; see server.h.
#include "daemon/server.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "common/socket_dir.h"
#include "daemon/root_only_path.h"
#include "daemon/settings_check.h"

namespace fad {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

namespace {
// Descriptors fadd keeps for itself (database, units' pidfds and cgroups)
// beyond its sessions.
constexpr std::size_t kReservedFds = 256;
// Like PostgreSQL's superuser_reserved_connections: the last few connections
// are root's (and fadd's own user's), so that when other users hold all the
// rest the administrator can still see who they are and stop them.
constexpr std::size_t kAdminSessions = 8;
// Likewise, of the rest, the last kLightSessions are for users holding fewer
// than kLightUser connections: a few users each at their own cap (256) would
// otherwise fill fadd, and every other user's compile launchers would wait on
// a busy fadd (up to 10 minutes) though they ask for one connection at a time.
constexpr std::size_t kLightSessions = 64;
constexpr std::size_t kLightUser = 8;
// A session keeps a read buffer this large between requests; one grown past
// it by a large request is given back.
constexpr std::size_t kKeptBufferBytes = 64 * 1024;
// One log line per slowed user at most this often.
constexpr auto kSlowedLogEvery = std::chrono::seconds(60);
/// Refused connections of one user are logged at most this often.
constexpr auto kRefusedLogEvery = std::chrono::seconds(1);
constexpr std::size_t kRefusedUsersKept = 64;

void set_cloexec(int fd) {
  if (const int flags = ::fcntl(fd, F_GETFD); flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/// The peer's supplementary groups as the kernel recorded them at connect().
std::optional<std::vector<gid_t>> peer_groups(int fd) {
#ifdef SO_PEERGROUPS
  std::vector<gid_t> groups(32);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      return groups;
    }
    if (errno != ERANGE) break;
    groups.resize(len / sizeof(gid_t));  // the kernel said how many
  }
#else
  (void)fd;
#endif
  return std::nullopt;
}

/// The peer's credentials as the kernel recorded them at connect().
Caller peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    // Unknown: treated as the least privileged user (nobody), never as root.
    return Caller{static_cast<uid_t>(65534), static_cast<gid_t>(65534), 0, std::vector<gid_t>{65534}};
  }
  return Caller{cred.uid, cred.gid, cred.pid, peer_groups(fd)};
}

/// Writes one line to a socket that is about to be closed, without waiting.
void say_and_close(local::socket& socket, const std::string& line) {
  [[maybe_unused]] auto n = ::send(socket.native_handle(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  boost::system::error_code ec;
  socket.close(ec);
}
}  // namespace

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server& server, local::socket socket, Caller caller)
      : server_(server),
        socket_(std::move(socket)),
        caller_(caller),
        buffer_(std::make_unique<asio::streambuf>(kMaxMessageBytes + 1)),
        idle_(server.io_),
        wait_(server.io_) {}

  const Caller& caller() const { return caller_; }
  // A user in debt has a new connection's first request read only as far as
  // a launcher's may go (kLauncherLineBytes), not a megabyte: a launcher's
  // runs at once (each of its requests comes on a connection of its own),
  // any other waits its turn, and one longer than that is read on only then.
  void start() {
    if (in_debt()) {
      buffer_ = std::make_unique<asio::streambuf>(kLauncherLineBytes + 1);
      small_ = true;
    }
    read();
  }
  void close() {
    closed_ = true;
    boost::system::error_code ec;
    idle_.cancel();
    wait_.cancel();
    socket_.close(ec);
  }

 private:
  void read() {
    if (closed_) return;
    // Idle from now until a complete line: a client that connects and says
    // nothing (or trickles a line forever) gives its slot back.
    idle_.expires_after(server_.options_.idle_timeout);
    idle_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_) return;
      self->reply_and_close(
          encode_error(ErrorCode::usage, "no complete request within " +
                                             std::to_string(self->server_.options_.idle_timeout.count() / 1000) +
                                             " s; the connection is closed"));
    });
    asio::async_read_until(socket_, *buffer_, '\n',
                           [self = shared_from_this()](auto ec, std::size_t n) { self->on_read(ec, n); });
  }

  // A client that never reads its answer would hold it (up to a megabyte)
  // and its connection for ever: it gets as long as an idle one.
  void close_unless_read() {
    idle_.expires_after(server_.options_.idle_timeout);
    idle_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_) return;
      self->server_.remove(self);
    });
  }

  void on_read(boost::system::error_code ec, std::size_t n) {
    if (ec == asio::error::operation_aborted || closed_) return;  // shutting down, or timed out
    idle_.cancel();
    if (ec == asio::error::not_found && small_) {
      // Longer than a launcher's: no request that runs at once. Read on in its turn.
      grow_buffer();
      after_turn(Share::requests, [this] { read(); });
      return;
    }
    if (ec == asio::error::not_found) {
      // The buffer filled without a newline: the message is over the limit.
      reply_and_close(encode_error(ErrorCode::usage, "message too long (over " + std::to_string(kMaxMessageBytes) +
                                                         " bytes); the connection is closed"));
      return;
    }
    if (ec) {
      if (ec == asio::error::eof && buffer_->size() > 0) {
        reply_and_close(encode_error(ErrorCode::usage, "truncated message (the stream ended before a newline)"));
        return;
      }
      server_.remove(shared_from_this());
      return;
    }
    std::string line(asio::buffers_begin(buffer_->data()), asio::buffers_begin(buffer_->data()) + n - 1);
    buffer_->consume(n);
    const auto start = RequestBudget::Clock::now();
    const Share share = runs_at_once(line) ? Share::launcher : Share::requests;
    charge(share, start);  // telling a launcher's request apart is work too
    after_turn(share, [this, share, line = std::move(line)]() mutable { handle(std::move(line), share); });
  }

  using Share = Server::Share;

  bool in_debt() const {
    return !Server::is_admin(caller_) && server_.budget_.wait(caller_.uid, RequestBudget::Clock::now()).count() > 0;
  }

  /// Charges the loop time since `start` to the caller's `share`.
  void charge(Share share, RequestBudget::Clock::time_point start) {
    if (Server::is_admin(caller_)) return;
    const auto end = RequestBudget::Clock::now();
    server_.budget(share).charge(caller_.uid, end - start, end);
  }

  // The small first-request buffer, its content kept, becomes a full-size one.
  void grow_buffer() {
    auto full = std::make_unique<asio::streambuf>(kMaxMessageBytes + 1);
    const std::size_t n = buffer_->size();
    asio::buffer_copy(full->prepare(n), buffer_->data());
    full->commit(n);
    buffer_ = std::move(full);
    small_ = false;
  }

  // A user over their share of fadd's time (request_budget.h) waits on a
  // timer, holding no thread, and is checked again when it fires: several
  // connections of one user take turns at that user's share.
  template <typename Next>
  void after_turn(Share share, Next next) {
    const auto wait = Server::is_admin(caller_) ? std::chrono::milliseconds(0)
                                                : server_.budget(share).wait(caller_.uid, RequestBudget::Clock::now());
    if (wait.count() == 0) return next();
    server_.note_slowed(caller_.uid, wait);
    wait_.expires_after(wait);
    wait_.async_wait([self = shared_from_this(), share, next = std::move(next)](boost::system::error_code ec) mutable {
      if (!ec && !self->closed_) self->after_turn(share, std::move(next));
    });
  }

  void handle(std::string line, Share share) {
    const auto start = RequestBudget::Clock::now();
    // One request at a time: the next line is read once this one is answered,
    // now or later (a submit waits for its compiler probe).
    server_.handler_.handle(
        line, caller_,
        [weak = weak_from_this()](std::string out) {
          if (auto self = weak.lock(); self && !self->closed_) self->write(std::move(out));
        },
        peer_hung_up());
    charge(share, start);
  }

  // The peer closed its end (POLLHUP: both directions; a client that only
  // shut down writing still reads its answer): nobody will read the answer.
  bool peer_hung_up() {
    pollfd p{socket_.native_handle(), 0, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) != 0;
  }

  void write(std::string out) {
    out_ = std::move(out);
    close_unless_read();
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](auto wec, std::size_t) {
      if (self->closed_) return;
      self->idle_.cancel();
      if (wec) {
        self->server_.remove(self);
        return;
      }
      std::string().swap(self->out_);  // a reply can be a megabyte; a slowed session may wait long
      self->read_in_turn();
    });
  }

  // The next request of a user over their share is left unread (in the
  // kernel's socket buffer, not in fadd's memory) until their turn; a large
  // request's buffer is given back first.
  void read_in_turn() {
    if (small_) grow_buffer();
    if (buffer_->capacity() > kKeptBufferBytes && buffer_->size() == 0)  // no pipelined request in it
      buffer_ = std::make_unique<asio::streambuf>(kMaxMessageBytes + 1);
    after_turn(Share::requests, [this] { read(); });
  }

  void reply_and_close(std::string response) {
    out_ = std::move(response);
    close_unless_read();
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](auto, std::size_t) {
      if (!self->closed_) self->server_.remove(self);
    });
  }

  Server& server_;
  local::socket socket_;
  Caller caller_;
  std::unique_ptr<asio::streambuf> buffer_;
  asio::steady_timer idle_;
  asio::steady_timer wait_;  ///< a request waiting for its user's turn
  std::string out_;
  bool closed_ = false;
  bool small_ = false;  ///< buffer_ holds at most a launcher's request (start)
};

bool socket_answers(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  // EAGAIN: a listener whose backlog is full (a busy fadd) still listens.
  return rc == 0 || err == EAGAIN;
}

namespace {

/// Only a socket is fadd's to replace: a file or a directory there is
/// someone's mistake (a --socket naming the wrong path), not a stale socket.
Status not_a_socket_there(const std::string& socket_path) {
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(socket_path, ec);
  if (!std::filesystem::exists(st) || st.type() == std::filesystem::file_type::socket) return ok_status();
  return make_error(socket_path +
                    " exists and is not a socket; fadd replaces only a stale socket there: move it "
                    "away, or choose another path with --socket");
}

}  // namespace

Status socket_path_usable(const std::string& socket_path) {
  namespace fs = std::filesystem;
  const fs::path path(socket_path);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (Status ok = socket_dir_safe(dir.string()); !ok) return ok;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return ok_status();  // listen() makes it, as fadd's own
  auto facts = path_facts(dir.string());
  if (!facts) return make_error("cannot examine the socket directory " + dir.string());
  if (Status trusted = check_daemon_socket_dir(dir.string(), *facts, ::geteuid()); !trusted) return trusted;
  return not_a_socket_there(socket_path);
}

Server::Server(asio::io_context& io, RequestHandler& handler, ServerOptions options)
    : io_(io),
      handler_(handler),
      options_(options),
      acceptor_(io),
      accept_retry_(io),
      budget_(options.requests),
      launcher_budget_(options.requests) {
  // Never more sessions than descriptors: past the limit accept() fails and
  // every client, not only the newest, would be turned away.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const auto usable = lim.rlim_cur > kReservedFds * 2 ? lim.rlim_cur - kReservedFds : lim.rlim_cur / 2;
    options_.max_sessions = std::min<std::size_t>(options_.max_sessions, usable);
  }
  options_.max_sessions_per_user = std::min(options_.max_sessions_per_user, options_.max_sessions);
}

Server::~Server() { close(); }

Status Server::listen(const std::string& socket_path) {
  namespace fs = std::filesystem;
  const fs::path path(socket_path);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  const bool group_access = (options_.socket_mode & 0070) != 0;
  const bool other_access = (options_.socket_mode & 0007) != 0;
  // fadd gives the socket its group and mode by path, after bind(): another
  // user who could rename a directory on the way to it could swap the path
  // in between and have them given to a file of their choosing. Asked
  // before creating anything (nothing is made in a directory someone else
  // controls) and after.
  const auto dirs_above = [&] { return socket_dir_safe(dir.string()); };
  if (Status ok = socket_path_usable(socket_path); !ok) return ok;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return make_error("cannot create socket directory " + dir.string() + ": " + ec.message());
    // Only as open as the socket's audience needs: traversal, never writing.
    ::chmod(dir.c_str(), other_access ? 0755 : group_access ? 0750 : 0700);
    if (options_.socket_group && ::chown(dir.c_str(), static_cast<uid_t>(-1), *options_.socket_group) != 0)
      return make_error("cannot give the socket directory " + dir.string() + " to group " +
                        std::to_string(*options_.socket_group) + ": " + std::strerror(errno));
  }
  auto facts = path_facts(dir.string());
  if (!facts) return make_error("cannot examine the socket directory " + dir.string());
  if (Status trusted = check_daemon_socket_dir(dir.string(), *facts, ::geteuid()); !trusted) return trusted;
  if (Status ok = dirs_above(); !ok) return ok;
  if ((group_access && !(facts->mode & 0010)) || (other_access && !(facts->mode & 0001)))
    spdlog::warn("the socket directory {} (mode {:o}) keeps out users the socket mode {:o} lets in", dir.string(),
                 facts->mode, options_.socket_mode);
  if (Status ok = not_a_socket_there(socket_path); !ok) return ok;
  if (const auto st = fs::symlink_status(path, ec); fs::exists(st)) {
    if (socket_answers(socket_path))
      return make_error("another fadd is already running on " + socket_path + " (stop it with 'fad daemon stop')");
    fs::remove(path, ec);  // stale: its daemon died without cleaning up
    spdlog::info("removed stale socket {}", socket_path);
  }
  // Close-on-exec from the start (Asio opens sockets without it): a compiler
  // must never inherit the listening socket.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error("cannot create a socket: " + std::string(std::strerror(errno)));
  boost::system::error_code aec;
  acceptor_.assign(local(), fd, aec);
  if (!aec) {
    // Create the socket 0600 from the start: no window where others may connect.
    const mode_t old = ::umask(0177);
    acceptor_.bind(local::endpoint(socket_path), aec);
    ::umask(old);
  }
  if (!aec && options_.socket_group && ::chown(socket_path.c_str(), static_cast<uid_t>(-1), *options_.socket_group))
    return make_error("cannot give the socket " + socket_path + " to group " + std::to_string(*options_.socket_group) +
                      ": " + std::strerror(errno));
  if (!aec && ::chmod(socket_path.c_str(), options_.socket_mode) != 0)
    return make_error("cannot set the mode of " + socket_path + ": " + std::strerror(errno));
  if (!aec) acceptor_.listen(asio::socket_base::max_listen_connections, aec);
  if (aec) return make_error("cannot listen on " + socket_path + ": " + aec.message());
  path_ = socket_path;
  if (struct stat st{}; ::lstat(socket_path.c_str(), &st) == 0) {
    socket_dev_ = st.st_dev;
    socket_ino_ = st.st_ino;
  }
  said_replaced_ = false;
  accept();
  return ok_status();
}

void Server::keep_socket() {
  if (path_.empty() || closed_) return;
  boost::system::error_code ec;
  if (acceptor_.is_open()) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
      if (!is_ours(st) && !said_replaced_)
        spdlog::error(
            "{} is no longer fadd's socket: something was put in its place while fadd ran, so no client reaches "
            "this fadd (pid {}); move it away and stop fadd with 'kill -TERM {}', then start it again",
            path_, ::getpid(), ::getpid());
      said_replaced_ = !is_ours(st);
      return;
    }
    // Gone, or its directory is (or is something else now); a directory
    // fadd may not read leaves nothing to act on.
    if (errno != ENOENT && errno != ENOTDIR) return;
    spdlog::warn("the socket {} was deleted while fadd ran (a cleaner of old files?); listening there again", path_);
    accept_retry_.cancel();
    acceptor_.close(ec);  // open sessions go on
  }
  if (Status again = listen(path_); !again) {
    // Tried again at the next call (a directory being remade, a full disk),
    // and said again only when the reason changes: not every 10 s for weeks.
    if (again.error() != relisten_error_)
      spdlog::error("cannot listen again on {}: {}; no client reaches fadd until it can (tried again every 10 s)",
                    path_, again.error());
    relisten_error_ = again.error();
    acceptor_.close(ec);
  } else if (!relisten_error_.empty()) {
    spdlog::info("listening on {} again", path_);
    relisten_error_.clear();
  }
}

void Server::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, local::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec == asio::error::no_buffer_space ||
        ec == asio::error::no_memory) {
      // Out of descriptors: accepting again at once would spin. Sessions time
      // out and free some; try again shortly.
      spdlog::warn("cannot accept a client ({}); retrying in 100 ms", ec.message());
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](boost::system::error_code tec) {
        if (!tec && acceptor_.is_open()) accept();
      });
      return;
    }
    if (!ec) admit(std::move(socket));
    accept();
  });
}

void Server::admit(local::socket socket) {
  set_cloexec(socket.native_handle());
  const Caller caller = peer_of(socket.native_handle());
  std::size_t& mine = per_user_[caller.uid];
  const bool admin = is_admin(caller);
  std::size_t cap = options_.max_sessions;
  if (!admin) cap -= std::min(kAdminSessions, cap / 2);
  const bool heavy = !admin && mine >= kLightUser;
  if (heavy) cap -= std::min(kLightSessions, cap / 2);
  if (sessions_.size() >= cap || mine >= options_.max_sessions_per_user) {
    const bool user_cap = sessions_.size() < cap;
    const std::string why =
        user_cap ? "too many connections from your user (" + std::to_string(mine) + " open, limit " +
                       std::to_string(options_.max_sessions_per_user) + ")"
                 : "too many connections (" + std::to_string(sessions_.size()) + " open, limit " + std::to_string(cap) +
                       (heavy ? " while your user holds " + std::to_string(mine) : std::string()) + ")";
    note_refused(caller.uid, why);
    say_and_close(
        socket,
        encode_error(ErrorCode::busy, "fadd refuses the connection: " + why + "; idle connections close after " +
                                          std::to_string(options_.idle_timeout.count() / 1000) + " s, try again then"));
    if (mine == 0) per_user_.erase(caller.uid);
    return;
  }
  ++mine;
  auto s = std::make_shared<Session>(*this, std::move(socket), caller);
  sessions_.insert(s);
  s->start();
}

bool Server::is_admin(const Caller& c) { return c.uid == 0 || c.uid == ::geteuid(); }

void Server::charge(uid_t uid, std::chrono::steady_clock::duration cost, Share share) {
  Caller who;
  who.uid = uid;
  if (is_admin(who)) return;
  const auto now = RequestBudget::Clock::now();
  budget(share).charge(uid, cost, now);
}

void Server::note_slowed(uid_t uid, std::chrono::milliseconds wait) {
  const auto now = std::chrono::steady_clock::now();
  auto it = slowed_.find(uid);
  if (it != slowed_.end() && now - it->second < kSlowedLogEvery) return;
  slowed_[uid] = now;
  spdlog::info(
      "uid {} has used its share of fadd's time; its requests wait (this one {} ms; said at most once a "
      "minute)",
      uid, wait.count());
}

void Server::note_refused(uid_t uid, const std::string& why) {
  // A client connecting in a loop is refused thousands of times a second:
  // one line for each would flood the log (and journald's rate limit would
  // then drop everyone's lines).
  const auto now = std::chrono::steady_clock::now();
  // Users whose refusals are all logged and long past are forgotten.
  if (refused_.size() > kRefusedUsersKept)
    for (auto old = refused_.begin(); old != refused_.end();)
      old = old->second.unlogged == 0 && now - old->second.last_logged >= kRefusedLogEvery ? refused_.erase(old)
                                                                                           : std::next(old);
  auto [it, first] = refused_.try_emplace(uid);
  Refusals& r = it->second;
  if (!first && now - r.last_logged < kRefusedLogEvery) {
    ++r.unlogged;
    return;
  }
  if (r.unlogged > 0)
    spdlog::warn("refusing a client of uid {}: {} ({} more were refused since the last such line)", uid, why,
                 r.unlogged);
  else
    spdlog::warn("refusing a client of uid {}: {}", uid, why);
  r.last_logged = now;
  r.unlogged = 0;
}

void Server::remove(const std::shared_ptr<Session>& s) {
  s->close();
  if (sessions_.erase(s) == 0) return;
  const uid_t uid = s->caller().uid;
  if (auto it = per_user_.find(uid); it != per_user_.end() && --it->second == 0) per_user_.erase(it);
  // A connection of theirs closed: a spell of refusals may be over, count it
  // (no more often than the refusals themselves are logged).
  const auto now = std::chrono::steady_clock::now();
  if (auto r = refused_.find(uid);
      r != refused_.end() && r->second.unlogged > 0 && now - r->second.last_logged >= kRefusedLogEvery) {
    spdlog::warn("uid {}: {} more connections were refused since the last such line", uid, r->second.unlogged);
    r->second.unlogged = 0;
    r->second.last_logged = now;
  }
}

void Server::close() {
  closed_ = true;
  boost::system::error_code ec;
  accept_retry_.cancel();
  if (acceptor_.is_open()) {
    acceptor_.close(ec);
    // Never another's file: something put in place of a deleted socket.
    if (struct stat st{}; !path_.empty() && ::lstat(path_.c_str(), &st) == 0 && is_ours(st)) ::unlink(path_.c_str());
  }
  for (const auto& s : sessions_) s->close();
  sessions_.clear();
  per_user_.clear();
}

}  // namespace fad
