// The batched, paged forward pass against a straightforward double-precision reference that
// recomputes the whole causal prefix with plain loops (no KV cache, no batching): any error in
// slot mapping, block tables, chunking, GQA grouping, bias, rope style or sliding window shows
// up as a logit difference. With an F16 cache the reference rounds its keys and values to
// half as the cache does, so the comparison stays tight.
#include "backend/cpu/transformer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "convert/hf_to_gguf.h"
#include "core/half.h"
#include "ops/quant.h"

namespace jisu {
namespace {

struct RandomModel {
  ModelConfig config;
  // float32 storage for every matrix, [rows, cols]
  std::vector<std::vector<float>> storage;
  ModelWeights weights;
};

WeightMatrix Matrix(std::vector<float>& data, int64_t rows, int64_t cols) {
  WeightMatrix m;
  m.dtype = DType::kF32;
  m.data = data.data();
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = cols * sizeof(float);
  return m;
}

std::unique_ptr<RandomModel> MakeRandomModel(const ModelConfig& c, uint32_t seed) {
  auto m = std::make_unique<RandomModel>();
  m->config = c;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](int64_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng) * scale;
    return v;
  };
  m->storage.reserve(4 + 10 * c.num_layers);
  auto matrix = [&](int64_t rows, int64_t cols) {
    m->storage.push_back(random(rows * cols, 1.0f / std::sqrt(static_cast<float>(cols))));
    return Matrix(m->storage.back(), rows, cols);
  };
  auto norm = [&](int64_t n) {
    std::vector<float> v = random(n, 0.1f);
    for (float& x : v) x += 1.0f;
    return v;
  };
  ModelWeights& w = m->weights;
  m->storage.push_back(random(c.vocab_size * c.hidden_size, 1.0f));
  w.embedding = Matrix(m->storage.back(), c.vocab_size, c.hidden_size);
  w.final_norm = norm(c.hidden_size);
  w.lm_head = matrix(c.vocab_size, c.hidden_size);
  w.layers.resize(c.num_layers);
  for (LayerWeights& l : w.layers) {
    l.attn_norm = norm(c.hidden_size);
    l.ffn_norm = norm(c.hidden_size);
    l.wq = matrix(c.q_dim(), c.hidden_size);
    l.wk = matrix(c.kv_dim(), c.hidden_size);
    l.wv = matrix(c.kv_dim(), c.hidden_size);
    l.wo = matrix(c.hidden_size, c.q_dim());
    l.w_gate = matrix(c.intermediate_size, c.hidden_size);
    l.w_up = matrix(c.intermediate_size, c.hidden_size);
    l.w_down = matrix(c.hidden_size, c.intermediate_size);
    if (c.attention_bias) {
      l.bq = random(c.q_dim(), 0.5f);
      l.bk = random(c.kv_dim(), 0.5f);
      l.bv = random(c.kv_dim(), 0.5f);
    }
  }
  return m;
}

const float* F(const WeightMatrix& m) { return static_cast<const float*>(m.data); }

// y = W x (+ b) in double.
std::vector<double> Linear(const WeightMatrix& w, const std::vector<double>& x,
                           const std::vector<float>* bias = nullptr) {
  std::vector<double> y(w.rows);
  for (int64_t o = 0; o < w.rows; ++o) {
    double s = bias && !bias->empty() ? (*bias)[o] : 0.0;
    for (int64_t i = 0; i < w.cols; ++i) s += double(F(w)[o * w.cols + i]) * x[i];
    y[o] = s;
  }
  return y;
}

std::vector<double> Norm(const std::vector<double>& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}

// Half-split rotation (Hugging Face layout) of every head.
void Rope(std::vector<double>& x, int64_t head_dim, int64_t pos, const std::vector<float>& inv) {
  const int64_t half = head_dim / 2;
  for (size_t h = 0; h < x.size() / head_dim; ++h) {
    double* v = x.data() + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const double a = double(pos) * inv[i];
      const double x0 = v[i], x1 = v[i + half];
      v[i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[i + half] = x1 * std::cos(a) + x0 * std::sin(a);
    }
  }
}

