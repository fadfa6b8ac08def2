// jisu command line: one subcommand per job (generate, tokenize, chat-template, perplexity,
// convert, info, bench). Each subcommand lives in its own cmd_*.cc and registers here.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"jisu: LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "jisu 0.1.0");
  jisu::cli::RegisterCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return jisu::cli::ExitCode();
}
