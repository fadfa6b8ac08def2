#include "server/tools/tool_fields.h"

#include <utility>
#include <vector>

#include "format/json_util.h"

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;

ApiError Bad(const std::string& param, const std::string& what) {
  return ApiError::BadRequest("'" + param + "' " + what, param);
}

bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > kMaxToolNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

const char* kNameRule = "must be 1 to 64 letters, digits, underscores or dashes";

// A string member `key` of `obj` (required, or optional when absent/null is fine).
std::optional<ApiError> StringMember(const Json& obj, const char* key, const std::string& param,
                                     bool required, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Bad(param + "." + key, "is required");
    return std::nullopt;
  }
  if (!it->is_string()) return Bad(param + "." + key, "must be a string");
  *out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> ParseTool(const Json& tool, const std::string& param, std::string* name) {
  if (!tool.is_object()) return Bad(param, "must be an object");
  std::string type;
  if (auto e = StringMember(tool, "type", param, true, &type)) return e;
  if (type != "function") return Bad(param + ".type", "must be \"function\"");
  auto fn = tool.find("function");
  if (fn == tool.end() || fn->is_null()) return Bad(param + ".function", "is required");
  if (!fn->is_object()) return Bad(param + ".function", "must be an object");
  const std::string fparam = param + ".function";
  if (auto e = StringMember(*fn, "name", fparam, true, name)) return e;
  if (!ValidFunctionName(*name)) return Bad(fparam + ".name", kNameRule);
  std::string description;
  if (auto e = StringMember(*fn, "description", fparam, false, &description)) return e;
  if (auto p = fn->find("parameters"); p != fn->end() && !p->is_null() && !p->is_object()) {
    return Bad(fparam + ".parameters", "must be a JSON Schema object");
  }
  if (auto s = fn->find("strict"); s != fn->end() && !s->is_null() && !s->is_boolean()) {
    return Bad(fparam + ".strict", "must be a boolean");
  }
  return std::nullopt;
}

std::optional<ApiError> ParseToolChoice(const Json& v, ToolRequest* out) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") {
      out->choice = ToolChoice::kNone;
    } else if (s == "auto") {
      out->choice = ToolChoice::kAuto;
    } else if (s == "required") {
      out->choice = ToolChoice::kRequired;
    } else {
      return Bad("tool_choice",
                 "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                 "\"function\": {\"name\": ...}}");
    }
    return std::nullopt;
  }
  if (!v.is_object()) return Bad("tool_choice", "must be a string or an object");
  std::string type;
  if (auto e = StringMember(v, "type", "tool_choice", true, &type)) return e;
  if (type != "function") return Bad("tool_choice.type", "must be \"function\"");
  auto fn = v.find("function");
  if (fn == v.end() || !fn->is_object()) {
    return Bad("tool_choice.function", "must be an object with a 'name'");
  }
  if (auto e = StringMember(*fn, "name", "tool_choice.function", true, &out->function_name)) {
    return e;
  }
  out->choice = ToolChoice::kFunction;
  return std::nullopt;
}

// An assistant message's tool call, for the template: `arguments` JSON text of an object
// becomes that object (other text stays a string, as the client sent it).
std::optional<ApiError> ParseCall(const Json& call, const std::string& param, Json* out) {
  if (!call.is_object()) return Bad(param, "must be an object");
  std::string id, type, name;
  if (auto e = StringMember(call, "id", param, true, &id)) return e;
  if (auto e = StringMember(call, "type", param, true, &type)) return e;
  if (type != "function") return Bad(param + ".type", "must be \"function\"");
  auto fn = call.find("function");
  if (fn == call.end() || !fn->is_object()) return Bad(param + ".function", "must be an object");
  const std::string fparam = param + ".function";
  if (auto e = StringMember(*fn, "name", fparam, true, &name)) return e;
  auto args = fn->find("arguments");
  if (args == fn->end() || args->is_null()) return Bad(fparam + ".arguments", "is required");
  *out = call;
  if (args->is_string()) {
    // Templates walk the arguments as a mapping (tojson, items); text that is not a JSON
    // object, or nests deeper than the bound, stays the string the client sent.
    auto parsed = ParseUntrustedJson<Json>(args->get<std::string>(), "arguments");
    if (parsed.ok() && parsed->is_object()) {
      (*out)["function"]["arguments"] = std::move(*parsed);
    }
  } else if (!args->is_object()) {
    return Bad(fparam + ".arguments", "must be a string of JSON");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseToolRequest(const Json& body, ToolRequest* out) {
  *out = ToolRequest{};
  auto tools = body.find("tools");
  const bool has_tools = tools != body.end() && !tools->is_null();
  std::vector<std::string> names;
  if (has_tools) {
    if (!tools->is_array() || tools->empty()) return Bad("tools", "must be a non-empty array");
    if (tools->size() > kMaxTools) {
      return Bad("tools", "has more than " + std::to_string(kMaxTools) + " tools");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      std::string name;
      if (auto e = ParseTool((*tools)[i], "tools[" + std::to_string(i) + "]", &name)) return e;
      names.push_back(std::move(name));
    }
    out->tools = *tools;
    out->choice = ToolChoice::kAuto;
  }
  if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null()) {
    if (auto e = ParseToolChoice(*tc, out)) return e;
    if (!has_tools && out->choice != ToolChoice::kNone) {
      return Bad("tool_choice", "is only allowed when 'tools' are given");
    }
    if (out->choice == ToolChoice::kFunction) {
      bool found = false;
      for (const std::string& n : names) found = found || n == out->function_name;
      if (!found) {
        return Bad("tool_choice.function.name",
                   "names no function of 'tools' (\"" + out->function_name + "\")");
      }
    }
  }
  if (auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean()) return Bad("parallel_tool_calls", "must be a boolean");
    out->parallel = p->get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> ParseMessageToolFields(const Json& msg, size_t index, Json* copy) {
  const std::string param = "messages[" + std::to_string(index) + "]";
  const std::string role = msg["role"].get<std::string>();
  auto calls = msg.find("tool_calls");
  if (calls != msg.end() && !calls->is_null()) {
    if (role != "assistant")
      return Bad(param + ".tool_calls", "is only allowed on assistant messages");
    if (!calls->is_array()) return Bad(param + ".tool_calls", "must be an array");
    Json out = Json::array();
    for (size_t i = 0; i < calls->size(); ++i) {
      Json c;
      if (auto e = ParseCall((*calls)[i], param + ".tool_calls[" + std::to_string(i) + "]", &c)) {
        return e;
      }
      out.push_back(std::move(c));
    }
    (*copy)["tool_calls"] = std::move(out);
  }
  if (role == "tool") {
    auto id = msg.find("tool_call_id");
    if (id == msg.end() || id->is_null()) return Bad(param + ".tool_call_id", "is required");
    if (!id->is_string()) return Bad(param + ".tool_call_id", "must be a string");
  }
  return std::nullopt;
}

std::optional<ApiError> CheckToolsServable(const ToolRequest& tools, ToolCallFormat format) {
  if (!tools.parses_calls()) return std::nullopt;
  if (format == ToolCallFormat::kNone) {
    return Bad("tools",
               "cannot be used with this model: its chat template writes tool calls in no "
               "format this server parses (hermes, llama3_json, mistral); start the server with "
               "--tool-call-parser, or send tool_choice \"none\"");
  }
  return std::nullopt;
}

}  // namespace jisu::server
