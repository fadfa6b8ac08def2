#include "chat/chat_template.h"

#include <utility>
#include <vector>

#include "chat/jinja_template.h"
#include "chat/jinja_value.h"

namespace jisu {
namespace {

using jinja::Value;

class JinjaChatTemplate : public ChatTemplate {
 public:
  explicit JinjaChatTemplate(std::unique_ptr<jinja::Template> t) : t_(std::move(t)) {}

  Result<std::string> Render(const ChatTemplateInputs& inputs) const override {
    if (!inputs.messages.is_array()) {
      return Status::InvalidArgument("chat template: messages must be a JSON array");
    }
    if (!inputs.extra.is_object()) {
      return Status::InvalidArgument("chat template: extra variables must be a JSON object");
    }
    jinja::List messages;
    for (size_t i = 0; i < inputs.messages.size(); ++i) {
      const auto& m = inputs.messages[i];
      if (!m.is_object()) {
        return Status::InvalidArgument("chat template: message " + std::to_string(i) +
                                       " is not a JSON object");
      }
      JISU_ASSIGN_OR_RETURN(Value msg, NormalizeMessage(m));
      messages.push_back(std::move(msg));
    }
    std::vector<std::pair<std::string, Value>> vars;
    vars.emplace_back("bos_token", Value::String(inputs.bos_token));
    vars.emplace_back("eos_token", Value::String(inputs.eos_token));
    vars.emplace_back("messages", Value::MakeList(std::move(messages)));
    vars.emplace_back("tools", Value::None());
    vars.emplace_back("documents", Value::None());
    vars.emplace_back("add_generation_prompt", Value::Bool(inputs.add_generation_prompt));
    for (auto it = inputs.extra.begin(); it != inputs.extra.end(); ++it) {
      JISU_ASSIGN_OR_RETURN(Value v, jinja::FromJson(it.value()));
      bool replaced = false;
      for (auto& kv : vars) {
        if (kv.first == it.key()) {
          kv.second = v;
          replaced = true;
        }
      }
      if (!replaced) vars.emplace_back(it.key(), std::move(v));
    }
    return t_->Render(vars, jinja::Limits(), inputs.now);
  }

 private:
  // transformers drops keys whose value is None, then copies the reasoning under the names
  // templates read: {"thinking": r, **message, "reasoning_content": r}.
  static Result<Value> NormalizeMessage(const nlohmann::ordered_json& m) {
    JISU_ASSIGN_OR_RETURN(Value full, jinja::FromJson(m));
    jinja::Dict d;
    for (auto& kv : full.dict().items) {
      if (!kv.second.is_none()) d.items.push_back(kv);
    }
    const Value* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
      const Value* v = d.FindStr(key);
      if (v != nullptr) {
        reasoning = v;
        break;
      }
    }
    if (reasoning == nullptr) return Value::MakeDict(std::move(d));
    Value r = *reasoning;
    jinja::Dict out;
    out.items.emplace_back(Value::String("thinking"), r);
    for (auto& kv : d.items) out.Set(kv.first, kv.second);
    out.Set(Value::String("reasoning_content"), r);
    return Value::MakeDict(std::move(out));
  }

  std::unique_ptr<jinja::Template> t_;
};

}  // namespace

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::Parse(const std::string& source) {
  JISU_ASSIGN_OR_RETURN(auto t, jinja::Template::Parse(source));
  return std::unique_ptr<ChatTemplate>(new JinjaChatTemplate(std::move(t)));
}

}  // namespace jisu
