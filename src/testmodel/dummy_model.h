// Random-weight models at real shapes, so speed can be measured without a model hub
// (`jisu make-model`). The GGUF written holds every tensor a Llama/Qwen2 file of that config
// has, a synthetic byte-level BPE tokenizer (testmodel/synthetic_vocab.h), and the metadata jisu
// and llama.cpp read, so `jisu generate/bench/perplexity` and llama.cpp load it unmodified.
//
// Values: matrices and biases are approximately normal with std 0.02 (a sum of four uniforms),
// norm weights 1 + N(0, 0.02); that keeps activations of the residual stream of order one
// through any number of layers. Every row is drawn from its own counter-based generator keyed
// by (seed, tensor name, row), so the file is the same for a seed whatever the thread count.
//
// Types: matrices in the requested type (F32, F16, BF16, Q8_0, Q4_0, Q4_1); norms, biases and
// rope factors in F32. As in `jisu convert`, 4-bit files keep the output head at Q8_0 (the
// separate output.weight, or token_embd.weight when the embeddings are tied).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "jisu/status.h"
#include "model/model.h"
#include "model/model_config.h"

namespace jisu {

struct DummyModelOptions {
  ModelConfig config;  // validated by WriteDummyGguf
  DType type = DType::kF16;
  uint64_t seed = 0;
  int threads = 0;   // 0: all hardware threads
  std::string name;  // general.name
};

// Streams the file to `path` (one tensor in memory at a time, rows generated in parallel).
Status WriteDummyGguf(const std::string& path, const DummyModelOptions& options);

// Bytes the file's tensors will take (for messages before a long write).
uint64_t DummyGgufTensorBytes(const DummyModelOptions& options);

// True for a model argument of the form "dummy:SHAPE[:TYPE[:SEED]]".
bool IsDummyModelSpec(const std::string& spec);

// Loads "dummy:SHAPE[:TYPE[:SEED]]" (SHAPE from NamedModelShapeNames(), TYPE default q4_0, SEED
// default 0) without a model file on disk: the GGUF is written to shared memory (/dev/shm, or
// $JISU_DUMMY_DIR), memory-mapped by the normal loader and unlinked at once, so the weights
// exist once, in RAM, and vanish with the model. Fails clearly when memory is short.
Result<std::unique_ptr<Model>> LoadDummyModel(const std::string& spec,
                                              const LoadOptions& options = {});

// Fills `out[0..n)` with the generator's values for one row (exposed for tests).
void DummyRandomRow(uint64_t seed, uint64_t tensor_key, int64_t row, float mean, float std,
                    float* out, int64_t n);

}  // namespace jisu
