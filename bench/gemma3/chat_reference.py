#!/usr/bin/env python3
"""Greedy chat replies of Gemma 3 270M (the real GGUF) under transformers: the reference that
tests/data/golden/gemma3-270m-chat.json holds for jisu's chat path (`jisu generate --chat
--chat-template FILE --temperature 0`, /v1/chat/completions).

Each conversation is rendered and tokenized by transformers' apply_chat_template with the
template FILE (the GGUF has none) and the tokenizer transformers builds from the GGUF; the
model is the GGUF dequantized to float32, run eagerly. Writes, per conversation, its messages,
prompt_ids, the greedy output_ids (without the end-of-turn id, if one ended it), the id it
stopped on (null: it ran to MAX_TOKENS) and the text.

  python bench/gemma3/chat_reference.py GGUF TEMPLATE CONVERSATIONS.json MAX_TOKENS OUT.json
CONVERSATIONS.json: {"name": [messages...], ...}. Needs torch, transformers, gguf, accelerate
(not the project's .venv).
"""
import hashlib
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer


def main():
  gguf, template_path, conversations_path, max_tokens, out_path = sys.argv[1:6]
  d, f = os.path.split(os.path.abspath(gguf))
  tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
  model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32,
                                               attn_implementation="eager")
  model.eval()
  with open(template_path, encoding="utf-8") as fh:
    template = fh.read()
  with open(conversations_path, encoding="utf-8") as fh:
    conversations = json.load(fh)
  # Gemma's generation_config ends a turn on <eos> (1) or <end_of_turn> (106); the GGUF names
  # them as eos and eot.
  stop = [tok.convert_tokens_to_ids("<eos>"), tok.convert_tokens_to_ids("<end_of_turn>")]
  cases = []
  for name, messages in conversations.items():
    prompt = tok.apply_chat_template(messages, chat_template=template, add_generation_prompt=True,
                                     tokenize=True, return_dict=True)["input_ids"]
    with torch.no_grad():
      out = model.generate(torch.tensor([prompt]), max_new_tokens=int(max_tokens),
                           do_sample=False, eos_token_id=stop, pad_token_id=0)
    new = out[0][len(prompt):].tolist()
    ended = bool(new) and new[-1] in stop
    ids = new[:-1] if ended else new
    cases.append({"name": name, "messages": messages, "prompt_ids": prompt, "output_ids": ids,
                  "stopped_on": new[-1] if ended else None, "text": tok.decode(ids)})
    print(name, json.dumps(cases[-1]["text"], ensure_ascii=False), file=sys.stderr)
  with open(out_path, "w", encoding="utf-8") as fh:
    json.dump({"model": f, "template_sha256": hashlib.sha256(template.encode()).hexdigest(),
               "max_tokens": int(max_tokens), "reference": "transformers %s, torch %s, float32" %
               (transformers.__version__, torch.__version__), "cases": cases}, fh,
              ensure_ascii=False, indent=1)
    fh.write("\n")


if __name__ == "__main__":
  main()
