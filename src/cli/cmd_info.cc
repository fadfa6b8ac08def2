#include <cstdio>
#include <thread>

#include "cli/commands.h"

namespace jisu::cli {

void RegisterInfo(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print build and system information");
  cmd->callback([] {
    std::printf("jisu 0.1.0\n");
    std::printf("hardware threads: %u\n", std::thread::hardware_concurrency());
  });
}

}  // namespace jisu::cli
