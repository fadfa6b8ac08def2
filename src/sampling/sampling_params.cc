// SamplingParams::Validate: the request-facing checks. Ranges follow the OpenAI API where it
// defines one (penalties in [-2, 2]) and Hugging Face otherwise.
#include <cmath>
#include <cstdio>
#include <string>

#include "sampling/sampler.h"

namespace jisu {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

Status Bad(const char* field, const char* rule, double got) {
  return Status::InvalidArgument(std::string(field) + " must be " + rule + " (got " + Num(got) +
                                 ")");
}

}  // namespace

Status SamplingParams::Validate() const {
  // Comparisons are written so that NaN fails them.
  if (!(std::isfinite(temperature) && temperature >= 0.0f)) {
    return Bad("temperature", "a finite number >= 0", temperature);
  }
  if (top_k < -1) return Bad("top_k", ">= 0, or -1 to disable", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) return Bad("top_p", "in (0, 1]", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return Bad("min_p", "in [0, 1]", min_p);
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return Bad("repetition_penalty", "a finite number > 0", repetition_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return Bad("frequency_penalty", "in [-2, 2]", frequency_penalty);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return Bad("presence_penalty", "in [-2, 2]", presence_penalty);
  }
  if (max_tokens < 0) return Bad("max_tokens", ">= 0", max_tokens);
  if (stop.size() > kMaxStopStrings) {
    return Status::InvalidArgument("stop has " + std::to_string(stop.size()) +
                                   " strings; at most " + std::to_string(kMaxStopStrings) +
                                   " are allowed");
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    const std::string field = "stop[" + std::to_string(i) + "]";
    if (stop[i].empty()) return Status::InvalidArgument(field + " is empty");
    if (stop[i].size() > kMaxStopBytes) {
      return Status::InvalidArgument(field + " is " + std::to_string(stop[i].size()) +
                                     " bytes; at most " + std::to_string(kMaxStopBytes) +
                                     " are allowed");
    }
  }
  if (logit_bias.size() > kMaxLogitBias) {
    return Status::InvalidArgument("logit_bias has " + std::to_string(logit_bias.size()) +
                                   " entries; at most " + std::to_string(kMaxLogitBias) +
                                   " are allowed");
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return Bad("logit_bias token ids", ">= 0", id);
    if (!(bias >= -100.0f && bias <= 100.0f))
      return Bad("logit_bias values", "in [-100, 100]", bias);
  }
  if (structured.kind == StructuredOutput::Kind::kNone && !structured.text.empty()) {
    return Status::InvalidArgument("structured output text given without a kind");
  }
  if (structured.text.size() > StructuredOutput::kMaxTextBytes) {
    return Status::InvalidArgument("structured output text is larger than " +
                                   std::to_string(StructuredOutput::kMaxTextBytes) + " bytes");
  }
  const bool needs_text = structured.kind == StructuredOutput::Kind::kJsonSchema ||
                          structured.kind == StructuredOutput::Kind::kGrammar ||
                          structured.kind == StructuredOutput::Kind::kRegex;
  if (needs_text && structured.text.empty()) {
    return Status::InvalidArgument("structured output needs its schema, grammar or regex text");
  }
  if (structured.special_tokens.size() > StructuredOutput::kMaxSpecialTokens) {
    return Status::InvalidArgument("structured output special_tokens: at most " +
                                   std::to_string(StructuredOutput::kMaxSpecialTokens) +
                                   " are allowed");
  }
  for (size_t i = 0; i < structured.special_tokens.size(); ++i) {
    const size_t n = structured.special_tokens[i].size();
    if (n == 0 || n > StructuredOutput::kMaxSpecialTokenBytes) {
      return Status::InvalidArgument(
          "structured output special_tokens[" + std::to_string(i) + "] must have 1 to " +
          std::to_string(StructuredOutput::kMaxSpecialTokenBytes) + " bytes");
    }
  }
  return Status::Ok();
}

}  // namespace jisu
