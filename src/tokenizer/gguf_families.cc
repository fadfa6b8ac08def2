#include "tokenizer/gguf_families.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>

namespace jisu {
namespace {

using Json = nlohmann::json;

Json ByteLevel(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", use_regex}};
}
Json Split(std::string_view regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", std::string(regex)}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}
Json Punctuation() { return {{"type", "Punctuation"}, {"behavior", "Contiguous"}}; }
Json Digits(bool individual) { return {{"type", "Digits"}, {"individual_digits", individual}}; }
Json Sequence(std::initializer_list<Json> steps) {
  Json list = Json::array();
  for (const Json& s : steps) list.push_back(s);
  return {{"type", "Sequence"}, {"pretokenizers", std::move(list)}};
}
const Json kNfc = {{"type", "NFC"}};

constexpr std::string_view kTekkenPattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kGpt4oPattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen35Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// DeepSeek LLM's letter class, code point for code point as its tokenizer.json has it: cased
// letters, written out rather than \p{L} (llama.cpp's copy of it was NFC-normalized, which
// turned U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126 and U+212A into other letters).
constexpr std::string_view kDeepSeekLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}"
    "\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+";
constexpr std::string_view kDeepSeekPunct =
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+";
constexpr std::string_view kDeepSeekCjk =
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
constexpr std::string_view kDeepSeekV3Cjk =
    "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+";
constexpr std::string_view kDeepSeekV3Words =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct Family {
  Json normalizer;  // null: none
  Json pre_tokenizer;
  bool ignore_merges = false;
};

bool In(std::string_view pre, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), pre) != names.end();
}

// Names as llama.cpp's converter writes them. Each entry is the family's tokenizer.json; where
// transformers' GGUF loader differs (it knows only the split regexes, and drops the rest),
// the tokenizer.json wins, because that is what the model was trained with and what
// transformers gives on the model's own folder.
Family Lookup(std::string_view pre) {
  if (In(pre, {"llama3", "llama-v3", "llama-bpe", "glm4", "glm5"})) {
    // Llama 3's and GLM-4's tokenizer.json set ignore_merges (so does llama.cpp).
    return {nullptr, Sequence({Split(kLlama3Pattern), ByteLevel(false)}), true};
  }
  if (In(pre, {"falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", "dbrx",
               "smaug-bpe", "chatglm-bpe"})) {
    return {nullptr, Sequence({Split(kLlama3Pattern), ByteLevel(false)})};
  }
  // Qwen's tokenizer.json normalizes to NFC; transformers' GGUF loader and llama.cpp do not.
  if (In(pre, {"qwen2", "deepseek-r1-qwen"})) {
    return {kNfc, Sequence({Split(kQwen2Pattern), ByteLevel(false)})};
  }
  if (In(pre, {"kormo", "f2llmv2", "megrez"})) {
    return {nullptr, Sequence({Split(kQwen2Pattern), ByteLevel(false)})};
  }
  // Qwen3.5's tokenizer.json has no NFC (transformers' Qwen3_5Tokenizer class adds one; the
  // real file's ids in llama.cpp's tests show decomposed accents kept apart).
  if (pre == "qwen35") return {nullptr, Sequence({Split(kQwen35Pattern), ByteLevel(false)})};
  if (pre == "tekken") {
    // Mistral's tekken vocabulary comes from tiktoken, whose tokens need not be reachable by
    // merges; llama.cpp sets ignore_merges for it as well.
    return {nullptr, Sequence({Split(kTekkenPattern), ByteLevel(false)}), true};
  }
  if (In(pre, {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) {
    return {nullptr, Sequence({Split(kGpt4oPattern), ByteLevel(false)})};
  }
  if (pre == "falcon") {
    // Digits and the three-digit split run after ByteLevel, on the byte alphabet, where the
    // letters of bytes B2, B3, B9 and BC-BE (², ³, ¹, ¼, ½, ¾) count as numeric too.
    return {nullptr,
            Sequence({Punctuation(), ByteLevel(true), Digits(false), Split("[0-9][0-9][0-9]")})};
  }
  // GPT-NeoX-20B's (MPT's) and ModernBERT's tokenizer.json normalize to NFC.
  if (In(pre, {"mpt", "modern-bert"})) return {kNfc, ByteLevel(true)};
  if (In(pre, {"starcoder", "refact", "smollm", "codeshell", "exaone", "minerva-7b"})) {
    return {nullptr, Sequence({Digits(true), ByteLevel(true)})};
  }
  if (pre == "command-r") return {kNfc, Sequence({Digits(true), ByteLevel(true)})};
  if (pre == "deepseek-llm") {
    return {nullptr,
            Sequence({Split("[\\r\\n]"), Split(kDeepSeekLetters), Split(kDeepSeekPunct),
                      Split("\\s+$"), Split(kDeepSeekCjk), Digits(true), ByteLevel(false)})};
  }
  if (pre == "deepseek-coder") {
    return {nullptr, Sequence({Split("[\\r\\n]"), Split("\\s?\\p{L}+"), Split("\\s?\\p{P}+"),
                               Split(kDeepSeekCjk), Digits(true), ByteLevel(false)})};
  }
  // JoyAI-LLM is a later conversion of DeepSeek-V3's tokenizer, as are Hunyuan dense and
  // Hy-V4's (llama.cpp gives them one pre-tokenizer).
  if (In(pre, {"deepseek-v3", "joyai-llm", "hunyuan-dense", "hy_v4"})) {
    return {nullptr, Sequence({Split("\\p{N}{1,3}"), Split(kDeepSeekV3Cjk), Split(kDeepSeekV3Words),
                               ByteLevel(false)})};
  }
  // gpt-2, phi-2, olmo, jais, "default", none, and every name not known here.
  return {nullptr, ByteLevel(true)};
}

}  // namespace

Result<GgufPipeline> ByteLevelPipelineFor(std::string_view pre) {
  const Family f = Lookup(pre);
  GgufPipeline p;
  JISU_ASSIGN_OR_RETURN(p.normalizer, Normalizer::FromJson(f.normalizer));
  JISU_ASSIGN_OR_RETURN(p.pre_tokenizer, PreTokenizer::FromJson(f.pre_tokenizer));
  p.ignore_merges = f.ignore_merges;
  return p;
}

}  // namespace jisu