// Logits of every position of `ids`, recomputing attention over the full prefix. kv_type F16:
// keys (after rope) and values are rounded to half before attention reads them.
std::vector<std::vector<double>> Reference(const RandomModel& m, const std::vector<int32_t>& ids,
                                           KvType kv_type = KvType::kF32) {
  const ModelConfig& c = m.config;
  const ModelWeights& w = m.weights;
  const std::vector<float> inv = RopeInverseFrequencies(c);
  const int64_t n = ids.size(), hd = c.head_dim, group = c.num_heads / c.num_kv_heads;
  std::vector<std::vector<double>> x(n);
  for (int64_t t = 0; t < n; ++t) {
    x[t].assign(F(w.embedding) + ids[t] * c.hidden_size,
                F(w.embedding) + (ids[t] + 1) * c.hidden_size);
  }
  for (const LayerWeights& l : w.layers) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      const auto xn = Norm(x[t], l.attn_norm, c.rms_norm_eps);
      q[t] = Linear(l.wq, xn, &l.bq);
      k[t] = Linear(l.wk, xn, &l.bk);
      v[t] = Linear(l.wv, xn, &l.bv);
      Rope(q[t], hd, t, inv);
      Rope(k[t], hd, t, inv);
      if (kv_type == KvType::kF16) {
        for (double& e : k[t]) e = F16ToF32(F32ToF16(static_cast<float>(e)));
        for (double& e : v[t]) e = F16ToF32(F32ToF16(static_cast<float>(e)));
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> att(c.q_dim(), 0.0);
      for (int64_t h = 0; h < c.num_heads; ++h) {
        const int64_t kvh = h / group;
        int64_t first = 0;
        if (c.sliding_window) first = std::max<int64_t>(0, t - *c.sliding_window + 1);
        std::vector<double> s;
        for (int64_t p = first; p <= t; ++p) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[p][kvh * hd + i];
          s.push_back(d / std::sqrt(double(hd)));
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double z = 0;
        for (double& e : s) z += (e = std::exp(e - mx));
        for (int64_t p = first; p <= t; ++p) {
          for (int64_t i = 0; i < hd; ++i) {
            att[h * hd + i] += s[p - first] / z * v[p][kvh * hd + i];
          }
        }
      }
      const auto o = Linear(l.wo, att);
      for (int64_t i = 0; i < c.hidden_size; ++i) x[t][i] += o[i];
      const auto xn = Norm(x[t], l.ffn_norm, c.rms_norm_eps);
      auto g = Linear(l.w_gate, xn);
      const auto u = Linear(l.w_up, xn);
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const auto d = Linear(l.w_down, g);
      for (int64_t i = 0; i < c.hidden_size; ++i) x[t][i] += d[i];
    }
  }
  std::vector<std::vector<double>> logits(n);
  for (int64_t t = 0; t < n; ++t)
    logits[t] = Linear(w.lm_head, Norm(x[t], w.final_norm, c.rms_norm_eps));
  return logits;
}

ModelConfig SmallConfig() {
  ModelConfig c;
  c.vocab_size = 61;
  c.hidden_size = 64;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.max_position = 256;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  return c;
}

double MaxRelDiff(const float* got, const std::vector<double>& want) {
  double max_abs = 0, scale = 1e-6;
  for (size_t i = 0; i < want.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return max_abs / scale;
}

std::vector<int32_t> RandomIds(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % vocab);
  return ids;
}

// One sequence's state for the chunked runs below.
struct Seq {
  std::vector<int32_t> ids;
  std::vector<int32_t> blocks;
  int64_t done = 0;
  std::vector<std::vector<double>> want;
};

