// HTTP listener on libmicrohttpd; see http_server.h. Routes and answers live in http_api.cpp.
//
// Why not a thread per connection: a client that opens a connection and then sends nothing (or
// one byte now and then) held a worker of the old cpp-httplib server each, and 64 of them
// stopped ingest fleet-wide. Here two event loops (epoll) own every connection, so an idle
// connection costs a file descriptor and a little memory, never a thread:
//   - accept: at most max_connections in all and max_connections_per_source per address;
//   - read: each request must be complete within request_timeout_s of the connection (or of
//     its previous answer); a sweeper shuts the socket of any that is not, trickling or not;
//   - run: a complete request is suspended and queued for `workers` threads (ingest fsyncs);
//     with queue_depth requests already waiting, it is answered 503 + Retry-After at once.
#include "vigil/drainer/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http_api.h"

namespace vigil::drainer {

bool token_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// TLS 1.2 and 1.3 only, GnuTLS's NORMAL cipher choice within them.
constexpr const char* kTlsPriorities = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

// One request between its first header callback and its completion.
struct Exchange {
  HttpRequest req;
  std::optional<HttpReply> reply;  // set by a worker (or early); sent on the next callback
  uint64_t body_seen = 0;          // bytes offered, including any refused past the limit
  bool queued = false;
};

// One connection, from accept to close; what the deadline sweeper looks at.
struct ConnState {
  int fd = -1;
  SteadyClock::time_point since;  // connect, or the last answer on this connection
  bool running = false;           // a worker has it: not the client's time
  bool shut = false;
};

}  // namespace

struct HttpServer::Impl {
  Drainer& d;
  DrainerConfig cfg;
  HttpApi api;
  int listen_fd = -1;
  int port = -1;
  MHD_Daemon* daemon = nullptr;

  std::mutex conn_mu;  // guards conns and ConnState contents
  std::unordered_map<MHD_Connection*, ConnState> conns;

  std::mutex q_mu;               // guards queue, stopping, stopped, shutdown_asked
  std::condition_variable q_cv;  // workers only: a job, or stopped
  std::deque<std::pair<MHD_Connection*, Exchange*>> queue;
  bool stopping = false;
  bool stopped = false;
  bool shutdown_asked = false;
  std::condition_variable shutdown_cv;  // wait() and the sweeper: shutdown asked, or stopped
  std::vector<std::thread> workers;
  std::thread sweeper;

  Impl(Drainer& dr, const DrainerConfig& c) : d(dr), cfg(c), api(dr, cfg) {}

