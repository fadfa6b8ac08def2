#!/usr/bin/env python3
"""Fixtures for every pre-tokenizer type that GGUF files name (tokenizer.ggml.pre) for the
families people run, written to tests/data/tokenizer/pretok/<family>/.

Usage: /work/refenv/bin/python tools/make_pretok_fixtures.py [family ...]
       (needs tokenizers, transformers, gguf, sentencepiece, protobuf, numpy)

For each family a small vocabulary (2500 tokens) is trained with the `tokenizers` library in
the family's real tokenizer.json configuration: its normalizer, pre-tokenizer, decoder, BPE
options and added tokens, as the model's tokenizer.json on the Hugging Face hub writes them.
Those configurations were checked against llama.cpp's tokenizer test files
(models/ggml-vocab-<pre>.gguf.inp/.out, whose ids come from transformers' AutoTokenizer on the
real repositories): a `tokenizers` tokenizer built from each real vocabulary with the
configuration below reproduces every one of those ids (see PRE_TOKENIZERS).

Each family directory holds:
  tokenizer.json   the trained tokenizer in the family's configuration;
  vocab.gguf       the same vocabulary as a vocabulary-only GGUF, written the way llama.cpp's
                   converter writes it (tokenizer.ggml.model/pre/tokens/token_type/merges/
                   scores, special ids), so that jisu's GGUF loader is checked on it;
  tokenizer_config.json  the class and named tokens of the family's repository;
  expected.json    "json": ids and decoded text from tokenizers.Tokenizer on tokenizer.json,
                   "gguf": ids and decoded text that the family's tokenizer.json pipeline gives
                   on the GGUF's vocabulary (for byte-level families the two are checked equal
                   here; SentencePiece families derive their merges from the GGUF's scores, as
                   transformers does, so theirs may differ);
                   "transformers": AutoTokenizer on tokenizer.json + tokenizer_config.json
                   (transformers 5 drops StarCoder's/SmolLM's Digits under GPT2Tokenizer and
                   gives Llama's Metaspace under LlamaTokenizer; jisu follows it there).

SentencePiece families (llama-spm, phi-3) are trained with the sentencepiece library in Llama's
settings; their GGUF reference is the legacy Llama tokenizer.json pipeline (Prepend "▁",
Replace " " -> "▁": " " gives "▁▁", as SentencePiece itself does), and the script counts how many
cases SentencePieceProcessor.encode agrees with. Gemma's GGUF reference follows transformers'
Gemma builder (spaces respelled, merges by position) except that runs of "▁" are matched whole,
as SentencePiece does (the builder leaves them to the merges; the texts where that differs are
listed in expected.json).
"""

import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer", "pretok")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# deepseek-llm's cased-letter class as its tokenizer.json spells it (llama.cpp's copy was
# NFC-normalized: U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126 and U+212A became other letters).
DEEPSEEK_LLM_LETTERS = (
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
    "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
    "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
    "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
    "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
    "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
    "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
    "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
    "\U000118a0-\U000118df\U0001e900-\U0001e943]+")
DEEPSEEK_PUNCT = "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+"
DEEPSEEK_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
DEEPSEEK_V3_SPLITS = [
    "\\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]


def bl(use_regex=True):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
            "use_regex": use_regex}


def split(regex, behavior="Isolated"):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": False}


def seq(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


DIGITS = {"type": "Digits", "individual_digits": True}
NFC = {"type": "NFC"}
BL_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
              "use_regex": True}

