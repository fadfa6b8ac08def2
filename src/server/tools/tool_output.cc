#include "server/tools/tool_output.h"

#include <algorithm>
#include <utility>

namespace jisu::server {

ToolOutputDecoder::ToolOutputDecoder(const Tokenizer& tokenizer, ToolCallFormat format,
                                     std::span<const int32_t> eos_ids, bool ignore_eos,
                                     std::vector<std::string> stops, bool parallel)
    : tokenizer_(tokenizer),
      decoder_(tokenizer, /*skip_special=*/false),
      stops_(std::move(stops)),
      parser_(format),
      parallel_(parallel) {
  for (const std::string& m : ToolCallMarkers(format)) {
    if (auto id = tokenizer.TokenToId(m); id && tokenizer.IsSpecial(*id)) {
      marker_ids_.push_back(*id);
    }
  }
  if (!ignore_eos) eos_ids_.assign(eos_ids.begin(), eos_ids.end());
}

bool ToolOutputDecoder::Decoded(int32_t id) const {
  if (std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end()) return false;
  if (!tokenizer_.IsSpecial(id)) return true;
  return std::find(marker_ids_.begin(), marker_ids_.end(), id) != marker_ids_.end();
}

void ToolOutputDecoder::Push(std::span<const int32_t> ids, bool finished,
                             std::vector<ToolParseEvent>* out) {
  std::vector<ToolParseEvent> events;
  std::string text;
  for (int32_t id : ids) {
    if (stopped_ || !Decoded(id)) continue;
    StopMatcher::Output o = stops_.Push(decoder_.Push(id));
    text += o.text;
    stopped_ = o.stopped;
  }
  if (finished && !stopped_) {
    StopMatcher::Output rest = stops_.Push(decoder_.Flush());
    text += rest.text;
    if (!rest.stopped) text += stops_.Flush();
  }
  parser_.Push(text, &events);
  if (finished) parser_.Finish(&events);
  for (ToolParseEvent& e : events) {
    if (e.call && !parallel_ && num_calls_ > 0) continue;  // parallel_tool_calls: false
    num_calls_ += e.call ? 1 : 0;
    out->push_back(std::move(e));
  }
}

}  // namespace jisu::server
