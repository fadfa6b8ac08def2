// A compiled Jinja template (the jinja2 subset chat templates use) that can be rendered many
// times with different variables. ChatTemplate wraps this with the variables transformers
// passes; tests and the fuzzer use it directly to set tighter resource limits.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_interp.h"
#include "chat/jinja_value.h"
#include "jisu/status.h"

namespace jisu::jinja {

class Template {
 public:
  // Parses `source`; a syntax error names its line and column.
  static Result<std::unique_ptr<Template>> Parse(std::string_view source);

  // Renders with `vars` as top-level variables on top of the globals (range, namespace, ...);
  // strftime_now formats `now` when given, else the current local time.
  Result<std::string> Render(const std::vector<std::pair<std::string, Value>>& vars,
                             const Limits& limits = Limits(),
                             const std::optional<std::tm>& now = std::nullopt) const;

 private:
  Template() = default;
  std::string source_;  // normalized; error positions refer to it
  Body body_;
};

}  // namespace jisu::jinja
