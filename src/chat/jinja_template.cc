#include "chat/jinja_template.h"

#include "chat/jinja_builtins.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"

namespace jisu::jinja {

Result<std::unique_ptr<Template>> Template::Parse(std::string_view source) {
  std::unique_ptr<Template> t(new Template());
  t->source_ = NormalizeSource(source);
  JISU_ASSIGN_OR_RETURN(t->body_, ParseTemplate(t->source_));
  return t;
}

Result<std::string> Template::Render(const std::vector<std::pair<std::string, Value>>& vars,
                                     const Limits& limits,
                                     const std::optional<std::tm>& now) const {
  auto globals = std::make_shared<Scope>(nullptr);
  InstallGlobals(*globals, now);
  // Template variables live in their own scope above the globals, as in jinja2 where
  // render() arguments shadow globals.
  auto top = std::make_shared<Scope>(globals);
  for (const auto& [k, v] : vars) top->Set(k, v);
  Interp in(source_, limits);
  return in.Render(body_, top);
}

}  // namespace jisu::jinja
