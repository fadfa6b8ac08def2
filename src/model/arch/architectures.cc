#include "model/arch/architectures.h"

#include <cassert>

namespace jisu {

extern const ArchitectureDef kLlamaArch, kMistralArch, kQwen2Arch, kQwen3Arch, kGemma3Arch,
    kSmolLM3Arch;

namespace {
const ArchitectureDef* const kAll[] = {&kLlamaArch, &kMistralArch, &kQwen2Arch,
                                       &kQwen3Arch, &kGemma3Arch,  &kSmolLM3Arch};
}  // namespace

std::span<const ArchitectureDef* const> AllArchitectures() { return kAll; }

const ArchitectureDef& FindArchitecture(Architecture arch) {
  for (const ArchitectureDef* a : kAll) {
    if (a->arch == arch) return *a;
  }
  assert(false && "architecture without a definition");
  return kLlamaArch;
}

const ArchitectureDef* FindHfArchitecture(const std::string& hf_class,
                                          const std::string& model_type) {
  for (const ArchitectureDef* a : kAll) {
    if (hf_class == a->hf_class) return a;
  }
  if (!hf_class.empty()) return nullptr;
  for (const ArchitectureDef* a : kAll) {
    if (model_type == a->hf_model_type) return a;
  }
  return nullptr;
}

const ArchitectureDef* FindGgufArchitecture(const std::string& name) {
  for (const ArchitectureDef* a : kAll) {
    if (name == a->name) return a;
  }
  return nullptr;
}

std::string SupportedArchitectureNames(bool hf) {
  std::string out;
  for (const ArchitectureDef* a : kAll) {
    if (!out.empty()) out += ", ";
    out += hf ? a->hf_class : a->name;
  }
  return out;
}

}  // namespace jisu
