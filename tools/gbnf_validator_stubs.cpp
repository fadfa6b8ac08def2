// llama.cpp's GBNF validator (tests/test-gbnf-validator.cpp) built from llama-grammar.cpp and
// unicode.cpp alone, as the reference the tool-call grammars are checked against
// (src/server/tools/tool_call_grammar_test.cc). These are the few symbols of libllama and ggml
// that llama-grammar.cpp refers to outside parsing and matching; with no vocabulary they are
// never reached. scripts/setup.sh builds it from the sources tools/fetch_vocab_tests.py takes
// out of the llama-cpp-python sdist.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "llama-impl.h"
#include "llama-vocab.h"

extern "C" void ggml_abort(const char* file, int line, const char* fmt, ...) {
  std::fprintf(stderr, "%s:%d: ", file, line);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::abort();
}

void llama_log_internal(ggml_log_level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

bool llama_vocab::is_eog(llama_token) const { std::abort(); }
const std::string& llama_vocab::token_to_piece(llama_token) const { std::abort(); }
int32_t llama_vocab::tokenize(const char*, int32_t, llama_token*, int32_t, bool, bool) const {
  std::abort();
}