// Runs the sequences together: every step each unfinished sequence contributes its next
// chunk (sizes cycling through `chunks`), and all logits rows are checked.
void RunInterleaved(const RandomModel& m, std::vector<Seq>& seqs,
                    const std::vector<int64_t>& chunks, int threads, int64_t block_size,
                    int64_t num_blocks, KvType kv_type = KvType::kF32) {
  ThreadPool pool(threads);
  Transformer tf(m.config, m.weights, pool);
  KvCacheShape shape{m.config.num_layers, m.config.num_kv_heads,
                     m.config.head_dim,   block_size,
                     num_blocks,          kv_type};
  auto cache = KvCache::Create(shape);
  ASSERT_TRUE(cache.ok());
  for (int step = 0;; ++step) {
    ForwardBatch batch;
    std::vector<int32_t> tokens;
    std::vector<int64_t> rows;
    std::vector<std::pair<size_t, int64_t>> row_owner;  // (seq, position)
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq& q = seqs[s];
      if (q.done == static_cast<int64_t>(q.ids.size())) continue;
      const int64_t n = std::min<int64_t>(chunks[(step + s) % chunks.size()],
                                          static_cast<int64_t>(q.ids.size()) - q.done);
      for (int64_t i = 0; i < n; ++i) {
        rows.push_back(static_cast<int64_t>(tokens.size()));
        row_owner.push_back({s, q.done + i});
        tokens.push_back(q.ids[q.done + i]);
      }
      batch.sequences.push_back(BatchSequence{n, q.done, q.blocks});
      q.done += n;
    }
    if (tokens.empty()) break;
    batch.token_ids = tokens;
    batch.logits_rows = rows;
    std::vector<float> logits(rows.size() * m.config.vocab_size);
    Status st = tf.Forward(batch, **cache, logits.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto [s, pos] = row_owner[r];
      EXPECT_LT(MaxRelDiff(logits.data() + r * m.config.vocab_size, seqs[s].want[pos]), 2e-5)
          << "seq " << s << " pos " << pos << " step " << step << " kv " << KvTypeName(kv_type);
    }
  }
}

class TransformerTest : public ::testing::TestWithParam<int> {};

