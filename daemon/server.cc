// Socket server and client sessions; see server.h.
#include "daemon/server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

namespace fad {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

namespace {
// More clients than this at once is a runaway script, not a user.
constexpr std::size_t kMaxSessions = 256;
}  // namespace

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server& server, local::socket socket)
      : server_(server), socket_(std::move(socket)), buffer_(kMaxMessageBytes + 1) {}

  void start() { read(); }
  void close() {
    boost::system::error_code ec;
    socket_.close(ec);
  }

 private:
  void read() {
    asio::async_read_until(socket_, buffer_, '\n',
                           [self = shared_from_this()](auto ec, std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(boost::system::error_code ec, std::size_t n) {
    if (ec == asio::error::operation_aborted) return;  // shutting down
    if (ec == asio::error::not_found) {
      // The buffer filled without a newline: the message is over the limit.
      reply_and_close(encode_error(ErrorCode::usage, "message too long (over " + std::to_string(kMaxMessageBytes) +
                                                         " bytes); the connection is closed"));
      return;
    }
    if (ec) {
      if (ec == asio::error::eof && buffer_.size() > 0) {
        reply_and_close(encode_error(ErrorCode::usage, "truncated message (the stream ended before a newline)"));
        return;
      }
      server_.remove(shared_from_this());
      return;
    }
    std::string line(asio::buffers_begin(buffer_.data()), asio::buffers_begin(buffer_.data()) + n - 1);
    buffer_.consume(n);
    out_ = server_.handler_.handle(line);
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](auto wec, std::size_t) {
      if (wec) {
        self->server_.remove(self);
        return;
      }
      self->read();
    });
  }

  void reply_and_close(std::string response) {
    out_ = std::move(response);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](auto, std::size_t) { self->server_.remove(self); });
  }

  Server& server_;
  local::socket socket_;
  asio::streambuf buffer_;
  std::string out_;
};

Server::Server(asio::io_context& io, RequestHandler& handler) : io_(io), handler_(handler), acceptor_(io) {}

Server::~Server() { close(); }

Status Server::listen(const std::string& socket_path) {
  namespace fs = std::filesystem;
  const fs::path path(socket_path);
  std::error_code ec;
  if (path.has_parent_path() && !fs::exists(path.parent_path())) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) return make_error("cannot create socket directory " + path.parent_path().string() + ": " + ec.message());
    ::chmod(path.parent_path().c_str(), 0700);
  }
  if (fs::exists(path)) {
    local::socket probe(io_);
    boost::system::error_code cec;
    probe.connect(local::endpoint(socket_path), cec);
    if (!cec)
      return make_error("another fadd is already running on " + socket_path + " (stop it with 'fad daemon stop')");
    fs::remove(path, ec);  // stale: its daemon died without cleaning up
    spdlog::info("removed stale socket {}", socket_path);
  }
  boost::system::error_code aec;
  acceptor_.open(local(), aec);
  if (!aec) {
    // Create the socket 0600 from the start: no window where others may connect.
    const mode_t old = ::umask(0177);
    acceptor_.bind(local::endpoint(socket_path), aec);
    ::umask(old);
  }
  if (!aec) acceptor_.listen(asio::socket_base::max_listen_connections, aec);
  if (aec) return make_error("cannot listen on " + socket_path + ": " + aec.message());
  path_ = socket_path;
  accept();
  return ok_status();
}

void Server::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, local::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      if (sessions_.size() >= kMaxSessions) {
        spdlog::warn("refusing a client: {} sessions open", sessions_.size());
      } else {
        auto s = std::make_shared<Session>(*this, std::move(socket));
        sessions_.insert(s);
        s->start();
      }
    }
    accept();
  });
}

void Server::remove(const std::shared_ptr<Session>& s) {
  s->close();
  sessions_.erase(s);
}

void Server::close() {
  boost::system::error_code ec;
  if (acceptor_.is_open()) {
    acceptor_.close(ec);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  for (const auto& s : sessions_) s->close();
  sessions_.clear();
}

}  // namespace fad
