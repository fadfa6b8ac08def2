#include "cli/commands.h"

#include <cstdio>

namespace jisu::cli {
namespace {
int g_exit_code = 0;
}  // namespace

int ExitCode() { return g_exit_code; }
void SetExitCode(int code) { g_exit_code = code; }

void ReportStatus(const Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "jisu: error: %s\n", status.message().c_str());
  g_exit_code = 1;
}

void RegisterCommands(CLI::App& app) {
  RegisterGenerate(app);
  RegisterTokenize(app);
  RegisterChatTemplate(app);
  RegisterPerplexity(app);
  RegisterConvert(app);
  RegisterBench(app);
  RegisterBenchEngine(app);
  RegisterLoadgen(app);
  RegisterServe(app);
  RegisterMakeModel(app);
  RegisterBenchMatMul(app);
  RegisterBenchGpu(app);
  RegisterBenchGrammar(app);
  RegisterInfo(app);
}

}  // namespace jisu::cli
