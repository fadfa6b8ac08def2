#include "backend/cuda/cuda_program.h"

namespace jisu::cuda {

const char* StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kNormIn:
      return "norm";
    case StepKind::kQkvProject:
      return "qkv";
    case StepKind::kQkvBias:
      return "qkv_bias";
    case StepKind::kHeadNorm:
      return "head_norm";
    case StepKind::kRopeKv:
      return "rope_kv";
    case StepKind::kAttention:
      return "attention";
    case StepKind::kOutProject:
      return "o";
    case StepKind::kGateUpProject:
      return "gate_up";
    case StepKind::kGatedAct:
      return "gated_act";
    case StepKind::kDownProject:
      return "down";
    case StepKind::kQkvRopeGemv:
      return "gemv_qkv_rope";
    case StepKind::kGateActGemv:
      return "gemv_gate_up";
    case StepKind::kOutGemv:
      return "gemv_o";
    case StepKind::kDownGemv:
      return "gemv_down";
  }
  return "?";
}

namespace {

bool IsLinear(const Op& op, Buf src, std::initializer_list<LinearTarget> targets) {
  return op.code == OpCode::kLinear && op.src == src &&
         op.targets == std::vector<LinearTarget>(targets);
}

class Matcher {
 public:
  explicit Matcher(const std::vector<Op>& ops) : ops_(ops) {}

  bool done() const { return i_ >= ops_.size(); }
  size_t index() const { return i_; }
  const Op* Peek(size_t ahead = 0) const {
    return i_ + ahead < ops_.size() ? &ops_[i_ + ahead] : nullptr;
  }
  void Skip(size_t n) { i_ += n; }

  // A product into kOut followed by the residual add, with or without a norm between them.
  bool MatchResidual(WeightId& post_norm) {
    const Op* a = Peek(0);
    const Op* b = Peek(1);
    if (a && a->code == OpCode::kAdd && a->src == Buf::kOut && a->dst == Buf::kX) {
      post_norm = WeightId::kCount;
      Skip(1);
      return true;
    }
    if (a && b && a->code == OpCode::kNorm && a->src == Buf::kOut && a->dst == Buf::kOut &&
        b->code == OpCode::kAdd && b->src == Buf::kOut && b->dst == Buf::kX) {
      post_norm = a->weight;
      Skip(2);
      return true;
    }
    return false;
  }

 private:
  const std::vector<Op>& ops_;
  size_t i_ = 0;
};

}  // namespace

Result<LayerPlan> PlanLayer(const ModelProgram& program, const std::string& arch_name) {
  LayerPlan plan;
  Matcher m(program.layer_ops);
  bool bias_pending = false;
  while (!m.done()) {
    const size_t at = m.index();
    const Op& op = *m.Peek();
    m.Skip(1);
    bool ok = false;
    switch (op.code) {
      case OpCode::kNorm:
        // Into the product input; a norm of kOut is matched with its product below.
        ok = op.src == Buf::kX && op.dst == Buf::kH;
        if (ok) plan.ops.push_back(StepOp{.kind = StepKind::kNormIn, .norm = op.weight});
        break;
      case OpCode::kLinear: {
        WeightId post = WeightId::kCount;
        if (IsLinear(
                op, Buf::kH,
                {{WeightId::kWq, Buf::kQ}, {WeightId::kWk, Buf::kK}, {WeightId::kWv, Buf::kV}})) {
          plan.ops.push_back(StepOp{.kind = StepKind::kQkvProject});
          ok = true;
        } else if (IsLinear(op, Buf::kH,
                            {{WeightId::kWGate, Buf::kGate}, {WeightId::kWUp, Buf::kUp}})) {
          plan.ops.push_back(StepOp{.kind = StepKind::kGateUpProject});
          ok = true;
        } else if (IsLinear(op, Buf::kAttn, {{WeightId::kWo, Buf::kOut}}) &&
                   m.MatchResidual(post)) {
          plan.ops.push_back(StepOp{.kind = StepKind::kOutProject, .norm = post});
          ok = true;
        } else if (IsLinear(op, Buf::kGate, {{WeightId::kWDown, Buf::kOut}}) &&
                   m.MatchResidual(post)) {
          plan.ops.push_back(StepOp{.kind = StepKind::kDownProject, .norm = post});
          ok = true;
        }
        break;
      }
      case OpCode::kAddBias: {
        // The three biases together: one kernel adds them over the fused qkv rows.
        const Op* k = m.Peek(0);
        const Op* v = m.Peek(1);
        ok = op.dst == Buf::kQ && op.weight == WeightId::kBq && k && k->code == OpCode::kAddBias &&
             k->dst == Buf::kK && k->weight == WeightId::kBk && v && v->code == OpCode::kAddBias &&
             v->dst == Buf::kV && v->weight == WeightId::kBv && !bias_pending;
        if (ok) {
          m.Skip(2);
          bias_pending = true;
          plan.qkv_bias = true;
        }
        break;
      }
      case OpCode::kHeadNorm: {
        const Op* k = m.Peek(0);
        ok = op.dst == Buf::kQ && op.weight == WeightId::kQNorm && k &&
             k->code == OpCode::kHeadNorm && k->dst == Buf::kK && k->weight == WeightId::kKNorm;
        if (ok) {
          m.Skip(1);
          // The bias goes in before the norms: its own kernel then.
          if (bias_pending) plan.ops.push_back(StepOp{.kind = StepKind::kQkvBias});
          bias_pending = false;
          plan.head_norm = true;
          plan.ops.push_back(StepOp{.kind = StepKind::kHeadNorm});
        }
        break;
      }
      case OpCode::kRope: {
        // Rope, the q scale and the K/V write are one kernel: the attention must follow.
        const Op* attn = m.Peek(0);
        ok = attn && attn->code == OpCode::kAttention && attn->src == Buf::kQ &&
             attn->dst == Buf::kAttn;
        if (ok) {
          m.Skip(1);
          plan.ops.push_back(StepOp{.kind = StepKind::kRopeKv, .fuse_bias = bias_pending});
          plan.ops.push_back(StepOp{.kind = StepKind::kAttention});
          bias_pending = false;
        }
        break;
      }
      case OpCode::kGatedAct:
        ok = op.src == Buf::kUp && op.dst == Buf::kGate;
        if (ok) plan.ops.push_back(StepOp{.kind = StepKind::kGatedAct, .act = op.act});
        break;
      case OpCode::kAdd:
      case OpCode::kAttention:
        break;  // only as parts of the sequences above
    }
    if (!ok) {
      return Status::Unsupported("cuda backend: " + arch_name + "'s layer op " +
                                 std::to_string(at) + " (" + OpName(op.code) +
                                 ") has no CUDA kernel sequence yet");
    }
  }
  if (bias_pending) {
    return Status::Unsupported("cuda backend: " + arch_name +
                               ": a q/k/v bias without the rope that applies it");
  }
  plan.gemv_ops = FuseForGemv(plan.ops);
  return plan;
}