TEST_P(TransformerTest, MixedBatchesOfChunksMatchReference) {
  const int variant = GetParam();
  ModelConfig c = SmallConfig();
  if (variant == 1) c.attention_bias = true;
  if (variant == 2) c.sliding_window = 5;
  if (variant == 3) {
    c.rope_scaling.type = RopeScaling::Type::kLlama3;
    c.rope_scaling.factor = 4;
    c.rope_scaling.original_max_position = 32;
    c.rope_theta = 500000.0f;
  }
  if (variant == 4) c.num_kv_heads = 1;  // multi-query
  ASSERT_TRUE(c.Validate().ok());
  auto m = MakeRandomModel(c, 42 + variant);
  const int64_t block_size = 4;
  std::vector<Seq> seqs(3);
  const int64_t lengths[3] = {23, 9, 17};
  // Blocks handed out in a scrambled order, as a pool would after churn.
  std::vector<int32_t> pool_order(40);
  std::iota(pool_order.begin(), pool_order.end(), 0);
  std::shuffle(pool_order.begin(), pool_order.end(), std::mt19937(7));
  size_t next = 0;
  for (int s = 0; s < 3; ++s) {
    seqs[s].ids = RandomIds(lengths[s], c.vocab_size, 100 + s);
    for (int64_t b = 0; b < BlocksForTokens(lengths[s], block_size); ++b) {
      seqs[s].blocks.push_back(pool_order[next++]);
    }
    seqs[s].want = Reference(*m, seqs[s].ids);
  }
  for (int threads : {1, 3}) {
    auto copy = seqs;
    RunInterleaved(*m, copy, {5, 1, 3, 1, 1, 7}, threads, block_size, 40);
  }
  auto whole = seqs;
  RunInterleaved(*m, whole, {64}, 2, block_size, 40);  // each prompt in one piece

  // F16 cache against the reference that rounds K/V the same way, at the same 2e-5. The
  // kernel's keys come from float math and the reference's from double, so an element at a
  // half rounding boundary can land one half-ulp apart; measured worst 4.7e-6 over the
  // variants. Against the unrounded reference the F16 cache is off by 3e-4 to 4e-4, so a
  // truncating conversion, a misplaced row or an F32 read fails here.
  for (Seq& s : seqs) s.want = Reference(*m, s.ids, KvType::kF16);
  for (int threads : {1, 2}) {
    auto copy = seqs;
    RunInterleaved(*m, copy, {5, 1, 3, 1, 1, 7}, threads, block_size, 40, KvType::kF16);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, TransformerTest, ::testing::Range(0, 5));

// Every matrix of `m` as Q8_0 in `q` (bytes in `store`), and `m` itself rewritten to those
// weights dequantized: the reference of what the float path computes on the Q8_0 model.
void QuantizeMatrices(RandomModel* m, ModelWeights* q, std::vector<std::vector<uint8_t>>* store) {
  *q = m->weights;
  auto matrices = [](ModelWeights& w) {
    std::vector<WeightMatrix*> out{&w.lm_head};
    for (LayerWeights& l : w.layers) {
      for (WeightMatrix* x : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
        out.push_back(x);
      }
    }
    return out;
  };
  const std::vector<WeightMatrix*> exact = matrices(m->weights), quant = matrices(*q);
  store->reserve(exact.size());
  for (size_t i = 0; i < exact.size(); ++i) {
    WeightMatrix& e = *exact[i];
    const size_t row_bytes = RowBytes(DType::kQ8_0, static_cast<uint64_t>(e.cols)).value();
    store->emplace_back(row_bytes * e.rows);
    auto* f = const_cast<float*>(F(e));
    for (int64_t r = 0; r < e.rows; ++r) {
      uint8_t* row = store->back().data() + r * row_bytes;
      QuantizeRow(DType::kQ8_0, f + r * e.cols, row, e.cols);
      DequantizeRow(DType::kQ8_0, row, f + r * e.cols, e.cols);
    }
    *quant[i] = WeightMatrix{DType::kQ8_0, store->back().data(), e.rows, e.cols, row_bytes};
  }
}

// The step's matmul path reaches every product: on Q8_0 weights the float path computes the
// dequantized model's logits to float precision, the int8 path (and auto's, for a step of many
// tokens) carries the activation rounding, far outside that.
TEST(TransformerTest, StepMatmulPathReachesEveryProduct) {
  auto m = MakeRandomModel(SmallConfig(), 9);
  ModelWeights q;
  std::vector<std::vector<uint8_t>> store;
  QuantizeMatrices(m.get(), &q, &store);
  const std::vector<int32_t> ids = RandomIds(12, m->config.vocab_size, 3);
  const std::vector<std::vector<double>> want = Reference(*m, ids);
  ThreadPool pool(2);
  Transformer tf(m->config, q, pool);
  std::vector<int32_t> blocks{0, 1, 2};
  std::vector<int64_t> rows(ids.size());
  std::iota(rows.begin(), rows.end(), 0);
  for (MatmulPath path : {MatmulPath::kFloat, MatmulPath::kInt8, MatmulPath::kAuto}) {
    auto cache = KvCache::Create(
        {m->config.num_layers, m->config.num_kv_heads, m->config.head_dim, 4, 3, KvType::kF32});
    ASSERT_TRUE(cache.ok());
    ForwardBatch batch{ids, {BatchSequence{static_cast<int64_t>(ids.size()), 0, blocks}}, rows};
    batch.options.matmul = path;
    std::vector<float> logits(ids.size() * m->config.vocab_size);
    ASSERT_TRUE(tf.Forward(batch, **cache, logits.data()).ok());
    double worst = 0;
    for (size_t r = 0; r < ids.size(); ++r) {
      worst = std::max(worst, MaxRelDiff(logits.data() + r * m->config.vocab_size, want[r]));
    }
    if (path == MatmulPath::kFloat) {
      EXPECT_LT(worst, 2e-5) << "float path";
    } else {
      EXPECT_GT(worst, 1e-4) << MatmulPathName(path) << " path: no activation rounding seen";
    }
  }
}

TEST(TransformerTest, InterleavedRopeOnPermutedWeightsEqualsHalfSplit) {
  // GGUF llama files store Q/K rows permuted and rotate adjacent pairs; the logits must be
  // those of the original Hugging Face layout.
  ModelConfig c = SmallConfig();
  c.attention_bias = true;
  auto m = MakeRandomModel(c, 5);
  const std::vector<int32_t> ids = RandomIds(12, c.vocab_size, 3);
  const auto want = Reference(*m, ids);

  auto permuted = MakeRandomModel(c, 5);  // same seed: same weights
  permuted->config.rope_style = RopeStyle::kInterleaved;
  const auto q_order = InterleavedRopeRowOrder(c.q_dim(), c.head_dim);
  const auto k_order = InterleavedRopeRowOrder(c.kv_dim(), c.head_dim);
  for (LayerWeights& l : permuted->weights.layers) {
    auto permute = [&](WeightMatrix& w, std::vector<float>& bias,
                       const std::vector<int64_t>& order) {
      std::vector<float> src(F(w), F(w) + w.rows * w.cols);
      float* dst = const_cast<float*>(F(w));
      for (int64_t r = 0; r < w.rows; ++r) {
        std::copy_n(src.data() + order[r] * w.cols, w.cols, dst + r * w.cols);
      }
      std::vector<float> b = bias;
      for (int64_t r = 0; r < w.rows; ++r) bias[r] = b[order[r]];
    };
    permute(l.wq, l.bq, q_order);
    permute(l.wk, l.bk, k_order);
  }
  std::vector<Seq> seqs(1);
  seqs[0].ids = ids;
  seqs[0].blocks = {0, 1, 2, 3};
  seqs[0].want = want;
  RunInterleaved(*permuted, seqs, {4, 1}, 2, 4, 4);
}

TEST(TransformerTest, RejectsBadBatches) {
  auto m = MakeRandomModel(SmallConfig(), 1);
  ThreadPool pool(1);
  Transformer tf(m->config, m->weights, pool);
  auto cache = KvCache::Create({2, 2, 16, 4, 4});
  ASSERT_TRUE(cache.ok());
  std::vector<float> logits(m->config.vocab_size);
  std::vector<int32_t> blocks = {0, 1};
  const int64_t row = 0;
  {
    std::vector<int32_t> ids = {61};  // outside the vocabulary
    ForwardBatch b{ids, {BatchSequence{1, 0, blocks}}, std::span(&row, 1)};
    EXPECT_FALSE(tf.Forward(b, **cache, logits.data()).ok());
  }
  {
    std::vector<int32_t> ids = {1};  // position 8 needs a third block
    ForwardBatch b{ids, {BatchSequence{1, 8, blocks}}, std::span(&row, 1)};
    EXPECT_FALSE(tf.Forward(b, **cache, logits.data()).ok());
  }
  {
    std::vector<int32_t> ids = {1};
    std::vector<int32_t> bad = {9};  // block id beyond the cache
    ForwardBatch b{ids, {BatchSequence{1, 0, bad}}, std::span(&row, 1)};
    EXPECT_FALSE(tf.Forward(b, **cache, logits.data()).ok());
  }
  {
    std::vector<int32_t> ids = {1};
    ForwardBatch b{ids, {BatchSequence{1, 300, blocks}}, std::span(&row, 1)};  // > context
    EXPECT_EQ(tf.Forward(b, **cache, logits.data()).code(), Status::Code::kOutOfRange);
  }
}

}  // namespace
}  // namespace jisu
