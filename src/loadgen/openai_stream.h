// Interprets the data of each server-sent event of an OpenAI streaming response (chat or text
// completion chunks, the usage chunk, an in-stream error, "[DONE]") into a RequestResult.
#pragma once

#include <string_view>

#include "loadgen/request_result.h"

namespace jisu::loadgen {

class OpenAiStreamReader {
 public:
  explicit OpenAiStreamReader(RequestResult* result) : result_(result) {}

  // `t` is the arrival time of the bytes carrying this event (seconds since send).
  void OnEvent(std::string_view data, double t);

  bool done() const { return done_; }
  int64_t events() const { return events_; }

 private:
  RequestResult* result_;
  bool done_ = false;
  int64_t events_ = 0;
};

}  // namespace jisu::loadgen