std::vector<StepOp> FuseForGemv(const std::vector<StepOp>& ops) {
  // A product and the elementwise step after it become one GEMV (a consumer of xn); residual
  // products without a post norm become accumulate GEMVs (producers of the next norm's input).
  std::vector<StepOp> items;
  for (size_t i = 0; i < ops.size(); ++i) {
    const StepOp& op = ops[i];
    const StepOp* next = i + 1 < ops.size() ? &ops[i + 1] : nullptr;
    if (op.kind == StepKind::kQkvProject && next && next->kind == StepKind::kRopeKv) {
      items.push_back(StepOp{.kind = StepKind::kQkvRopeGemv, .fuse_bias = next->fuse_bias});
      ++i;
    } else if (op.kind == StepKind::kGateUpProject && next && next->kind == StepKind::kGatedAct &&
               next->act == Activation::kSilu) {
      items.push_back(StepOp{.kind = StepKind::kGateActGemv});
      ++i;
    } else if (op.kind == StepKind::kOutProject && op.norm == WeightId::kCount) {
      items.push_back(StepOp{.kind = StepKind::kOutGemv});
    } else if (op.kind == StepKind::kDownProject && op.norm == WeightId::kCount) {
      items.push_back(StepOp{.kind = StepKind::kDownGemv});
    } else {
      items.push_back(op);
    }
  }
  // A kNormIn before a consumer moves into the residual GEMV before it (the layer's last op,
  // for its first), which writes that norm's input; without such a producer it stays a kernel
  // of its own and the consumer reads its output.
  auto consumer = [](StepKind k) {
    return k == StepKind::kQkvRopeGemv || k == StepKind::kGateActGemv;
  };
  auto producer = [](StepKind k) { return k == StepKind::kOutGemv || k == StepKind::kDownGemv; };
  const size_t m = items.size();
  std::vector<StepOp> out;
  for (size_t i = 0; i < m; ++i) {
    const bool norm_before_consumer =
        items[i].kind == StepKind::kNormIn && i + 1 < m && consumer(items[i + 1].kind);
    if (!norm_before_consumer) {
      out.push_back(items[i]);
      continue;
    }
    items[i + 1].norm = items[i].norm;
    // The layer's last op is copied out after this change to it, the others before.
    StepOp& prev = i == 0 ? items[m - 1] : out.back();
    if (!producer(prev.kind)) {
      out.push_back(items[i]);
      continue;
    }
    prev.next_norm = items[i].norm;
    prev.next_layer = i == 0;
    items[i + 1].fused_norm = true;
  }
  return out;
}

}  // namespace jisu::cuda
