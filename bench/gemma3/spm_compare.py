#!/usr/bin/env python3
"""jisu's tokenizer against SentencePiece itself, for a GGUF whose tokenizer is SentencePiece
(tokenizer.ggml.model "llama": Llama 2, Gemma, ...). Rebuilds a SentencePiece BPE model from the
file's pieces, scores and token types (user-defined pieces re-escaped: GGUF writers store their
spaces literally, SentencePiece matches them on the escaped text) and compares the ids of each
text with `jisu tokenize --no-bos`.

  python bench/gemma3/spm_compare.py JISU GGUF TEXT...
Needs gguf, sentencepiece and protobuf (not the project's .venv).
"""
import json
import subprocess
import sys

import gguf
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb


def build_model(path):
  fields = gguf.GGUFReader(path).fields

  def arr(name):
    f = fields[name]
    return [f.parts[i] for i in f.data]

  toks = [bytes(x).decode("utf-8", errors="replace") for x in arr("tokenizer.ggml.tokens")]
  scores = [float(x[0]) for x in arr("tokenizer.ggml.scores")]
  types = [int(x[0]) for x in arr("tokenizer.ggml.token_type")]
  m = pb.ModelProto()
  m.trainer_spec.model_type = pb.TrainerSpec.BPE
  m.trainer_spec.vocab_size = len(toks)
  m.trainer_spec.byte_fallback = True
  m.normalizer_spec.name = "identity"
  m.normalizer_spec.add_dummy_prefix = False
  m.normalizer_spec.remove_extra_whitespaces = False
  m.normalizer_spec.escape_whitespaces = True
  kind = {1: pb.ModelProto.SentencePiece.NORMAL, 2: pb.ModelProto.SentencePiece.UNKNOWN,
          3: pb.ModelProto.SentencePiece.CONTROL, 4: pb.ModelProto.SentencePiece.USER_DEFINED,
          5: pb.ModelProto.SentencePiece.UNUSED, 6: pb.ModelProto.SentencePiece.BYTE}
  seen = set()
  for t, s, ty in zip(toks, scores, types):
    piece = t.replace(" ", "\u2581") if ty == 4 else t
    if piece in seen:  # SentencePiece needs unique pieces; a duplicate can never be produced
      piece += "<dup%d>" % len(seen)
    seen.add(piece)
    p = m.pieces.add()
    p.piece, p.score, p.type = piece, s, kind.get(ty, pb.ModelProto.SentencePiece.NORMAL)
  return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def main():
  jisu, model, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
  sp = build_model(model)
  differ = 0
  for path in texts:
    with open(path, encoding="utf-8", newline="") as fh:
      text = fh.read()
    want = sp.encode(text)
    out = subprocess.run([jisu, "tokenize", "-m", model, "-p", text, "--json", "--no-bos"],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    got = got["ids"] if isinstance(got, dict) else got
    first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b),
                 None if len(want) == len(got) else min(len(want), len(got)))
    differ += first is not None
    print(f"{path}: {len(want)} tokens, " +
          ("equal" if first is None else f"first difference at {first}"))
  print(f"{len(texts) - differ} of {len(texts)} texts equal")


if __name__ == "__main__":
  main()
