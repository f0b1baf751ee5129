#pragma once
// Result<T>: a value or an Error that records where it happened. Library code returns these
// instead of throwing or exiting; VIGIL_TRY propagates errors with the failing call attached.
#include <string>
#include <utility>
#include <variant>

namespace vigil {

struct Error {
  std::string message;  // what went wrong, with what to do next where possible
  std::string where;    // the call that failed, e.g. "nvmlDeviceGetRemappedRows(gpu 3)"
  std::string to_string() const { return where.empty() ? message : where + ": " + message; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

using VoidResult = Result<std::monostate>;
inline VoidResult ok_result() { return std::monostate{}; }

}  // namespace vigil

// VIGIL_TRY(auto x, expr): evaluates expr (a Result); on error returns it from the enclosing
// function with `where` filled in when empty, else binds the value.
#define VIGIL_CONCAT_INNER(a, b) a##b
#define VIGIL_CONCAT(a, b) VIGIL_CONCAT_INNER(a, b)
#define VIGIL_TRY_IMPL(tmp, decl, expr)                     \
  auto tmp = (expr);                                        \
  if (!tmp.ok()) {                                          \
    ::vigil::Error vigil_err_ = tmp.error();                \
    if (vigil_err_.where.empty()) vigil_err_.where = #expr; \
    return vigil_err_;                                      \
  }                                                         \
  decl = std::move(tmp).value()
#define VIGIL_TRY(decl, expr) VIGIL_TRY_IMPL(VIGIL_CONCAT(vigil_try_, __LINE__), decl, expr)
