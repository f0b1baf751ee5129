#pragma once
// One connection to slurmrestd: HTTP with a JWT, the API version negotiated once, errors that say
// what to do. Used by the REST SlurmApi and SlurmJobReader (rest_client.cpp).
#include <httplib.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "vigil/base/result.h"
#include "vigil/slurm/slurm_rest.h"

namespace vigil::slurm {

// A reply slurmrestd sent: its HTTP status and JSON body (with Slurm's "errors" array).
struct RestReply {
  int status = 0;
  nlohmann::json body;
  bool ok() const;
  bool has_error_number(int number) const;
  // "HTTP 500: Invalid node name specified [slurm errno 2017]; ..."
  std::string describe() const;
};

class RestSession {
 public:
  static Result<std::shared_ptr<RestSession>> create(const RestSettings& settings);
  ~RestSession();

  // GET / POST below /slurm/<version>/ (path without a leading slash). An Error when no usable
  // reply came (unreachable, token rejected, not JSON); Slurm's own failures are in the reply.
  Result<RestReply> get(const std::string& path);
  Result<RestReply> post(const std::string& path, const nlohmann::json& body);
  std::string url() const { return settings_.url; }

  // The version in use ("v0.0.42"), negotiating it first if needed.
  Result<std::string> version();

 private:
  explicit RestSession(RestSettings settings);
  Result<RestReply> request(const char* method, const std::string& path,
                            const nlohmann::json* body);
  // GET `path`; once more on a fresh connection when a kept-alive one was closed under it.
  httplib::Result get_once_more_on_a_stale_connection(const std::string& path,
                                                      const httplib::Headers& headers);
  Result<RestReply> send_locked(const char* method, const std::string& full_path,
                                const nlohmann::json* body, bool refresh_token);
  Result<std::string> negotiate_locked();
  Result<std::string> token_locked(bool refresh);
  Result<httplib::Headers> headers_locked(bool refresh_token);

  RestSettings settings_;
  std::mutex mu_;
  std::unique_ptr<httplib::Client> http_;
  std::string version_;
  std::string token_;
  std::string token_file_stamp_;  // mtime + size of token_file when token_ was read
};

}  // namespace vigil::slurm
