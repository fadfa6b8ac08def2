// Status and Result<T>: how every fallible operation at jisu's edges (files, flags, HTTP
// bodies) reports failure. Library code never calls exit(); it returns a Status whose message
// names what was wrong (the file, the field, the tensor). Internal invariants use assertions.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace jisu {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,    // bad flag, bad request field, bad value
    kNotFound,           // missing file, key, tensor
    kIoError,            // OS-level failure reading/writing
    kCorrupt,            // malformed file contents (bad magic, offsets out of range, ...)
    kUnsupported,        // valid input we do not handle (unknown architecture, dtype)
    kOutOfRange,         // e.g. prompt longer than the context
    kResourceExhausted,  // memory budget, queue full
    kInternal,
    kUnavailable,  // not serving now (shutting down); another time or server may succeed
  };

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Corrupt(std::string m) { return {Code::kCorrupt, std::move(m)}; }
  static Status Unsupported(std::string m) { return {Code::kUnsupported, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {Code::kOutOfRange, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {Code::kResourceExhausted, std::move(m)};
  }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Adds context in front of the message: "loading model.gguf: tensor 'x': ...".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

const char* StatusCodeName(Status::Code code);

inline std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

inline const char* StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "invalid argument";
    case Status::Code::kNotFound:
      return "not found";
    case Status::Code::kIoError:
      return "I/O error";
    case Status::Code::kCorrupt:
      return "corrupt input";
    case Status::Code::kUnsupported:
      return "unsupported";
    case Status::Code::kOutOfRange:
      return "out of range";
    case Status::Code::kResourceExhausted:
      return "resource exhausted";
    case Status::Code::kUnavailable:
      return "unavailable";
    case Status::Code::kInternal:
      return "internal error";
  }
  return "unknown";
}

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result constructed from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace jisu

#define JISU_CONCAT_INNER_(a, b) a##b
#define JISU_CONCAT_(a, b) JISU_CONCAT_INNER_(a, b)

#define JISU_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::jisu::Status jisu_status_ = (expr);        \
    if (!jisu_status_.ok()) return jisu_status_; \
  } while (0)

#define JISU_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// JISU_ASSIGN_OR_RETURN(auto x, FunctionReturningResult());
#define JISU_ASSIGN_OR_RETURN(lhs, expr) \
  JISU_ASSIGN_OR_RETURN_IMPL_(JISU_CONCAT_(jisu_result_, __LINE__), lhs, expr)