  static MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method,
                               const char*, const char* data, size_t* size, void** con_cls) {
    auto* self = static_cast<Impl*>(cls);
    auto* ex = static_cast<Exchange*>(*con_cls);
    if (!ex) {  // headers complete
      ex = new Exchange;
      *con_cls = ex;
      ex->req.method = method;
      ex->req.path = url;
      if (const char* a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"))
        ex->req.authorization = a;
      if (const char* l = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length"))
        ex->req.content_length = l;
      if (const char* w =
              MHD_lookup_connection_value(c, MHD_HEADER_KIND, std::string(kDecisionHeader).c_str()))
        ex->req.want_decision = std::string_view(w) == "1";
      if (auto early = self->api.before_body(ex->req)) return send(c, *early);
      return MHD_YES;
    }
    if (*size > 0) {  // a piece of the body
      ex->body_seen += *size;
      if (ex->body_seen <= static_cast<uint64_t>(self->cfg.max_body_bytes))
        ex->req.body.append(data, *size);
      *size = 0;
      return MHD_YES;
    }
    if (ex->reply) return send(c, *ex->reply);  // back from a worker
    if (ex->body_seen > static_cast<uint64_t>(self->cfg.max_body_bytes))
      return send(c, self->api.too_large(ex->body_seen));
    if (ex->queued) return MHD_YES;  // spurious wake-up; the worker will resume it
    return self->enqueue(c, ex);
  }

  MHD_Result enqueue(MHD_Connection* c, Exchange* ex) {
    {
      std::lock_guard lk(q_mu);
      if (stopping || queue.size() >= static_cast<size_t>(cfg.limits.queue_depth)) {
        if (ex->req.path == "/v1/reports") d.metrics().on_ingest("busy");
        return send(c, HttpApi::busy());
      }
      ex->queued = true;
      set_running(c, true);
      MHD_suspend_connection(c);
      queue.emplace_back(c, ex);
    }
    q_cv.notify_one();
    return MHD_YES;
  }

  void work() {
    for (;;) {
      std::pair<MHD_Connection*, Exchange*> job;
      {
        std::unique_lock lk(q_mu);
        q_cv.wait(lk, [&] { return stopped || !queue.empty(); });
        if (queue.empty()) return;
        job = queue.front();
        queue.pop_front();
      }
      job.second->reply = api.handle(job.second->req);
      MHD_resume_connection(job.first);
    }
  }

  static MHD_Result send(MHD_Connection* c, const HttpReply& r) {
    MHD_Response* resp = MHD_create_response_from_buffer(
        r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r.content_type.c_str());
    for (const auto& [k, v] : r.headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
    const MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(r.status), resp);
    MHD_destroy_response(resp);
    return ok;
  }

  void set_running(MHD_Connection* c, bool running) {
    std::lock_guard lk(conn_mu);
    auto it = conns.find(c);
    if (it == conns.end()) return;
    it->second.running = running;
    it->second.since = SteadyClock::now();
  }

  static void on_completed(void* cls, MHD_Connection* c, void** con_cls,
                           MHD_RequestTerminationCode) {
    delete static_cast<Exchange*>(*con_cls);
    *con_cls = nullptr;
    static_cast<Impl*>(cls)->set_running(c, false);  // the next request's clock starts now
  }

  static void on_connection(void* cls, MHD_Connection* c, void**,
                            MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<Impl*>(cls);
    std::lock_guard lk(self->conn_mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
      self->conns[c] = ConnState{info ? info->connect_fd : -1, SteadyClock::now()};
    } else {
      self->conns.erase(c);  // before libmicrohttpd closes the descriptor: the sweeper's
    }                        // shutdown() below never reaches a reused one
  }

  // Shuts the socket of every connection whose request has taken longer than the deadline;
  // libmicrohttpd then sees the end of the stream and closes it.
  void sweep() {
    const auto limit = std::chrono::seconds(cfg.limits.request_timeout_s);
    std::unique_lock qlk(q_mu);
    while (!stopped) {
      shutdown_cv.wait_for(qlk, std::chrono::milliseconds(250));
      const auto now = SteadyClock::now();
      std::lock_guard lk(conn_mu);
      for (auto& [c, s] : conns) {
        if (s.running || s.shut || s.fd < 0 || now - s.since < limit) continue;
        ::shutdown(s.fd, SHUT_RDWR);
        s.shut = true;
      }
    }
  }

  VoidResult start() {
    const auto& m = cfg.limits;
    // No MHD_USE_ERROR_LOG: it writes a line per client that hangs up mid-request, which an
    // attack turns into a flood of stderr.
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO;
    // TLS (listen.tls): libmicrohttpd's own, on GnuTLS. The handshake runs in the same event
    // loops and under the same deadlines as the request, so a client that connects and never
    // completes it holds a descriptor until request_timeout_s, never a thread.
    std::vector<MHD_OptionItem> tls_options;
    if (cfg.tls) {
      if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return Error{"this libmicrohttpd was built without TLS; listen.tls cannot be served",
                     "MHD_is_feature_supported(MHD_FEATURE_TLS)"};
      flags |= MHD_USE_TLS;
      tls_options = {
          {MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(cfg.tls->cert_pem.c_str())},
          {MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(cfg.tls->key_pem.c_str())},
          {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)},
      };
    }
    tls_options.push_back({MHD_OPTION_END, 0, nullptr});
    daemon = MHD_start_daemon(
        flags, 0, nullptr, nullptr, &Impl::on_request, this,  //
        MHD_OPTION_LISTEN_SOCKET, listen_fd,                  //
        MHD_OPTION_THREAD_POOL_SIZE, 2u,                      //
        MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(m.max_connections),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(m.max_connections_per_source),
        // Inactivity as well: an idle keep-alive connection is dropped after the same time.
        MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(m.request_timeout_s),
        MHD_OPTION_NOTIFY_COMPLETED, &Impl::on_completed, this,    //
        MHD_OPTION_NOTIFY_CONNECTION, &Impl::on_connection, this,  //
        MHD_OPTION_ARRAY, tls_options.data(), MHD_OPTION_END);
    if (!daemon) return Error{"libmicrohttpd refused to start", "MHD_start_daemon"};
    for (int i = 0; i < m.workers; ++i) workers.emplace_back([this] { work(); });
    sweeper = std::thread([this] { sweep(); });
    return ok_result();
  }

  void stop() {
    {
      std::lock_guard lk(q_mu);
      if (!daemon || stopped) return;
      stopping = true;  // new requests get 503; queued ones still run and are answered
    }
    // Workers finish the queue (every suspended connection is resumed) before they end.
    for (;;) {
      {
        std::lock_guard lk(q_mu);
        if (queue.empty()) {
          stopped = true;
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    q_cv.notify_all();
    shutdown_cv.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
    if (sweeper.joinable()) sweeper.join();
    MHD_stop_daemon(daemon);  // closes the listening socket too
    daemon = nullptr;
    listen_fd = -1;
    shutdown_cv.notify_all();
  }
};

HttpServer::HttpServer(Drainer& drainer, const DrainerConfig& cfg)
    : impl_(std::make_unique<Impl>(drainer, cfg)) {}

HttpServer::~HttpServer() {
  stop();
  if (impl_ && impl_->listen_fd >= 0) ::close(impl_->listen_fd);
}

Result<int> HttpServer::bind() {
  const auto& c = impl_->cfg;
  // Every connection is a descriptor: let the process hold max_connections of them (up to the
  // hard limit the service manager gave it; beyond that, accept fails and clients retry).
  rlimit rl{};
  const rlim_t want = static_cast<rlim_t>(c.limits.max_connections) + 256;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
    rl.rlim_cur = std::min(want, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  const std::string where = "bind(" + c.listen_address + ":" + std::to_string(c.listen_port) + ")";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(c.listen_address.c_str(), std::to_string(c.listen_port).c_str(), &hints,
                           &res);
      rc != 0)
    return Error{std::string("cannot resolve listen address: ") + gai_strerror(rc), where};
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return Error{"cannot bind (in use? wrong address?): " + why, where};
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  impl_->port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  impl_->listen_fd = fd;
  return impl_->port;
}

VoidResult HttpServer::start() {
  if (impl_->listen_fd < 0) return Error{"not bound", "HttpServer::start"};
  return impl_->start();
}

void HttpServer::shutdown() {
  {
    std::lock_guard lk(impl_->q_mu);
    impl_->shutdown_asked = true;
  }
  impl_->shutdown_cv.notify_all();
}

void HttpServer::wait() {
  std::unique_lock lk(impl_->q_mu);
  impl_->shutdown_cv.wait(lk, [&] { return impl_->shutdown_asked || impl_->stopped; });
  lk.unlock();
  impl_->stop();
}

void HttpServer::stop() {
  if (!impl_) return;
  impl_->stop();
}

int HttpServer::port() const { return impl_->port; }

}  // namespace vigil::drainer