# The real tokenizer.json pipeline of each byte-level family: (normalizer, pre_tokenizer,
# ignore_merges). Checked against llama.cpp's ggml-vocab-<pre>.gguf.out (HF outputs on the real
# vocabularies): gpt-2, mpt, falcon, starcoder, refact, command-r, deepseek-llm,
# deepseek-coder, llama-bpe and qwen2 reproduce every case. deepseek-v3's is llama.cpp's
# transcription of its tokenizer.json (no real vocabulary was at hand to check it).
PRE_TOKENIZERS = {
    "gpt-2": (None, bl(), False),
    "llama-bpe": (None, seq(split(LLAMA3_REGEX), bl(False)), True),
    "qwen2": (NFC, seq(split(QWEN2_REGEX), bl(False)), False),
    "falcon": (None, seq({"type": "Punctuation", "behavior": "Contiguous"}, bl(),
                         {"type": "Digits", "individual_digits": False},
                         split("[0-9][0-9][0-9]")), False),
    "mpt": (NFC, bl(), False),
    "starcoder": (None, seq(DIGITS, bl()), False),
    "refact": (None, seq(DIGITS, bl()), False),
    "smollm": (None, seq(DIGITS, bl()), False),
    "command-r": (NFC, seq(DIGITS, bl()), False),
    "deepseek-llm": ({"type": "Sequence", "normalizers": []},
                     seq(split("[\r\n]"), split(DEEPSEEK_LLM_LETTERS), split(DEEPSEEK_PUNCT),
                         split("\\s+$"), split(DEEPSEEK_CJK), DIGITS, bl(False)), False),
    "deepseek-coder": ({"type": "Sequence", "normalizers": []},
                       seq(split("[\r\n]"), split("\\s?\\p{L}+"), split("\\s?\\p{P}+"),
                           split(DEEPSEEK_CJK), DIGITS, bl(False)), False),
    "deepseek-v3": (None, seq(*[split(r) for r in DEEPSEEK_V3_SPLITS], bl(False)), False),
}

