// POST /tokenize and /detokenize, as vLLM's and llama.cpp's servers offer them, so clients can
// count and inspect tokens without generating. Both request spellings are read:
//   /tokenize   {"prompt": text, "add_special_tokens": true}              (vLLM, completions)
//               {"messages": [...], "add_generation_prompt": true,
//                "add_special_tokens": false}                              (vLLM, chat)
//               {"content": text, "add_special": false, "with_pieces": false} (llama.cpp)
//               -> {"count", "max_model_len", "tokens": [ids]} plus "token_strs" when
//                  "return_token_strs" is true; with "with_pieces", tokens are
//                  [{"id", "piece"}] as llama.cpp returns them.
//   /detokenize {"tokens": [ids]} -> {"prompt": text, "content": text} (vLLM's and llama.cpp's
//               names for the same text; special tokens kept, as both do).
// Chat prompts are rendered by the served chat template exactly as /v1/chat/completions does.
#pragma once

#include <httplib.h>

#include "server/generation_handler.h"

namespace jisu::server {

void HandleTokenize(const httplib::Request& req, httplib::Response& res,
                    const GenerationContext& ctx);
void HandleDetokenize(const httplib::Request& req, httplib::Response& res,
                      const GenerationContext& ctx);

}  // namespace jisu::server
