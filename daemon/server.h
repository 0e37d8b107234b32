// The Unix socket server: accepts clients and owns their sessions. Each session
// reads newline-framed requests (at most kMaxMessageBytes each), hands them to the
// RequestHandler and writes the response. A client that sends garbage, too much
// or too little gets an error response and is disconnected; the daemon goes on.
#pragma once

#include <memory>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "common/result.h"
#include "daemon/request_handler.h"

namespace fad {

class Session;

class Server {
 public:
  Server(boost::asio::io_context& io, RequestHandler& handler);
  ~Server();

  /// Creates the socket's directory (0700) if needed and binds the socket (0600).
  /// Fails if another daemon answers on it; removes a stale socket file.
  Status listen(const std::string& socket_path);
  /// Stops accepting, closes every session and removes the socket file.
  void close();

  /// Sessions currently open (for tests and limits).
  std::size_t session_count() const { return sessions_.size(); }

 private:
  friend class Session;
  void accept();
  void remove(const std::shared_ptr<Session>& s);

  boost::asio::io_context& io_;
  RequestHandler& handler_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  std::set<std::shared_ptr<Session>> sessions_;
};

}  // namespace fad
