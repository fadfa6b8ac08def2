#include "server/tools/tool_call_grammar.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_grammar.h"

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;

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

// The JSON Schema a function's arguments are generated from (see the header).
Result<std::string> ArgumentsSchema(const Json& function) {
  auto p = function.find("parameters");
  if (p == function.end() || p->is_null()) return std::string(R"({"type":"object"})");
  Json schema = *p;  // ParseToolRequest checked it is an object
  auto type = schema.find("type");
  if (type == schema.end()) {
    schema["type"] = "object";
  } else if (*type != "object") {
    return Status::InvalidArgument(
        "the arguments of a call are a JSON object: \"type\" must be "
        "\"object\" (got " +
        type->dump() + ")");
  }
  return schema.dump();
}

struct Function {
  size_t tool_index;
  std::string name;
};

}  // namespace

MistralCallSyntax DetectMistralCallSyntax(std::string_view template_source) {
  return template_source.find("[ARGS]") != std::string_view::npos ? MistralCallSyntax::kArgs
                                                                  : MistralCallSyntax::kArray;
}

Result<std::string> ToolCallGrammar(ToolCallFormat format, MistralCallSyntax mistral,
                                    const ToolRequest& request, size_t* failed_tool) {
  if (format == ToolCallFormat::kNone) {
    return Status::InvalidArgument("tool call grammar: the model has no tool-call format");
  }
  if (request.choice != ToolChoice::kRequired && request.choice != ToolChoice::kFunction) {
    return Status::InvalidArgument(
        "tool call grammar: only for tool_choice required or a named function");
  }
  std::vector<Function> functions;
  for (size_t i = 0; i < request.tools.size(); ++i) {
    const std::string name = request.tools[i]["function"]["name"].get<std::string>();
    if (request.choice == ToolChoice::kRequired || name == request.function_name) {
      functions.push_back({i, name});
    }
  }
  if (functions.empty()) return Status::InvalidArgument("tool call grammar: no function to call");
  const bool many = request.choice == ToolChoice::kRequired && request.parallel &&
                    format != ToolCallFormat::kLlama3Json;
  // The call syntax in GBNF, each call's arguments a placeholder rule (`args-<i>`) that the
  // function's schema grammar replaces below.
  std::string g;
  // Mistral's array form wraps all calls in one marker.
  if (format == ToolCallFormat::kMistral && mistral == MistralCallSyntax::kArray) {
    g += "root ::= " + Lit("[TOOL_CALLS][") + " call" +
         (many ? " ( " + Lit(", ") + " call )*" : "") + " " + Lit("]") + "\n";
  } else {
    g += std::string("root ::= call") + (many ? " ( sep call )*\nsep ::= [ \\t\\r\\n]{0,4}" : "") +
         "\n";
  }
  g += "call ::= ";
  for (size_t i = 0; i < functions.size(); ++i) {
    g += (i ? " | call-" : "call-") + std::to_string(i);
  }
  g += "\n";
  for (size_t i = 0; i < functions.size(); ++i) {
    const std::string args = "args-" + std::to_string(i);
    g += "call-" + std::to_string(i) +
         " ::= " + CallRule(format, mistral, functions[i].name, args) + "\n";
    g += args + " ::= \"{}\"\n";
  }
  JISU_ASSIGN_OR_RETURN(grammar::Grammar grammar, grammar::ParseGbnf(g));
  for (size_t i = 0; i < functions.size(); ++i) {
    const Function& f = functions[i];
    auto fail = [&](const Status& s) {
      if (failed_tool) *failed_tool = f.tool_index;
      return s;
    };
    auto schema = ArgumentsSchema(request.tools[f.tool_index]["function"]);
    if (!schema.ok()) return fail(schema.status());
    auto args = grammar::JsonSchemaToGrammar(*schema, {.strict = true});
    if (!args.ok()) return fail(args.status());
    const std::string rule = "args-" + std::to_string(i);
    auto root = grammar::ImportRules(*args, rule + "-", &grammar);
    if (!root.ok()) return fail(root.status());
    grammar.SetBody(static_cast<uint32_t>(grammar.Find(rule)), grammar::Expr::Ref(*root));
  }
  return grammar.ToGbnf();
}

}  // namespace jisu::server
