#!/usr/bin/env python3
"""Builds tests/data/convert_spm/: a Llama-2-style Hugging Face folder with a SentencePiece
tokenizer, and what the references make of it, for the `jisu convert` SentencePiece tests.

- tokenizer.model: a SentencePiece BPE model trained here with Llama 2's trainer settings
  (byte fallback, split digits, whitespace-only pieces, no extra-whitespace removal, identity
  normalization), on tests/data/golden/heldout.txt;
- model.safetensors/config.json: a tiny random LlamaForCausalLM (transformers), vocabulary 704
  (the model's 4 extra rows test the [PADi] padding); tokenizer.json from transformers;
- expected.json: "gguf": the tokenizer metadata llama.cpp's convert_hf_to_gguf.py writes for
  the folder (the reference converter), and "ids": SentencePiece's own ids for test texts.

Needs sentencepiece, torch, transformers, numpy, and a llama.cpp tree (its convert script and
gguf-py), e.g. the one vendored by the llama-cpp-python 0.3.36 sdist:
    python tools/make_spm_convert_fixture.py LLAMA_CPP_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "convert_spm")
TEXTS = [
    "Hello world",
    " Hello  world",
    "  leading spaces and trailing  ",
    " ",
    "   ",
    "",
    "numbers 12345 and 3.14159",
    "line one\nline two\n\n\tTabbed",
    "½ and ¼ of a cake",
    "你好，世界",
    "emoji 🙂👍🏽 bytes",
    "The quick brown fox jumps over the lazy dog.",
    # Not "<s>" inside text: SentencePiece's encode keeps it as text, GGUF readers (llama.cpp
    # with parse_special, jisu) and transformers split it out as the control token.
    "a <b> c [PAD] d",
    "café naïve façade",
    "a" * 40 + " " * 17 + "b",
]


def main(llama_cpp):
    import sentencepiece as spm
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    hf = os.path.join(OUT, "hf")
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(hf)
    with tempfile.TemporaryDirectory() as tmp:
        text = open(os.path.join(ROOT, "tests", "data", "golden", "heldout.txt")).read()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(text.split("\n")), model_prefix=os.path.join(tmp, "m"),
            vocab_size=700, model_type="bpe", split_digits=True, byte_fallback=True,
            allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
            normalization_rule_name="identity", character_coverage=0.9995, unk_id=0, bos_id=1,
            eos_id=2, pad_id=-1, minloglevel=2)
        shutil.copy(os.path.join(tmp, "m.model"), os.path.join(hf, "tokenizer.model"))
    # Llama 2's tokenizer_config.json fields (LlamaTokenizer, BOS added, no EOS).
    config = {
        "add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": None, "clean_up_tokenization_spaces": False,
        "legacy": True, "model_max_length": 4096, "tokenizer_class": "LlamaTokenizer",
        "added_tokens_decoder": {
            str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                     "single_word": False, "special": True}
            for i, t in enumerate(["<unk>", "<s>", "</s>"])},
    }
    with open(os.path.join(hf, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tok = AutoTokenizer.from_pretrained(hf)
    tok.backend_tokenizer.save(os.path.join(hf, "tokenizer.json"))
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=704, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                      bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    LlamaForCausalLM(cfg).save_pretrained(hf, safe_serialization=True)

    sp = spm.SentencePieceProcessor(model_file=os.path.join(hf, "tokenizer.model"))
    ids = [{"text": t, "ids": sp.encode(t)} for t in TEXTS]

    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref.gguf")
        env = dict(os.environ, PYTHONPATH=os.path.join(llama_cpp, "gguf-py"))
        subprocess.run([sys.executable, os.path.join(llama_cpp, "convert_hf_to_gguf.py"), hf,
                        "--outfile", ref, "--outtype", "f32"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
        import gguf
        r = gguf.GGUFReader(ref)
        meta = {k: f.contents() for k, f in r.fields.items() if k.startswith("tokenizer.")}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"gguf": meta, "ids": ids}, f, ensure_ascii=False, indent=1)
    print(f"wrote {OUT}: {len(meta['tokenizer.ggml.tokens'])} tokens, {len(ids)} texts")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