# family -> GGUF architecture, special (control) tokens, user-defined (non-special added)
# tokens as the real tokenizer.json lists them.
BYTE_LEVEL = {
    "gpt-2": ("gpt2", ["<|endoftext|>"], []),
    "llama-bpe": ("llama", ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                            "<|end_header_id|>", "<|eot_id|>"], []),
    "qwen2": ("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
              ["<tool_call>", "</tool_call>"]),
    "falcon": ("falcon", [">>TITLE<<", ">>ABSTRACT<<", ">>COMMENT<<", "<|endoftext|>"], []),
    # GPT-NeoX-20B's runs of 2..24 spaces are added tokens: they win over the BPE for any run.
    "mpt": ("mpt", ["<|endoftext|>", "<|padding|>"],
            [" " * n for n in (24, 16, 12, 8, 7, 6, 5, 4, 3, 2)]),
    "starcoder": ("starcoder2", ["<|endoftext|>", "<fim_prefix>", "<fim_middle>",
                                 "<fim_suffix>", "<file_sep>"], []),
    "refact": ("refact", ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>"], []),
    "smollm": ("llama", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], []),
    "command-r": ("command-r", ["<PAD>", "<UNK>", "<BOS_TOKEN>", "<EOS_TOKEN>",
                                "<|END_OF_TURN_TOKEN|>"],
                  ["<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>"]),
    # DeepSeek lists the byte-alphabet letters its BPE lacks as added tokens: in text they
    # match whole, as any added token does.
    "deepseek-llm": ("llama", ["<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                               "<\uff5cend\u2581of\u2581sentence\uff5c>"], ["\u00f6", "\u00f7"]),
    "deepseek-coder": ("llama", ["<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                                 "<\uff5cend\u2581of\u2581sentence\uff5c>"],
                       ["\u00f5", "<\uff5cfim\u2581hole\uff5c>", "<|User|>", "<|EOT|>"]),
    "deepseek-v3": ("deepseek2", ["<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                                  "<\uff5cend\u2581of\u2581sentence\uff5c>"], ["<think>"]),
}

SPM = ("llama-spm", "phi-3", "gemma")

BOS_DS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
EOS_DS = "<\uff5cend\u2581of\u2581sentence\uff5c>"
# tokenizer_config.json as the family's repository has it (the class and the named tokens):
# transformers 5 rebuilds the pipeline of some classes from the class itself.
CONFIGS = {
    "gpt-2": {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"},
    "llama-bpe": {"tokenizer_class": "PreTrainedTokenizerFast",
                  "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "qwen2": {"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None},
    "falcon": {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"},
    "mpt": {"tokenizer_class": "GPTNeoXTokenizer", "bos_token": "<|endoftext|>",
            "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"},
    "starcoder": {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>",
                  "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"},
    "refact": {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>",
               "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"},
    "smollm": {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|im_start|>",
               "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>"},
    "command-r": {"tokenizer_class": "CohereTokenizer", "bos_token": "<BOS_TOKEN>",
                  "eos_token": "<|END_OF_TURN_TOKEN|>", "pad_token": "<PAD>",
                  "unk_token": "<UNK>"},
    "deepseek-llm": {"tokenizer_class": "LlamaTokenizerFast", "bos_token": BOS_DS,
                     "eos_token": EOS_DS, "unk_token": None},
    "deepseek-coder": {"tokenizer_class": "LlamaTokenizerFast", "bos_token": BOS_DS,
                       "eos_token": EOS_DS, "unk_token": None},
    "deepseek-v3": {"tokenizer_class": "LlamaTokenizerFast", "bos_token": BOS_DS,
                    "eos_token": EOS_DS, "unk_token": None},
    "llama-spm": {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                  "unk_token": "<unk>", "legacy": False},
    "phi-3": {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "<|end|>",
              "unk_token": "<unk>", "legacy": False},
    "gemma": {"tokenizer_class": "GemmaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "pad_token": "<unk>", "mask_token": None},
}


def transformers_cases(family, d, text_list):
    from transformers import AutoTokenizer
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(CONFIGS[family], f, ensure_ascii=False, indent=1)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(d, name), "rb") as src, open(os.path.join(tmp, name), "wb") as dst:
                dst.write(src.read())
        hf = AutoTokenizer.from_pretrained(tmp)
        return type(hf).__name__, cases_transformers(hf, text_list)

# ----------------------------------------------------------------------------- texts


def corpus():
    from make_tokenizer_fixtures import corpus as base_corpus
    lines = base_corpus()
    with open(os.path.join(ROOT, "tests", "data", "golden", "heldout.txt"), encoding="utf-8") as f:
        lines.extend(f.read().splitlines(keepends=True))
    lines.extend([
        "Prices: 1 12 123 1234 12345 123456 1234567 in 2024, 3.14 and 1,000,000.\n",
        "    indented code\n        deeper\n\t\ttabs\n",
        "Köln ÷ 2 ½ ¼ ² ³ µ Ⅻ ١٢٣ 一二三 百 ①\n",
    ] * 20)
    return lines


def texts(specials):
    from make_tokenizer_fixtures import texts as base_texts
    t = base_texts(specials)
    t += [
        " ", "  ", "   ", "\t", "\n\n", "\n\n\n", "\t\n", " \t \n", "    Hello\n    Hello",
        "Hello  world   spaced    out", "x" + " " * 30 + "y", " leading", "trailing ",
        "ied 4 ½ months", "Äpfel", "3", "33", "333", "3333", "33333", "333333", "3333333",
        "w048 7tuijk dsdfhu", "abc123def 4five6 7.5e-3 0x1F 1,234,567.89",
        "½ ¼ ¾ ² ³ ¹ ⁴ ₂ Ⅻ ⅷ 〇 ١٢٣ ۴۵۶ १२३ １２３ 𝟙𝟚 ①②",
        "Köln ÷ õ ø é", "µ Ω Å K ﬁ", "ÀÁÂ àáâ ÿ",
        "line1\r\nline2\r\n\r\nline3\rline4\n\r",
        "a\u0085b\u2028c\u2029d\u000bf\u000cg\u180eh \u180e i", "zero\u200bwidth\u200cjoin\u200dner\ufeffbom",
        "\u00a0lead nbsp\u00a0\u00a0x\u202fy\u2009z",
        "e\u0301 \u0915\u094d\u0937 \u0627\u064e \u05e9\u05c1 a\u0300\u0301\u0302",
        "!!!!!! ??? ... --- *** ((())) ``` ''' \"\"\" <=> ^^ ~~ || $$ ++",
        "«quoted» ¿qué? ¡sí! — – … ‘single’ “double” 、。！？ （）「」",
        "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～",
        " this is 🦙.cpp", "🚀 (normal) 😶\u200d🌫\ufe0f (multiple emojis) ✅ 1\ufe0f\u20e3",
        "нещо на Български", "កាន់តែពិសេសអាចខលចេញ", "Cửa Việt", " discards",
        "I'd've THEY'RE it's It'S you'LL '' 's",
        "for (int i = 0; i < 10; ++i) {\n\tsum += a[i] * 2;\n}\n",
        "    def f(self):\n        return {'k': [1, 2, 3]}  # ok\n",
        "\n =", "' era", " (", "x\n\n\ny\n \n z", "\t\tindent\t", "end\n",
    ]
    return t


# ----------------------------------------------------------------------------- training


def bpe_json(normalizer, pre_tokenizer, decoder, ignore_merges=False, byte_fallback=False,
             unk=None):
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": None,
            "decoder": decoder,
            "model": {"type": "BPE", "dropout": None, "unk_token": unk,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": unk is not None, "byte_fallback": byte_fallback,
                      "ignore_merges": ignore_merges, "vocab": {}, "merges": []}}


def added(id_, content, special, normalized=None):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": (not special) if normalized is None else normalized,
            "special": special}


def train_byte_level(family, vocab_size=2500):
    from tokenizers import Tokenizer, pre_tokenizers, trainers
    normalizer, pre, ignore = PRE_TOKENIZERS[family]
    _, specials, user = BYTE_LEVEL[family]
    tok = Tokenizer.from_str(json.dumps(bpe_json(normalizer, pre, BL_DECODER, ignore)))
    # DeepSeek's BPE lacks the letters of bytes that UTF-8 never uses; its added tokens have them.
    alphabet = [c for c in pre_tokenizers.ByteLevel.alphabet() if c not in user]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=alphabet,
                                  show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    j = json.loads(tok.to_str())
    next_id = max(j["model"]["vocab"].values()) + 1
    for content in user:
        j["added_tokens"].append(added(next_id, content, special=False))
        next_id += 1
    j["model"]["merges"] = [m if isinstance(m, str) else " ".join(m)
                            for m in j["model"]["merges"]]
    return j


def train_sentencepiece(family, vocab_size=2500):
    """A SentencePiece BPE in Llama's settings; returns the ModelProto bytes."""
    import sentencepiece as spm
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "corpus.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line if line.endswith("\n") else line + "\n"
                            for line in corpus() if line.strip()))
        user = []
        if family == "gemma":
            user = ["\n", "\n\n", "\n\n\n", "\u2581\u2581", "\u2581\u2581\u2581",
                    "\u2581\u2581\u2581\u2581", "<start_of_turn>", "<end_of_turn>"]
        spm.SentencePieceTrainer.train(
            input=path, model_prefix=os.path.join(d, "m"), model_type="bpe",
            vocab_size=vocab_size, byte_fallback=True, split_digits=True,
            add_dummy_prefix=family != "gemma", remove_extra_whitespaces=False,
            normalization_rule_name="identity", allow_whitespace_only_pieces=True,
            character_coverage=0.9995, user_defined_symbols=user,
            unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2,
            num_threads=2)
        with open(os.path.join(d, "m.model"), "rb") as f:
            return f.read()


def spm_pieces(proto_bytes):
    from sentencepiece import sentencepiece_model_pb2 as pb
    m = pb.ModelProto()
    m.ParseFromString(proto_bytes)
    return [(p.piece, p.score, p.type) for p in m.pieces]


def spm_json(family, pieces):
    """The family's tokenizer.json for a SentencePiece vocabulary: Llama-2's and Phi-3's
    legacy pipeline, or Gemma's."""
    from transformers.tokenization_utils_base import generate_merges
    vocab = {p: i for i, (p, _, _) in enumerate(pieces)}
    # Merges as the hub's converter writes them: by score, only between normal pieces.
    normal = {p: s for p, s, t in pieces if t == 1}
    merges = [" ".join(m) for m in generate_merges(
        {p: i for p, i in vocab.items() if p in normal}, normal)]
    if family == "gemma":
        normalizer = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
        pre = {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
               "invert": False}
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]}
    else:
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        pre = None
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    j = bpe_json(normalizer, pre, decoder, byte_fallback=True, unk="<unk>")
    j["model"]["vocab"] = vocab
    j["model"]["merges"] = merges
    for i, (p, _, t) in enumerate(pieces):
        if t == 2 or t == 3:
            j["added_tokens"].append(added(i, p, special=True))
        elif t == 4 and family == "gemma":
            # Normalized, so that "▁" runs match whole after the Replace, as SentencePiece
            # matches user-defined pieces.
            j["added_tokens"].append(added(i, p, special=p.startswith("<"), normalized=True))
    if family == "phi-3":
        next_id = len(pieces)
        for content in ("<|endoftext|>", "<|assistant|>", "<|user|>", "<|end|>"):
            j["added_tokens"].append(added(next_id, content, special=True, normalized=False))
            next_id += 1
    j["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    return j


# ----------------------------------------------------------------------------- GGUF


def write_gguf(path, arch, f):
    import gguf
    w = gguf.GGUFWriter(path, arch)
    w.add_tokenizer_model(f["model"])
    if f.get("pre"):
        w.add_tokenizer_pre(f["pre"])
    w.add_token_list(f["tokens"])
    w.add_token_types(f["types"])
    if f.get("scores") is not None:
        w.add_token_scores(f["scores"])
    if f.get("merges"):
        w.add_token_merges(f["merges"])
    for key, fn in (("bos", w.add_bos_token_id), ("eos", w.add_eos_token_id),
                    ("unk", w.add_unk_token_id), ("pad", w.add_pad_token_id)):
        if f.get(key) is not None:
            fn(f[key])
    for key, fn in (("add_bos", w.add_add_bos_token), ("add_eos", w.add_add_eos_token),
                    ("add_space_prefix", w.add_add_space_prefix)):
        if f.get(key) is not None:
            fn(f[key])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_fields_byte_level(family, j):
    """llama.cpp's converter: tokens by id, added tokens by their content, CONTROL for special
    and USER_DEFINED for the other added tokens."""
    _, specials, _ = BYTE_LEVEL[family]
    ids = dict(j["model"]["vocab"])
    kinds = {}
    for t in j["added_tokens"]:
        ids[t["content"]] = t["id"]
        kinds[t["id"]] = 3 if t["special"] else 4
    n = max(ids.values()) + 1
    tokens = [None] * n
    for content, i in ids.items():
        tokens[i] = content
    assert all(t is not None for t in tokens)
    f = {"model": "gpt2", "pre": family, "tokens": tokens,
         "types": [kinds.get(i, 1) for i in range(n)], "merges": j["model"]["merges"]}
    f["bos"] = ids[specials[0]]
    f["eos"] = ids[specials[-1] if family != "command-r" else "<|END_OF_TURN_TOKEN|>"]
    return f


def gguf_fields_spm(family, pieces):
    tokens = [p for p, _, _ in pieces]
    scores = [float(s) for _, s, _ in pieces]
    types = [t for _, _, t in pieces]
    if family == "gemma":
        # llama.cpp writes user-defined "▁" runs as spaces.
        tokens = [t.replace("\u2581", " ") if ty == 4 else t for t, ty in zip(tokens, types)]
    if family == "phi-3":
        for content in ("<|endoftext|>", "<|assistant|>", "<|user|>", "<|end|>"):
            tokens.append(content)
            scores.append(0.0)
            types.append(3)
    f = {"model": "llama", "pre": "default", "tokens": tokens, "types": types,
         "scores": scores, "bos": 1, "eos": 2, "unk": 0, "add_bos": True, "add_eos": False}
    if family == "gemma":
        f["add_space_prefix"] = False
    return f


def tokenizer_from_gguf_fields(family, f):
    """The family's tokenizer.json pipeline over the GGUF's vocabulary: what jisu's FromGguf
    must reproduce."""
    from tokenizers import Tokenizer
    from transformers.tokenization_utils_base import generate_merges
    tokens, types = f["tokens"], f["types"]
    if f["model"] == "gpt2":
        from transformers.convert_slow_tokenizer import bytes_to_unicode
        spelling = bytes_to_unicode()
        alphabet = set(spelling.values())
        normalizer, pre, ignore = PRE_TOKENIZERS.get(family, (None, bl(), False))
        j = bpe_json(normalizer, pre, BL_DECODER, ignore)
        vocab = {}
        for i, t in enumerate(tokens):
            if types[i] == 1 and not set(t) <= alphabet:
                t = "".join(spelling[b] for b in t.encode("utf-8"))
            vocab.setdefault(t, i)
        j["model"]["vocab"] = vocab
        j["model"]["merges"] = f["merges"]
    elif f.get("add_space_prefix", True):
        legacy = spm_json("llama-spm", [(t, 0.0, 1) for t in tokens[:3]])
        j = bpe_json(legacy["normalizer"], None, legacy["decoder"], byte_fallback=True,
                     unk=tokens[f["unk"]] if f.get("unk") is not None else None)
        vocab = {t: i for i, t in enumerate(tokens)}
        j["model"]["vocab"] = vocab
        j["model"]["merges"] = [list(m) for m in generate_merges(
            vocab, dict(zip(tokens, f["scores"])))]
    else:
        # Gemma: spaces -> "▁", no prefix; runs of spaces written as spaces by llama.cpp are
        # "▁" runs, matched whole as SentencePiece matches user-defined pieces; merges ranked
        # by position (transformers' Gemma builder).
        gemma = spm_json("gemma", [(t, 0.0, 1) for t in tokens[:3]])
        j = bpe_json(gemma["normalizer"], None, gemma["decoder"], byte_fallback=True,
                     unk=tokens[f["unk"]] if f.get("unk") is not None else None)
        tokens = ["\u2581" * len(t) if t and not t.strip(" ") else t for t in tokens]
        vocab = {t: i for i, t in enumerate(tokens)}
        j["model"]["vocab"] = vocab
        j["model"]["merges"] = [list(m) for m in generate_merges(
            vocab, {t: -i for i, t in enumerate(tokens)})]
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty in (2, 3):
            j["added_tokens"].append(added(i, t, special=True, normalized=False))
        elif ty == 4:
            respelled = t != f["tokens"][i]
            j["added_tokens"].append(added(i, t, special=False,
                                           normalized=respelled or f["model"] == "gpt2"))
    return Tokenizer.from_str(json.dumps(j))


# ----------------------------------------------------------------------------- expectations


def cases_tokenizers(tok, text_list):
    out = []
    for text in text_list:
        ids = tok.encode(text, add_special_tokens=False).ids
        out.append({"text": text, "ids": ids,
                    "ids_special": tok.encode(text, add_special_tokens=True).ids,
                    "decoded": tok.decode(ids, skip_special_tokens=False)})
    return out


def cases_transformers(tok, text_list):
    out = []
    for text in text_list:
        ids = tok.encode(text, add_special_tokens=False)
        out.append({"text": text, "ids": ids,
                    "ids_special": tok.encode(text, add_special_tokens=True),
                    "decoded": tok.decode(ids, skip_special_tokens=False)})
    return out


def make_byte_level(family):
    from tokenizers import Tokenizer
    arch, specials, user = BYTE_LEVEL[family]
    j = train_byte_level(family)
    d = os.path.join(OUT, family)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
    f = gguf_fields_byte_level(family, j)
    write_gguf(os.path.join(d, "vocab.gguf"), arch, f)
    text_list = texts(specials + user)
    raw = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    json_cases = cases_tokenizers(raw, text_list)
    gguf_cases = cases_tokenizers(tokenizer_from_gguf_fields(family, f), text_list)
    for a, b in zip(json_cases, gguf_cases):
        assert a["ids"] == b["ids"], (family, a["text"], a["ids"], b["ids"])
    cls, tf_cases = transformers_cases(family, d, text_list)
    return d, {"family": family, "json": json_cases, "gguf": gguf_cases,
               "transformers_class": cls, "transformers": tf_cases}


def make_spm(family):
    import sentencepiece as spm
    from tokenizers import Tokenizer
    proto = train_sentencepiece(family)
    pieces = spm_pieces(proto)
    j = spm_json(family, pieces)
    d = os.path.join(OUT, family)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as out:
        json.dump(j, out, ensure_ascii=False, separators=(",", ":"))
    f = gguf_fields_spm(family, pieces)
    arch = {"llama-spm": "llama", "phi-3": "phi3", "gemma": "gemma3"}[family]
    gguf_path = os.path.join(d, "vocab.gguf")
    write_gguf(gguf_path, arch, f)
    specials = ["<s>", "</s>"] if family != "gemma" else ["<s>", "<end_of_turn>"]
    if family == "phi-3":
        specials += ["<|user|>", "<|end|>"]
    text_list = texts(specials)
    raw = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    expected = {"family": family, "json": cases_tokenizers(raw, text_list)}
    expected["gguf"] = cases_tokenizers(tokenizer_from_gguf_fields(family, f), text_list)
    if family == "gemma":
        from transformers import AutoTokenizer
        with tempfile.TemporaryDirectory() as tmp:  # the GGUF alone, not the folder's json
            with open(gguf_path, "rb") as src, open(os.path.join(tmp, "v.gguf"), "wb") as dst:
                dst.write(src.read())
            hf = AutoTokenizer.from_pretrained(tmp, gguf_file="v.gguf")
            expected["transformers_gguf_loader_differs_on"] = [
                c["text"] for c in expected["gguf"]
                if hf.encode(c["text"], add_special_tokens=False) != c["ids"]]
    expected["transformers_class"], expected["transformers"] = transformers_cases(
        family, d, text_list)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    plain = [t for t in text_list if not any(s in t for s in specials)]
    for key in ("json", "gguf"):
        agree = sum(sp.encode(t) == c["ids"] for t, c in zip(text_list, expected[key])
                    if t in plain)
        expected[f"sentencepiece_agrees_{key}"] = f"{agree} of {len(plain)} texts without specials"
        print(f"  {family}/{key}: SentencePieceProcessor agrees on {agree} of {len(plain)}")
    return d, expected


def main():
    only = sys.argv[1:]
    for family in list(BYTE_LEVEL) + list(SPM):
        if only and family not in only:
            continue
        d, expected = (make_spm if family in SPM else make_byte_level)(family)
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected, f, ensure_ascii=False, indent=0)
        sizes = {n: os.path.getsize(os.path.join(d, n)) for n in sorted(os.listdir(d))}
        same = sum(a["ids"] == b["ids"] for a, b in zip(expected["json"], expected["gguf"]))
        print(f"{family}: {len(expected['json'])} texts, json == gguf on {same}; {sizes}")


if __name__ == "__main__":
    main()
