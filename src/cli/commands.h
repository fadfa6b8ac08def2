// Registration of the CLI subcommands. Each subcommand's callback stores its exit code in the
// shared slot; errors are printed as one line "jisu: error: <message>" on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "jisu/status.h"

namespace jisu::cli {

void RegisterCommands(CLI::App& app);
int ExitCode();
void SetExitCode(int code);

// Prints the status as one line on stderr and records exit code 1 when it is an error.
void ReportStatus(const Status& status);

void RegisterInfo(CLI::App& app);
void RegisterGenerate(CLI::App& app);
void RegisterTokenize(CLI::App& app);
void RegisterChatTemplate(CLI::App& app);
void RegisterPerplexity(CLI::App& app);
void RegisterBench(CLI::App& app);
void RegisterConvert(CLI::App& app);
void RegisterBenchEngine(CLI::App& app);
void RegisterLoadgen(CLI::App& app);
void RegisterServe(CLI::App& app);
void RegisterMakeModel(CLI::App& app);
void RegisterBenchMatMul(CLI::App& app);
void RegisterBenchGpu(CLI::App& app);
void RegisterBenchGrammar(CLI::App& app);

}  // namespace jisu::cli
