#include "server/tools/tool_call_grammar.h"

#include <vector>

namespace jisu::server {
namespace {

// A GBNF string literal of `s` (names are [A-Za-z0-9_-], so only the template text needs
// escaping).
std::string Lit(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// JSON values as templates print them (tojson: ", " and ": " separators), and as models write
// them (any JSON whitespace).
constexpr const char* kJsonRules =
    "args ::= \"{\" ws ( string ws \":\" ws value ( ws \",\" ws string ws \":\" ws value )* )? "
    "ws \"}\"\n"
    "value ::= args | array | string | number | \"true\" | \"false\" | \"null\"\n"
    "array ::= \"[\" ws ( value ( ws \",\" ws value )* )? ws \"]\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" "
    "[0-9a-fA-F]{4} ) )* \"\\\"\"\n"
    "number ::= \"-\"? ( \"0\" | [1-9] [0-9]* ) ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?\n"
    "ws ::= [ \\t\\n\\r]*\n";

// One call of function `name` with arguments rule `args`, as the family writes it.
std::string CallRule(ToolCallFormat format, MistralCallSyntax mistral, const std::string& name,
                     const std::string& args) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return Lit("<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": ") + " " + args + " " +
             Lit("}\n</tool_call>");
    case ToolCallFormat::kLlama3Json:
      return Lit("{\"name\": \"" + name + "\", \"parameters\": ") + " " + args + " " + Lit("}");
    case ToolCallFormat::kMistral:
      if (mistral == MistralCallSyntax::kArgs) {
        return Lit("[TOOL_CALLS]" + name) + " ( " + Lit("[CALL_ID]") + " [a-zA-Z0-9]{9} )? " +
               Lit("[ARGS]") + " " + args;
      }
      return Lit("{\"name\": \"" + name + "\", \"arguments\": ") + " " + args + " ( " +
             Lit(", \"id\": \"") + " [a-zA-Z0-9]{9} " + Lit("\"") + " )? " + Lit("}");
    case ToolCallFormat::kNone:
      break;
  }
  return "";
}

}  // namespace

MistralCallSyntax DetectMistralCallSyntax(std::string_view template_source) {
  return template_source.find("[ARGS]") != std::string_view::npos ? MistralCallSyntax::kArgs
                                                                  : MistralCallSyntax::kArray;
}

Result<std::string> ToolCallGrammar(ToolCallFormat format, MistralCallSyntax mistral,
                                    const ToolRequest& request) {
  if (format == ToolCallFormat::kNone) {
    return Status::InvalidArgument("tool call grammar: the model has no tool-call format");
  }
  if (request.choice != ToolChoice::kRequired && request.choice != ToolChoice::kFunction) {
    return Status::InvalidArgument(
        "tool call grammar: only for tool_choice required or a named "
        "function");
  }
  std::vector<std::string> names;
  for (const auto& tool : request.tools) {
    const std::string name = tool["function"]["name"].get<std::string>();
    if (request.choice == ToolChoice::kRequired || name == request.function_name) {
      names.push_back(name);
    }
  }
  if (names.empty()) return Status::InvalidArgument("tool call grammar: no function to call");
  const bool many = request.choice == ToolChoice::kRequired && request.parallel;
  std::string g;
  // A call is one of the functions; Mistral's array form wraps all calls in one marker.
  if (format == ToolCallFormat::kMistral && mistral == MistralCallSyntax::kArray) {
    g += "root ::= " + Lit("[TOOL_CALLS][") + " call" +
         (many ? " ( " + Lit(", ") + " call )*" : "") + " " + Lit("]") + "\n";
  } else {
    g += std::string("root ::= call") + (many ? " ( ws call )*" : "") + "\n";
  }
  g += "call ::= ";
  for (size_t i = 0; i < names.size(); ++i) {
    g += (i ? " | call-" : "call-") + std::to_string(i);
  }
  g += "\n";
  for (size_t i = 0; i < names.size(); ++i) {
    // The arguments of call i: any object for now (see the header).
    g += "call-" + std::to_string(i) +
         " ::= " + CallRule(format, mistral, names[i], "args-" + std::to_string(i)) + "\n";
    g += "args-" + std::to_string(i) + " ::= args\n";
  }
  g += kJsonRules;
  return g;
}

}  // namespace jisu::server
